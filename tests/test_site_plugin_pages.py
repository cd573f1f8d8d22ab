"""A page family from a plugin (an ``evalsite.pages`` entry point of a package on the path) is part
of what a build's pages depend on: when the plugin's code changes, the next build renders its pages
again — neither the nothing-new check nor the kept pages hold the old ones — and when nothing
changed, the build is still a nothing-new one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from example_support import REPO

from evalsite.site.unchanged import RACY_SECONDS

PLUGIN = '''
from evalsite.site.pages import PageJob, register_page


@register_page("plugged")
def plugged_jobs(inputs, settings):
    def render(kit):
        return {"plugged.html": b"<!doctype html><title>plugged</title><p>VERSION</p>"}

    return [PageJob("plugged", (), render)]
'''


def install_plugin(folder: Path, version: str) -> Path:
    """The plugin as an installed package: its module and a dist-info naming its entry point."""
    info = folder / "evalsite_plugged-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalsite-plugged\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[evalsite.pages]\nplugged = plugged_page:plugged_jobs\n")
    module = folder / "plugged_page.py"
    module.write_text(PLUGIN.replace("VERSION", version))
    return module


def build(project: Path, plugin: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(REPO)]), "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-m", "evalsite", "build"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def test_a_changed_page_plugin_renders_its_pages_again(tmp_path):
    plugin, project = tmp_path / "plugin", tmp_path / "project"
    project.mkdir()
    (project / "evalsite.toml").write_text("")
    module = install_plugin(plugin, "version one")
    time.sleep(RACY_SECONDS + 0.2)  # so that the first build records its inputs (see site/unchanged.py)
    build(project, plugin)
    assert "version one" in (project / "site/plugged.html").read_text()
    assert "0 jobs rendered" in build(project, plugin)  # nothing changed: nothing new

    module.write_text(PLUGIN.replace("VERSION", "version two"))
    build(project, plugin)
    assert "version two" in (project / "site/plugged.html").read_text()
