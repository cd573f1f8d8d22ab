"""The test suite's own conventions: shared fixtures live in conftest.py, one name per concept.

A fixture is defined once in tests/ (conftest.py, or the one test file that uses it); helper
modules hold no fixtures, and nothing imports a fixture, so ruff sees no redefinitions.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def fixtures_in(path: Path) -> list[str]:
    """The names of the module-level functions ``path`` decorates with ``pytest.fixture``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)]


def python_files() -> list[Path]:
    return sorted(TESTS.glob("*.py"))


def test_every_fixture_name_is_defined_once():
    defined = Counter(name for path in python_files() for name in fixtures_in(path))
    assert [name for name, count in defined.items() if count > 1] == []
    assert "project" not in defined  # each project fixture is named for what it holds


def test_fixtures_live_in_conftest_or_a_test_file_never_in_a_helper_module():
    helpers = [p for p in python_files() if p.name != "conftest.py" and not p.name.startswith("test_")]
    assert {p.name: fixtures_in(p) for p in helpers if fixtures_in(p)} == {}


def test_no_test_file_imports_a_fixture_or_another_test_file():
    shared = set(fixtures_in(TESTS / "conftest.py"))
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module.removeprefix("tests.")
                assert module != "conftest" and not module.startswith("test_"), f"{path.name} imports {node.module}"
                assert not shared & {alias.name for alias in node.names}, f"{path.name} imports a fixture"
