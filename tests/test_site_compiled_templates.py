"""Compiled templates kept between builds: in a private per-user temp folder, rebuilt when a
template's source changes, and never needed for a build to work."""

import os
import tempfile

import pytest

from evalsite.site import theme


@pytest.fixture
def temp_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _compiles(monkeypatch) -> list[str]:
    compiled: list[str] = []
    original = theme.ThemeEnvironment.compile

    def counting(self, source, name=None, filename=None, *args, **kwargs):
        compiled.append(name)
        return original(self, source, name, filename, *args, **kwargs)

    monkeypatch.setattr(theme.ThemeEnvironment, "compile", counting)
    return compiled


def test_a_second_build_reads_the_compiled_template_and_renders_the_same(temp_folder, tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "templates").mkdir(parents=True)
    (project / "templates" / "note.html").write_text("{% for x in items %}<b>{{ x }}</b>{% endfor %}\n")
    compiled = _compiles(monkeypatch)
    first = theme.environment(project / "templates").get_template("note.html").render(items=["<a>", 2])
    assert compiled == ["note.html"]
    second = theme.environment(project / "templates").get_template("note.html").render(items=["<a>", 2])
    assert compiled == ["note.html"]  # read from the kept code, not compiled again
    assert first == second == "<b>&lt;a&gt;</b><b>2</b>"  # escaped; trim_blocks ate the newline
    kept = list(temp_folder.glob("_jinja2-cache-*/evalsite-*.cache"))
    assert len(kept) == 1 and (kept[0].parent.stat().st_mode & 0o777) == 0o700


def test_a_changed_template_is_compiled_again(temp_folder, tmp_path, monkeypatch):
    templates = tmp_path / "project" / "templates"
    templates.mkdir(parents=True)
    (templates / "note.html").write_text("one {{ x }}")
    compiled = _compiles(monkeypatch)
    assert theme.environment(templates).get_template("note.html").render(x=1) == "one 1"
    (templates / "note.html").write_text("two {{ x }}")
    assert theme.environment(templates).get_template("note.html").render(x=1) == "two 1"
    assert compiled == ["note.html", "note.html"]


def test_without_a_safe_folder_templates_are_compiled_each_time(temp_folder, tmp_path, monkeypatch):


    (temp_folder / f"_jinja2-cache-{os.getuid()}").write_text("a file where the folder would be")
    assert theme.compiled_templates(theme.SandboxedThemeEnvironment) is None
    templates = tmp_path / "project" / "templates"
    templates.mkdir(parents=True)
    (templates / "note.html").write_text("{{ x }}")
    assert theme.environment(templates).get_template("note.html").render(x=3) == "3"
