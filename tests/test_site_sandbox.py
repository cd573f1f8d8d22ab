"""The site's templates render in Jinja's sandbox exactly when the project has templates of its own
(docs/reference/site.md#theme-and-overrides): a project template, a macros.html override included,
still cannot reach Python internals, and a project without any gets the same bytes from the plain
environment as from the sandbox."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from sitekit import case, tree_bytes, write_hostile_project, write_run

from evalsite.errors import SiteError
from evalsite.project import find_project
from evalsite.site import build_site, theme
from evalsite.site.output import BUILD_RECORD


def two_runs_of_an_arm(root: Path) -> Path:
    """Arms a (twice: a compare page) and b on six items, some failing, one errored."""
    for run_id, arm, failing in (
        ("20260101T000001Z-a-0001", "a", {"i1"}),
        ("20260101T000002Z-b-0001", "b", {"i2", "i3"}),
        ("20260101T000003Z-a-0002", "a", {"i3", "i4"}),
    ):
        cases = [
            case(
                f"i{n}",
                passed=f"i{n}" not in failing,
                score=0.0 if f"i{n}" in failing else 1.0,
                output=f"<b>answer {n}</b>",
                error="boom" if n == 5 and arm == "b" else None,
                latency_ms=10.0 + n,
            )
            for n in range(6)
        ]
        write_run(root / "runs", run_id, cases, arm=arm)
    return root


@pytest.mark.parametrize("make", [two_runs_of_an_arm, write_hostile_project])
def test_without_project_templates_the_plain_environment_renders_the_sandbox_s_bytes(tmp_path, make):
    root = make(tmp_path / "p")
    assert type(theme.environment(root / "templates")) is theme.ThemeEnvironment
    plain = build_site(find_project(root), tmp_path / "plain").out_dir
    (root / "templates").mkdir()
    (root / "templates" / ".keep").write_text(
        ""
    )  # a hidden file: no template of the theme changes, but it is the project's
    assert type(theme.environment(root / "templates")) is theme.SandboxedThemeEnvironment
    sandboxed = build_site(find_project(root), tmp_path / "sandboxed", full=True).out_dir
    plain_files, sandboxed_files = tree_bytes(plain), tree_bytes(sandboxed)
    del plain_files[BUILD_RECORD], sandboxed_files[BUILD_RECORD]
    assert any(name.startswith("compare/") for name in plain_files) or make is write_hostile_project
    assert plain_files == sandboxed_files


@pytest.mark.parametrize("entry", ["macros.html", ".hidden", "empty/"])
def test_anything_in_templates_turns_the_sandbox_on(tmp_path, entry):
    root = tmp_path / "p"
    (root / "templates").mkdir(parents=True)
    if entry.endswith("/"):
        (root / "templates" / entry).mkdir()
    else:
        (root / "templates" / entry).write_text("")
    assert isinstance(theme.environment(root / "templates"), theme.SandboxedThemeEnvironment)


def test_without_project_templates_no_project_file_can_be_loaded(tmp_path):
    env = theme.environment(tmp_path / "templates")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "base.html").write_text("{{ ''.__class__ }}")  # planted after the environment was made
    assert "<!doctype html>" in env.get_template("base.html").render(**_base_context()).lower()


def test_a_macros_override_renders_sandboxed(tmp_path):
    """The table cells are the override's macros, and they run in the sandbox."""
    root = two_runs_of_an_arm(tmp_path / "p")
    builtin = (theme.builtin_theme_dir("templates") / "macros.html").read_text()
    (root / "templates").mkdir()
    (root / "templates" / "macros.html").write_text(
        builtin.replace(
            "{% macro cell(column, value, root) %}", "{% macro cell(column, value, root) %}{{ ''.__class__ }}"
        )
    )
    with pytest.raises(SiteError, match=r"template error: templates/macros.html, line \d+: .*__class__.* unsafe"):
        build_site(find_project(root))


def test_compiled_templates_are_kept_apart_for_the_two_environments(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    compiled: list[str] = []
    original = theme.ThemeEnvironment.compile

    def counting(self, source, name=None, filename=None, *args, **kwargs):
        compiled.append(f"{type(self).__name__}:{name}")
        return original(self, source, name, filename, *args, **kwargs)

    monkeypatch.setattr(theme.ThemeEnvironment, "compile", counting)
    project = tmp_path / "project"
    theme.environment(project / "templates").get_template("macros.html")
    (project / "templates").mkdir(parents=True)
    (project / "templates" / "note.html").write_text("{{ x }}")
    theme.environment(project / "templates").get_template("macros.html")
    theme.environment(project / "templates").get_template("macros.html")  # kept since the one before
    assert compiled == ["ThemeEnvironment:macros.html", "SandboxedThemeEnvironment:macros.html"]
    assert len({path.name.split("-")[1] for path in tmp_path.glob("_jinja2-cache-*/evalsite-*.cache")}) == 2


def _base_context() -> dict[str, object]:
    return {
        "title": "t",
        "root": "",
        "stamp": "",
        "version": "v",
        "site_title": "s",
        "live_reload": False,
        "redacted": False,
        "asset": lambda name: name,
    }
