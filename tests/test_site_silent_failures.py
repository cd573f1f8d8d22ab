"""Nothing fails silently on the way to a published site: ``build`` names an unreadable manifest on
stderr (``--strict`` exits 1), no page holds the project's absolute path, and ``serve`` stops cleanly
on Ctrl-C at any moment, leaving no temporary folder behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsite.site import build_site

BROKEN = "name: arithmetic\ndataset: data/arithmetic.jsonl\narms: [{id: careful, target: 'python:arms.arithmetic:careful'}]\n"


@pytest.fixture
def broken_manifest(example_with_runs: Path) -> Path:
    (example_with_runs / "experiments" / "arithmetic.yaml").write_text(BROKEN)
    return example_with_runs


def test_build_warns_of_an_unreadable_manifest_and_strict_fails(cli, broken_manifest):
    result = cli("build")
    assert result.exit_code == 0, result.output
    assert "warning: experiments/arithmetic.yaml: dataset: must be a mapping" in result.stderr
    strict = cli("build", "--strict")
    assert strict.exit_code == 1
    assert "warning: experiments/arithmetic.yaml" in strict.stderr and "Error: --strict: 1 warning" in strict.stderr


def test_no_page_holds_the_projects_absolute_path(broken_manifest):
    from evalsite.project import find_project

    build_site(find_project(broken_manifest))
    roots = {str(broken_manifest), str(broken_manifest.resolve())}
    leaks = [path.relative_to(broken_manifest).as_posix() for path in (broken_manifest / "site").rglob("*")
             if path.is_file() and any(root.encode() in path.read_bytes() for root in roots)]
    assert leaks == []
    page = (broken_manifest / "site" / "experiments" / "arithmetic.html").read_text()
    assert "experiments/arithmetic.yaml: dataset: must be a mapping" in page  # the reason is still on the page


def serve_process(project: Path, tmp: Path) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"}
    return subprocess.Popen([sys.executable, "-m", "evalsite", "serve", "--port", "0"], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("moment", ["building", "serving", "rebuilding"])
def test_serve_stops_cleanly_on_ctrl_c(example_with_runs, tmp_path, moment):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    process = serve_process(example_with_runs, tmp)
    try:
        wait_for(lambda: any(tmp.glob("evalsite-serve-*")))  # serve() has started: the first build runs
        if moment != "building":
            line = process.stdout.readline()
            assert line.startswith("serving http://127.0.0.1:"), line
        if moment == "rebuilding":
            (example_with_runs / "experiments" / "arithmetic.yaml").write_text(BROKEN)
            time.sleep(0.5)  # past the debounce: the rebuild is under way
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode in (0, 130), err
    assert "Aborted!" not in err and "Traceback" not in err, err
    assert list(tmp.glob("evalsite-serve-*")) == []


def test_a_ctrl_c_as_the_temporary_folder_is_made_leaves_no_folder(example_with_runs, tmp_path, monkeypatch):
    """The interrupt lands after mkdtemp has made the folder but before its name is returned."""
    import tempfile

    from evalsite.project import find_project
    from evalsite.site.serve import serve

    real_mkdtemp = tempfile.mkdtemp

    def interrupted_mkdtemp(**kwargs):
        real_mkdtemp(**kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempfile, "mkdtemp", interrupted_mkdtemp)
    with pytest.raises(KeyboardInterrupt):
        serve(find_project(example_with_runs), port=0, report=lambda message: None)
    assert list(tmp_path.glob("evalsite-serve-*")) == []
