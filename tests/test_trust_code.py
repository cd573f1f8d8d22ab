"""Project code runs only where docs/security.md says: a project template cannot run OS commands
during `build`, and `validate` checks python references without importing them (issue 15, defect 7)."""

from __future__ import annotations

import sys
import textwrap

import pytest
from compare_support import edit_row, run_arm
from sitekit import case, write_run

from evalsite.errors import SiteError
from evalsite.project import find_project
from evalsite.site import build_site

EXPLOITS = [
    "{{ cycler.__init__.__globals__.os.popen('touch MARKER').read() }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ joiner.__init__.__globals__['os'].system('touch MARKER') }}",
]


@pytest.mark.parametrize("exploit", EXPLOITS)
def test_a_project_template_cannot_reach_python_internals(tmp_path, exploit):
    root = tmp_path / "p"
    (root / "templates").mkdir(parents=True)
    write_run(root / "runs", "20260101T000000Z-a-0000", [case("i1")])
    marker = root / "MARKER"
    (root / "templates/index.html").write_text(exploit.replace("MARKER", str(marker)))
    with pytest.raises(SiteError, match="template error: .*unsafe"):
        build_site(find_project(root))
    assert not marker.exists()


CHECKS = '''
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("top-level code ran")

def score(output, expected):
    return output == expected

def odd(output, weather):
    return True
'''
ARM = '''
from pathlib import Path
Path(__file__).with_name("ARM_IMPORTED").write_text("top-level code ran")

def answer(input):
    return input
'''
MANIFEST = '''
name: p
rows:
  - {{input: a, expected: a}}
arms:
  - id: a
    target: python:{arm}
evaluators:
  - type: python:{evaluator}
  - type: llm_judge
    judge: python:{judge}
'''


@pytest.fixture
def code_project(tmp_path, monkeypatch):
    """A project whose evaluator, judge and arm modules would leave a mark if imported, as the working folder."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "sut_checks.py").write_text(textwrap.dedent(CHECKS))
    (tmp_path / "sut_arm.py").write_text(textwrap.dedent(ARM))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("from pathlib import Path\nPath(__file__).parent.with_name('PKG_IMPORTED').touch()\n")
    (tmp_path / "pkg/judges.py").write_text("def grade(input):\n    return '{\"score\": 5, \"reason\": \"ok\"}'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in ("sut_checks", "sut_arm", "pkg", "pkg.judges"):
        sys.modules.pop(name, None)


def write(project, arm="sut_arm:answer", evaluator="sut_checks:score", judge="pkg.judges:grade"):
    (project / "experiments/p.yaml").write_text(MANIFEST.format(arm=arm, evaluator=evaluator, judge=judge))


def test_validate_imports_no_project_module(code_project, cli):
    write(code_project)
    result = cli("validate")
    assert result.exit_code == 0, result.output
    assert not any((code_project / name).exists() for name in ("IMPORTED", "ARM_IMPORTED", "PKG_IMPORTED"))
    assert "sut_checks" not in sys.modules and "pkg" not in sys.modules


@pytest.mark.parametrize("where, changes, message", [
    ("evaluators[0]", {"evaluator": "sut_checks:missing"}, "module 'sut_checks' has no function 'missing'"),
    ("evaluators[0]", {"evaluator": "nowhere:f"}, "cannot find module 'nowhere'"),
    ("evaluators[0]", {"evaluator": "sut_checks:odd"}, "takes 'weather', which evalsite cannot supply"),
    ("evaluators[1]", {"judge": "pkg.judges:nope"}, "module 'pkg.judges' has no function 'nope'"),
    ("arm 'a'", {"arm": "sut_arm:gone"}, "module 'sut_arm' has no function 'gone'"),
])
def test_validate_still_names_broken_references_from_the_source(code_project, cli, where, changes, message):
    write(code_project, **changes)
    result = cli("validate")
    assert result.exit_code == 1
    assert where in result.output and message in result.output, result.output
    assert not (code_project / "IMPORTED").exists() and not (code_project / "ARM_IMPORTED").exists()


def test_a_module_with_a_syntax_error_is_named_without_running_it(code_project, cli):
    (code_project / "sut_checks.py").write_text("def score(output:\n")
    write(code_project)
    result = cli("validate")
    assert result.exit_code == 1 and "cannot read" in result.output and "sut_checks.py" in result.output


def test_run_still_imports_and_runs_the_code(code_project, cli):
    write(code_project)
    result = cli("run", "experiments/p.yaml")
    assert all((code_project / name).exists() for name in ("IMPORTED", "ARM_IMPORTED", "PKG_IMPORTED")), result.output


SCORER = '''
from pathlib import Path

def same(output, expected):
    with open(Path(__file__).with_name("SCORED"), "a") as log:
        log.write("x")
    return output == expected
'''


def test_a_site_build_never_rescores_with_project_code(golden_project, cli):
    project = golden_project
    (project / "golden_checks.py").write_text(textwrap.dedent(SCORER))
    evaluators = [{"type": "python:golden_checks:same"}]
    baseline = run_arm(cli, project, evaluators=evaluators)
    edit_row(project, "g05", expected="A5 (corrected)")
    current = run_arm(cli, project, evaluators=evaluators)
    (project / "SCORED").unlink()
    (project / "evalsite.toml").write_text(f'[site]\ncompare = [["{current}", "{baseline}"]]\n')
    build_site(find_project(project))
    assert not (project / "SCORED").exists()
    page = (project / f"site/compare/{current}--{baseline}.html").read_text()
    assert "runs project code or calls a model; a site build never does" in page
    sys.modules.pop("golden_checks", None)
    sys.modules.pop("golden_arm", None)
