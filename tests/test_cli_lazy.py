"""Lazy command loading: `evalsite --help` and the runner import only what they need."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from evalsite.cli import COMMANDS, main
from evalsite.cli.lean import YOUNG_GENERATION

CLI = Path(__file__).resolve().parent.parent / "evalsite" / "cli"
HEAVY = ("scipy", "duckdb", "jinja2", "httpx")


def modules_loaded_by(code: str) -> set[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_help_imports_no_heavy_library():
    code = (
        "from click.testing import CliRunner\nfrom evalsite.cli import main\n"
        "result = CliRunner().invoke(main, ['--help'])\nassert result.exit_code == 0, result.output\n"
        "assert 'leaderboard' in result.output"
    )
    assert not modules_loaded_by(code) & set(HEAVY)


def test_the_runner_imports_no_scipy_duckdb_or_jinja():
    assert not modules_loaded_by("import evalsite.execute.runner") & {"scipy", "duckdb", "jinja2"}


def test_listed_help_is_each_commands_own():
    for entry in COMMANDS:
        command = main.commands[entry.name]
        assert command.name == entry.name
        assert entry.help == command.get_short_help_str(limit=1000), entry.name


def test_every_command_defined_under_cli_is_listed():
    """A top-level command module-level in evalsite/cli/ that COMMANDS forgot would be unreachable."""
    defined: set[int] = set()
    subcommands: set[int] = set()
    for path in sorted(CLI.glob("[!_]*.py")):
        module = importlib.import_module(f"evalsite.cli.{path.stem}")
        for value in vars(module).values():
            if isinstance(value, click.Command) and value.callback is not None and value.callback.__module__ == module.__name__:
                defined.add(id(value))
            if isinstance(value, click.Group) and value is not main:
                subcommands |= {id(command) for command in value.commands.values()}
    listed = {id(main.commands[entry.name]) for entry in COMMANDS}
    assert defined - subcommands == listed


def test_unknown_command_is_refused_by_click():
    result = subprocess.run([sys.executable, "-m", "evalsite", "nope"], capture_output=True, text=True)
    assert result.returncode == 2 and "No such command 'nope'" in result.stderr


def test_the_run_command_imports_no_scipy_duckdb_or_jinja_until_used():
    loaded = modules_loaded_by("from evalsite.cli import main\nmain.commands['run']")
    assert not loaded & {"scipy", "duckdb", "jinja2"}


def test_the_statistics_load_scipy_where_a_figure_is_computed():
    """stats/distributions.py imports scipy.special in the functions that call it: loading every
    statistic the site's renderer and the analysis commands load costs no scipy; a figure that needs
    a scipy function does, and the normal quantile does not (the standard library's)."""
    modules = ("evalsite.site.build", "evalsite.analysis.verdict", "evalsite.stats.intervals", "evalsite.stats.power",
               "evalsite.stats.ranking", "evalsite.stats.paired", "evalsite.stats.noise")
    assert "scipy" not in modules_loaded_by("\n".join(f"import {module}" for module in modules))
    assert "scipy" not in modules_loaded_by("from evalsite.stats.distributions import norm_ppf\nnorm_ppf(0.975)")
    assert "scipy" in modules_loaded_by("from evalsite.stats.distributions import t_sf\nt_sf(1.0, 3.5)")


def test_the_example_leaderboard_imports_no_scipy(example_with_runs):
    """Every figure of the example's leaderboard (BCa intervals, sign-flip tests, power, Friedman,
    Nemenyi) comes from stats/distributions.py's numpy and standard-library functions."""
    code = ("from evalsite.cli import main\ntry:\n    main(['leaderboard', '--json'], prog_name='evalsite')\n"
            "except SystemExit as stop:\n    assert not stop.code, stop.code")
    result = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.startswith('scipy')))"],
                            cwd=example_with_runs, capture_output=True, text=True, check=True)
    assert result.stdout.splitlines()[-1] == "[]"


COMPLETING_RUN = ("family-test", "bootstrap", "noise", "compare", "compare r --baseline", "promote", "compact", "rescore",
                  "runs --exclude", "show", "ci summary", "run --resume", "run m --baseline")


