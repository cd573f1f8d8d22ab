"""The example plugin package (tests/plugin_example/), installed for real with pip, adds a target, an
evaluator and an importer through entry points; a manifest and ``evalsite import`` use them; a taken
name is refused unless ``replace=True``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from example_support import REPO
from plugin_support import MANIFEST, PLUGIN, ROWS, TSV

from evalsite.calls.targets import register_target
from evalsite.calls.targets.base import TARGETS
from evalsite.errors import TargetError
from evalsite.registry import BUILT_IN, Registry
from evalsite.runlog.store import read_run, run_directories


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin installed by pip (its wheel built by hatchling) into a folder of its own."""
    site = tmp_path_factory.mktemp("plugin-site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(site), str(PLUGIN)], check=True, capture_output=True, text=True)
    return site


def evalsite(project: Path, site: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m evalsite ARGS`` in ``project``, with the plugin's folder on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "evalsite", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)


def project(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "experiments").mkdir()
    (root / "data/words.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    (root / "experiments/loud.yaml").write_text(MANIFEST)
    return root


def test_a_manifest_runs_the_plugins_target_and_evaluator(plugin_site, tmp_path):
    root = project(tmp_path)
    result = evalsite(root, plugin_site, "run", "experiments/loud.yaml", "--allow-failures")
    assert result.returncode == 0, result.stderr
    runs = {run.header.arm_id: run for run in map(read_run, run_directories(root / "runs"))}
    loud = sorted((c["output"], c["scores"][0]["score"], c["passed"]) for c in runs["shouty"].cases)
    assert loud == [("BIG NEWS!!", 1.0, True), ("HELLO!!", 1.0, True)]
    quiet = sorted((c["output"], c["scores"][0]["score"]) for c in runs["quiet"].cases)
    assert quiet == [("BIG NEWS", 1.0), ("hello", 0.0)]
    (shouted,) = runs["shouty"].header.raw["evaluators"].values()
    assert shouted["type"] == "shouted"


def test_import_reads_the_plugins_format(plugin_site, tmp_path):
    root = project(tmp_path)
    (root / "scores.tsv").write_text(TSV)
    result = evalsite(root, plugin_site, "import", "tsv", "scores.tsv", "--json")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    assert (run["arm"], run["cases"], run["pass_rate"]) == ("model-a", 2, 0.5)


def test_without_the_plugin_its_names_are_unknown(tmp_path):
    root = project(tmp_path)
    (root / "scores.tsv").write_text(TSV)
    result = evalsite(root, tmp_path, "import", "tsv", "scores.tsv")
    assert result.returncode == 2
    assert "unknown import format 'tsv'; did you mean 'csv'? (known: csv, inspect, jsonl, lm-eval, promptfoo)" in result.stderr
    result = evalsite(root, tmp_path, "run", "experiments/loud.yaml")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("Error: experiments/loud.yaml: arms[0].target: unknown target kind 'shout' (known: ")


def rogue_plugin(folder: Path, kind: str) -> Path:
    """An installed distribution ``evalsite-rogue`` whose module registers the target ``kind``."""
    info = folder / "evalsite_rogue-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalsite-rogue\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[evalsite.targets]\n{kind} = evalsite_rogue\n")
    (folder / "evalsite_rogue.py").write_text(
        "from evalsite.calls.targets import register_target\n\n\n"
        f"@register_target({kind!r})\ndef make(rest, settings, root):\n    raise AssertionError('never built')\n")
    return folder


def test_a_plugin_taking_a_built_in_name_is_refused(tmp_path):
    rogue = rogue_plugin(tmp_path / "rogue", "openai")
    root = project(tmp_path / "project")
    result = evalsite(root, rogue, "run", "experiments/loud.yaml")
    assert result.returncode == 1
    assert result.stderr.strip() == ("Error: target plugin 'openai' (evalsite_rogue) failed to load: target 'openai' "
                                     "is already registered (built-in); pass replace=True to override")


def test_a_plugin_taking_another_plugins_name_is_refused_naming_it(plugin_site, tmp_path):
    rogue = rogue_plugin(tmp_path / "rogue", "shout")
    root = project(tmp_path / "project")
    result = evalsite(root, Path(f"{plugin_site}{os.pathsep}{rogue}"), "run", "experiments/loud.yaml")
    assert result.returncode == 1
    assert result.stderr.strip() == ("Error: target plugin 'shout' (evalsite_rogue) failed to load: target 'shout' "
                                     "is already registered (plugin evalsite-example-plugin); pass replace=True to override")


def test_registering_openai_twice_is_refused_unless_replaced():
    def factory(rest, settings, root):
        raise AssertionError("never built")

    built_in = TARGETS.get("openai")
    with TARGETS.isolated():
        with pytest.raises(TargetError) as refused:
            register_target("openai")(factory)
        assert refused.value.message == "target 'openai' is already registered (built-in); pass replace=True to override"
        assert TARGETS.get("openai") is built_in
        register_target("openai", replace=True)(factory)
        assert (TARGETS.get("openai").factory, TARGETS.origin("openai")) == (factory, __name__)
    assert (TARGETS.get("openai"), TARGETS.origin("openai")) == (built_in, BUILT_IN)


def test_unknown_names_suggest_the_closest():
    registry: Registry[int] = Registry("widget", "evalsite.no_such_group")
    registry.register("sprocket", 1)
    registry.register("gear", 2)
    assert registry.get("gear") == 2
    with pytest.raises(Exception, match=r"^unknown widget 'sprocet'; did you mean 'sprocket'\? \(known: gear, sprocket\)$"):
        registry.get("sprocet")
    assert registry.values() == [1, 2]


def test_each_built_in_evaluator_is_registered_by_the_family_named_for_it():
    """BUILT_IN_FAMILIES names, for every type a family module registers, that module, and no other type."""
    import importlib
    import pkgutil

    import evalsite.scoring.evaluators as package
    from evalsite.scoring.evaluators.base import BUILT_IN_FAMILIES, EVALUATORS

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    built_in = {name: EVALUATORS.get(name).__module__ for name in EVALUATORS.names() if EVALUATORS.origin(name) == BUILT_IN}
    assert built_in == {kind: f"{package.__name__}.{family}" for kind, family in BUILT_IN_FAMILIES.items()}


def test_a_family_is_imported_when_one_of_its_types_is_first_looked_up():
    probe = ("import sys; from evalsite.scoring.evaluators import build_evaluators\n"
             "families = lambda: sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('evalsite.scoring.evaluators.')"
             " and m != 'evalsite.scoring.evaluators.base')\n"
             "build_evaluators([]); first = families()\n"
             "build_evaluators([{'type': 'exact'}]); print(first, families(), 'regex' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["[]", "['exact',", "'text']", "True"]


def test_a_second_thread_looking_up_a_built_in_while_its_module_loads_waits_for_it(tmp_path, monkeypatch):
    """The first lookup imports the family (slowly here); a second lookup of the same name meanwhile
    finds it registered once the import ends, never unknown."""
    import importlib
    import threading
    import time

    registry: Registry[object] = Registry("thing", "evalsite.no-such-group", builtins={"slow": "slow_family"})
    real_import = importlib.import_module

    def slow_import(name: str):
        if name != "slow_family":
            return real_import(name)
        time.sleep(0.3)
        registry.register("slow", object(), module="evalsite.slow_family")
        return None

    monkeypatch.setattr("evalsite.registry.importlib.import_module", slow_import)
    start, found = threading.Barrier(2), []

    def look() -> None:
        start.wait()
        found.append(registry.find("slow"))

    threads = [threading.Thread(target=look) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 2 and None not in found and found[0] is found[1]
