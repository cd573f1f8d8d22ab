"""Check a ``module:function`` reference without importing (so without running) the module.

``evalsite validate`` must be safe on a project nobody has reviewed yet (a pull request): it finds
the module's file the way ``import`` would — the project root first, then ``sys.path`` — without
executing it or any parent package, parses it with :mod:`ast`, and checks that the function is
defined at its top level and what parameters it takes. ``evalsite run`` imports for real.
"""

from __future__ import annotations

import ast
import difflib
import sys
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path

from evalsite.errors import TargetError


class UnreadableSourceError(TargetError):
    """The module's file exists but does not parse: importing it reports the same, with its line."""


@dataclass(frozen=True)
class FunctionShape:
    """What the source says of a function: its parameter names and whether it takes ``**kwargs``.
    ``None`` fields mean the source could not tell (a name imported or assigned, not a ``def``)."""

    parameters: tuple[str, ...] | None = None
    takes_all: bool | None = None


def check_reference(spec: str, project_root: Path, what: str) -> FunctionShape:
    """The shape of the function ``spec`` names, or :class:`TargetError` naming what is missing."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise TargetError(f"{what} {spec!r}: expected 'module:function'")
    if module_name.split(".")[0] in sys.builtin_module_names:
        return FunctionShape()
    origin = _module_file(module_name, [str(project_root), *sys.path])
    if origin is None:
        raise TargetError(f"{what} {spec!r}: cannot find module {module_name!r} under {project_root} or on sys.path")
    if origin.suffix != ".py":
        return FunctionShape()  # a compiled or namespace module: only importing would tell
    try:
        tree = ast.parse(origin.read_bytes(), filename=str(origin))
    except (OSError, SyntaxError, ValueError) as exc:
        raise UnreadableSourceError(f"{what} {spec!r}: cannot read {origin}: {exc}") from None
    return _shape(tree, function_name, spec, what)


def _module_file(module_name: str, search: list[str]) -> Path | None:
    """The file ``import module_name`` would load, found without executing any package."""
    path: list[str] | None = search
    origin = None
    for part in module_name.split("."):
        spec = PathFinder.find_spec(part, path)
        if spec is None:
            return None
        origin = spec.origin
        path = list(spec.submodule_search_locations or [])
    if origin is None or origin in ("namespace", "built-in", "frozen"):
        return Path(path[0]) if path else None
    return Path(origin)


def _shape(tree: ast.Module, name: str, spec: str, what: str) -> FunctionShape:
    found = FunctionShape() if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                                   for n in tree.body) else None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            args = node.args
            names = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
            found = FunctionShape(names, args.kwarg is not None)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _binds(node, name):
            found = FunctionShape()
    if found is None:
        module = spec.partition(":")[0]
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        close = difflib.get_close_matches(name, defined, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise TargetError(f"{what} {spec!r}: module {module!r} has no function {name!r}{hint}")
    return found


def _binds(node: ast.stmt, name: str) -> bool:
    """A top-level statement other than a plain ``def`` that may bind ``name`` (an import, an
    assignment, a class, or anything inside an ``if``/``try``/``with``): the source cannot tell
    what it is, so it is taken as found."""
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner.name == name:
            return True
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store) and inner.id == name:
            return True
        if isinstance(inner, ast.alias) and (inner.asname or inner.name.split(".")[0]) == name:
            return True
    return False
