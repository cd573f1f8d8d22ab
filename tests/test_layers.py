"""The package's layers import only downwards (docs/architecture.md).

Each layer's modules are imported one by one in a fresh interpreter; a forbidden module that
appears in ``sys.modules`` is blamed on the import that brought it in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "evalsite"

EXECUTION = ("evalsite.execute.runner", "evalsite.calls.targets", "httpx")
FORBIDDEN = {
    "analysis": EXECUTION,
    "site": EXECUTION,
    "stats": (*EXECUTION, "duckdb", "jinja2", "click", "pyarrow", "evalsite.analysis", "evalsite.site"),
    "runlog": ("evalsite.experiment", "evalsite.scoring", "evalsite.execute", "evalsite.analysis", "evalsite.site",
               "evalsite.cli", "duckdb", "jinja2", "httpx"),
    # prompts are Jinja templates, so jinja2 is the experiment layer's own
    "experiment": ("evalsite.scoring", "evalsite.execute", "evalsite.analysis", "evalsite.site", "evalsite.cli",
                   "httpx", "duckdb"),
    "scoring": (*EXECUTION, "evalsite.analysis", "evalsite.site", "evalsite.cli", "duckdb"),
}

PROBE = """
import importlib, json, sys
modules, forbidden = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def loaded():
    return {name for name in sys.modules if any(name == f or name.startswith(f + ".") for f in forbidden)}
blamed = {}
for module in modules:
    before = loaded()
    importlib.import_module(module)
    for name in sorted(loaded() - before):
        blamed[name] = module
print(json.dumps(blamed))
"""


def modules_of(layer: str) -> list[str]:
    folder = PACKAGE / layer
    names = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_never_imports_what_sits_above_it(layer):
    modules = modules_of(layer)
    assert modules, f"no modules under evalsite/{layer}"
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules), json.dumps(FORBIDDEN[layer])],
        capture_output=True, text=True, check=True,
    )
    blamed = json.loads(probe.stdout)
    assert blamed == {}, f"evalsite/{layer} loads what it must not: {blamed}"


def test_the_probe_blames_the_module_that_imports_a_forbidden_one():
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["evalsite.execute.runner"]), json.dumps(["httpx"])],
        capture_output=True, text=True, check=True,
    )
    assert json.loads(probe.stdout)["httpx"] == "evalsite.execute.runner"
