"""The terminal: colour only on a TTY and never with NO_COLOR or --no-color; -q and -v over the
standard logging module; did-you-mean for every evalsite.toml key; help and text fixes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from terminal_support import in_terminal

ESCAPE = "\x1b["



@pytest.fixture
def console_project(cli, tmp_path, monkeypatch):
    """A fresh `evalsite init` project with one run of each arm."""
    monkeypatch.chdir(tmp_path)
    assert cli("init", "p").exit_code == 0
    monkeypatch.chdir(tmp_path / "p")
    assert cli("run", "experiments/example.yaml", "--allow-failures").exit_code == 0
    return tmp_path / "p"


def test_colour_only_on_a_terminal_and_never_with_no_color(console_project):
    for command in (["runs"], ["check-claims"]):
        painted = in_terminal(console_project, *command)
        assert ESCAPE in painted and "completed" in painted or "holds" in painted, painted
        assert ESCAPE + "32m" in painted  # green: completed / ✓ holds
        for plain in (in_terminal(console_project, *command, env={"NO_COLOR": "1"}), in_terminal(console_project, "--no-color", *command)):
            assert ESCAPE not in plain and ("completed" in plain or "holds" in plain)
        assert ESCAPE in in_terminal(console_project, *command, env={"NO_COLOR": ""})  # empty: not set (no-color.org)
        piped = subprocess.run([sys.executable, "-m", "evalsite", *command], cwd=console_project, capture_output=True, text=True,
                               env={k: v for k, v in os.environ.items() if k != "NO_COLOR"})
        assert ESCAPE not in piped.stdout + piped.stderr and piped.stdout


def test_quiet_drops_informational_lines_but_not_warnings_errors_or_results(cli, console_project):
    (console_project / "evalsite.toml").write_text("[ci]\nmax_eror_rate = 0.2\n")
    loud = cli("leaderboard", "-o", "board.csv")
    assert "wrote board.csv" in loud.stderr and "leaderboard · dataset" in loud.stdout
    quiet = cli("-q", "leaderboard", "-o", "board.csv")
    assert "wrote" not in quiet.stderr and quiet.stdout == loud.stdout
    assert "warning: evalsite.toml: [ci] unknown key 'max_eror_rate'; did you mean 'max_error_rate'?" in quiet.stderr
    assert cli("-q", "show", "nosuchrun").stderr.splitlines()[-1].startswith("Error: no run matches")
    built = cli("-q", "run", "experiments/example.yaml", "--arm", "reverse", "--build")
    assert built.exit_code == 0 and "site:" not in built.stderr and (console_project / "site" / "index.html").exists()
    assert "site: " in cli("run", "experiments/example.yaml", "--arm", "reverse", "--build").stderr


def test_verbose_adds_debug_lines_from_the_library_loggers(cli, console_project):
    verbose = cli("-v", "leaderboard", "-o", "board.json")
    assert f"debug: evalsite.project: project {console_project.resolve()}: settings from" in verbose.stderr
    assert "debug:" not in cli("leaderboard").stderr
    both = cli("-q", "-v", "runs")
    assert both.exit_code == 2 and "--quiet and --verbose contradict each other" in both.stderr


def test_every_evalsite_toml_table_and_key_gets_a_did_you_mean(cli, console_project):
    (console_project / "evalsite.toml").write_text('[analysys]\ncluster_key = "g"\n[store]\nrun = "x"\n[site]\nredact = false\n')
    warned = cli("runs").stderr
    assert "warning: evalsite.toml: unknown table [analysys]; did you mean 'analysis'?" in warned
    assert "warning: evalsite.toml: [store] unknown key 'run'; did you mean 'runs'?" in warned
    checked = cli("validate")
    assert checked.exit_code == 1
    assert "evalsite.toml: [store] unknown key 'run'; did you mean 'runs'? (known: runs)" in checked.stdout.splitlines()


def test_help_says_rank_only_on_commands_that_rank(cli):
    for command in ("leaderboard", "rank-stability", "holdout"):
        assert "Rank on this evaluator" in cli(command, "--help").stdout
    for command in ("noise", "bootstrap", "family-test"):
        text = cli(command, "--help").stdout
        assert "Rank on" not in text and "Use this evaluator's scores" in text


def test_noise_names_wilson_intervals_only_where_it_prints_them(cli, console_project):
    cli("run", "experiments/example.yaml", "--arm", "lowercase", "--repeat", "3", "--allow-failures")
    listed = cli("noise", "lowercase@latest", "--all").stdout
    assert "per item: pass rate across repeats with its 95% Wilson score interval" in listed
    assert "Wilson interval" in listed.splitlines()[listed.splitlines().index(
        "per item: pass rate across repeats with its 95% Wilson score interval") + 1]
    one_repeat = cli("noise", "reverse@latest").stdout
    assert "Wilson" not in one_repeat and "pass@1 = 1.000" in one_repeat


def test_verbose_import_says_what_it_read_and_wrote(cli, console_project):
    from example_support import REPO

    shown = cli("-v", "import", "jsonl", str(REPO / "tests" / "fixtures" / "plain" / "scored.jsonl"), "--again")
    assert shown.exit_code == 0, shown.output
    assert "debug: evalsite.execute.importers: read " in shown.stderr and "as jsonl (sha256 " in shown.stderr
    assert shown.stderr.count("debug: evalsite.execute.importers: wrote run ") == shown.stdout.count("completed")
