"""The type checker sees what the packages export: each lazily loaded name (PEP 562 ``__getattr__``,
typed ``Any`` to mypy) is also imported under ``if TYPE_CHECKING:`` from the module that loads it."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest


def type_checking_imports(package: str) -> dict[str, str]:
    """Name -> module of every ``from ... import`` under the package's ``if TYPE_CHECKING:``."""
    tree = ast.parse(inspect.getsource(importlib.import_module(package)))
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module, ast.dump(statement)
                names.update({alias.name: statement.module for alias in statement.names})
    return names


@pytest.mark.parametrize("package", ["evalsite.stats", "evalsite.analysis"])
def test_every_lazy_export_is_imported_for_the_type_checker(package):
    module = importlib.import_module(package)
    assert type_checking_imports(package) == {name: f"{package}.{source}" for name, source in module._EXPORTS.items()}
    assert sorted(module.__all__) == sorted(module._EXPORTS)
