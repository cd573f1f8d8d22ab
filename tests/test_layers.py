"""What importing a layer loads at run time: its import cost, which the static contract cannot see.

The layering itself (who may import whom, lazy and ``TYPE_CHECKING`` imports included) is checked
statically by ``lint-imports`` (``[tool.importlinter]`` in pyproject.toml; tests/test_import_contract.py).
A lazy import is allowed there; this probe makes sure the lazy ones stay lazy: each layer's modules
are imported one by one in a fresh interpreter, and a heavy module that appears in ``sys.modules``
(a database, an HTTP client, the model clients a judge loads only when it is built) is blamed on
the import that brought it in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "evalsite"

CLIENTS = ("evalsite.calls.targets", "httpx")  # loaded when a judge is built, never by an import
NOT_LOADED = {
    "analysis": CLIENTS,
    "site": CLIENTS,
    "stats": (*CLIENTS, "duckdb", "jinja2", "click", "pyarrow"),
    "runlog": (*CLIENTS, "duckdb", "jinja2"),
    "experiment": (*CLIENTS, "duckdb"),
    "scoring": (*CLIENTS, "duckdb"),
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


@pytest.mark.parametrize("layer", sorted(NOT_LOADED))
def test_importing_a_layer_loads_no_heavy_module_it_does_not_need(layer):
    modules = modules_of(layer)
    assert modules, f"no modules under evalsite/{layer}"
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules), json.dumps(NOT_LOADED[layer])],
        capture_output=True, text=True, check=True,
    )
    blamed = json.loads(probe.stdout)
    assert blamed == {}, f"importing evalsite/{layer} loads: {blamed}"


def test_the_probe_blames_the_module_that_imports_a_heavy_one():
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["evalsite.execute.runner"]), json.dumps(["httpx"])],
        capture_output=True, text=True, check=True,
    )
    assert json.loads(probe.stdout)["httpx"] == "evalsite.execute.runner"


# What a whole command loads, in a fresh interpreter ----------------------------------------------

COMMAND_PROBE = """
import json, sys
from evalsite.cli import main
try:
    main(json.loads(sys.argv[1]), standalone_mode=False)
finally:
    print("LOADED " + json.dumps(sorted({name.split('.')[0] for name in sys.modules})))
"""


def loaded_by_command(args: list[str], cwd: Path) -> tuple[set[str], str]:
    """The top-level modules loaded by ``evalsite ARGS`` run in ``cwd``, and its output."""
    done = subprocess.run([sys.executable, "-c", COMMAND_PROBE, json.dumps(args)], cwd=cwd, capture_output=True,
                          text=True, check=True)
    output, _, loaded = done.stdout.rpartition("LOADED ")
    return set(json.loads(loaded)), output


def test_a_command_that_reads_runs_leaves_pandas_unloaded(example_with_runs):
    """pyarrow would import pandas (0.4 s) on its first conversion to numpy; evalsite/cli/lean.py."""
    pytest.importorskip("pandas")
    loaded, output = loaded_by_command(["leaderboard"], example_with_runs)
    assert "verdict:" in output
    assert "pyarrow" in loaded and "pandas" not in loaded


def test_pandas_still_works_after_pyarrow_was_told_it_is_absent():
    pytest.importorskip("pandas")
    code = (
        "import pyarrow as pa\nfrom evalsite.cli.lean import pyarrow_without_pandas\npyarrow_without_pandas()\n"
        "import sys\nassert 'pandas' not in sys.modules\npa.chunked_array([[1, 2]]).to_numpy()\nassert 'pandas' not in sys.modules\n"
        "import pandas\nframe = pa.table({'a': [1, None]}).to_pandas()\nassert frame['a'].isna().tolist() == [False, True]\n"
        "assert pa.Table.from_pandas(frame).num_rows == 2\nprint('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "ok"


def test_what_a_nothing_new_build_imports_loads_no_renderer():
    """`evalsite build` decides "nothing new" (evalsite/site/unchanged.py) before it imports the
    renderer; the modules it imports to get there must stay light (tests/test_site_unchanged.py
    runs the whole command)."""
    modules = ["evalsite.site", "evalsite.site.unchanged", "evalsite.site.report", "evalsite.cli.build"]
    renderer = ["jinja2", "duckdb", "numpy", "pyarrow", "scipy", "yaml", "markdown_it", "evalsite.site.build",
                "evalsite.site.pages", "evalsite.site.inputs", "evalsite.analysis.db", "evalsite.analysis.case_scan",
                "evalsite.analysis.leaderboard"]
    probe = subprocess.run([sys.executable, "-c", PROBE, json.dumps(modules), json.dumps(renderer)],
                           capture_output=True, text=True, check=True)
    assert json.loads(probe.stdout) == {}