@pytest.mark.parametrize("words", COMPLETING_RUN)
def test_completing_a_run_loads_no_heavy_library(words, tmp_path):
    """Shell completion loads the command's module and runs its options' callbacks while the shell
    waits (tests/test_cli_completion.py): none of that may load statistics, a database or a client."""
    (tmp_path / "data").mkdir()
    parts = ["evalsite", *words.split(" "), ""]
    code = ("import os, sys, json\nfrom evalsite.cli import main\ntry:\n    main(prog_name='evalsite')\n"
            "except SystemExit:\n    pass\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)")
    env = {**os.environ, "_EVALSITE_COMPLETE": "bash_complete", "COMP_WORDS": " ".join(parts), "COMP_CWORD": str(len(parts) - 1)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stderr.splitlines()[-1]))
    assert not loaded & {"scipy", "numpy", "duckdb", "pyarrow", "jinja2", "httpx", "yaml", "jsonschema"}


def test_the_names_the_commands_keep_for_completion_are_the_librarys():
    from evalsite.analysis import compare, regression, verdict
    from evalsite.cli import analysis as analysis_cli
    from evalsite.cli import compare as compare_cli

    assert list(analysis_cli.METRIC_NAMES) == list(verdict.METRICS)
    assert (compare_cli.THRESHOLD, compare_cli.ALPHA) == (regression.THRESHOLD, compare.ALPHA)
    from evalsite.analysis.baselines import EXPLICIT, PRIOR, PROMOTED

    assert set(compare_cli.SOURCES) == {EXPLICIT, PRIOR, PROMOTED}


def blas_threads_after_loading(command: str, environment: dict[str, str]) -> str:
    code = (f"from evalsite.cli import main\nmain.commands[{command!r}]\nimport os, numpy\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment)
    return result.stdout.strip()


def test_a_command_that_reads_runs_keeps_numpys_blas_on_one_thread_unless_the_user_chose():
    environment = {name: value for name, value in os.environ.items() if name != "OPENBLAS_NUM_THREADS"}
    assert blas_threads_after_loading("leaderboard", environment) == "1"
    assert blas_threads_after_loading("run", environment) == "unset"
    assert blas_threads_after_loading("leaderboard", {**environment, "OPENBLAS_NUM_THREADS": "3"}) == "3"


def collector_at_exit(entry: str) -> str:
    """What an exit handler registered before ``entry`` finds (it runs after those the command
    registered): the youngest generation's threshold, and whether everything was frozen by then."""
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print(gc.get_threshold()[0], 'frozen' if gc.get_freeze_count() else 'not frozen'))\n"
            f"from evalsite.cli import main\n{entry}")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return result.stdout.splitlines()[-1]


def test_the_process_entry_collects_less_and_not_at_exit_and_test_invocations_do_not():
    assert collector_at_exit("main(['--version'])") == f"{YOUNG_GENERATION} frozen"  # the script, python -m evalsite
    invoked = "from click.testing import CliRunner\nassert CliRunner().invoke(main, ['--version']).exit_code == 0"
    threshold, frozen = collector_at_exit(invoked).split(" ", 1)
    assert int(threshold) != YOUNG_GENERATION and frozen == "not frozen"  # Python's own


def httpx_cli_after(entry: str) -> str:
    """Whether ``import httpx`` after ``entry`` loaded its command-line client (rich is installed
    here, for import-linter, so httpx would)."""
    code = (f"from evalsite.cli import main\n{entry}\nimport sys, httpx\n"
            "print('httpx._main' in sys.modules, 'rich' in sys.modules, len(sys.meta_path))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return result.stdout.splitlines()[-1]


def test_the_process_entry_leaves_httpxs_command_line_client_out_and_test_invocations_do_not():
    pytest.importorskip("rich")
    invoked = "from click.testing import CliRunner\nassert CliRunner().invoke(main, ['--version']).exit_code == 0"
    installed, rich, finders = httpx_cli_after(invoked).split()
    assert (installed, rich) == ("True", "True")  # httpx as installed
    entry = httpx_cli_after("try:\n    main(['--version'])\nexcept SystemExit:\n    pass")
    assert entry == f"False False {finders}"  # and the finder that refused it is gone


def test_the_import_command_loads_no_manifest_reader(tmp_path: Path):
    """`evalsite import` checks --dataset's name without the manifest's reader (YAML, the JSON Schema
    validator: ~0.1 s of every import's start)."""
    source = Path(__file__).resolve().parent / "fixtures" / "plain" / "scored.jsonl"
    (tmp_path / "data").mkdir()
    code = (
        f"import os\nos.chdir({str(tmp_path)!r})\nfrom click.testing import CliRunner\nfrom evalsite.cli import main\n"
        f"result = CliRunner().invoke(main, ['import', 'jsonl', {str(source)!r}, '--dataset', 'qa', '--json'])\n"
        "assert result.exit_code == 0, result.output"
    )
    assert not modules_loaded_by(code) & {"yaml", "jsonschema", "scipy", "duckdb", "jinja2", "httpx"}
