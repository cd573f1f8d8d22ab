"""The ``evalsite`` command line: click commands only, one module per area, no logic here.

``COMMANDS`` is the explicit list of top-level commands: name, the module and attribute that
define it, and its one-line help. A command's module is imported only when that command runs
(or its own ``--help`` is asked for), so ``evalsite --help`` and ``evalsite runs`` do not pay
for scipy, Jinja or the runner. tests/test_cli_lazy.py checks that the help given here is the
command's own and that every command defined under evalsite/cli/ is listed.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import click

from evalsite import __version__
from evalsite.cli.console import configure
from evalsite.cli.lean import (
    blas_on_one_thread,
    fewer_collections,
    httpx_without_its_command_line,
    pyarrow_without_pandas,
)
from evalsite.errors import EvalsiteError, ProjectError


@dataclass(frozen=True)
class CommandEntry:
    name: str
    target: str  # "module:attribute" under evalsite.cli
    help: str  # the command's short help, shown by `evalsite --help` without importing it


COMMANDS = (
    CommandEntry("bootstrap", "analysis:bootstrap_command", "Intervals for RUN's mean and pass rate."),
    CommandEntry("build", "build:build_command", "Render the static site (only pages whose inputs changed)."),
    CommandEntry("cache", "cache:cache_group", "Inspect and trim the response cache (.evalsite/cache/)."),
    CommandEntry("check-claims", "claims:check_claims_command", "Re-derive every claim in reports/*.md (or FILES) from the runs; exit 1 unless all hold."),
    CommandEntry("ci", "ci:ci_group", "Helpers for CI jobs: what to run, and the job summary."),
    CommandEntry("compact", "compact:compact_command", "Store finished runs as zstd Parquet next to their JSONL (or under --to DIR)."),
    CommandEntry("compare", "compare:compare_command", "Compare RUN with its baseline, fingerprint first."),
    CommandEntry("dataset", "dataset:dataset_group", "Freeze, verify and describe dataset files."),
    CommandEntry("docs", "docs:docs_command", "List the documentation pages that ship with evalsite, or print one."),
    CommandEntry("family-test", "analysis:family_test_command", "RUN against a declared family of runs, Holm-corrected."),
    CommandEntry("holdout", "analysis:holdout_command", "Does the pilot order of the arms hold on the holdout items?"),
    CommandEntry("import", "importer:import_command", "Turn another tool's results (FORMAT: promptfoo, inspect, lm-eval, jsonl, csv) into runs."),
    CommandEntry("init", "init:init_command", "Scaffold a project: example dataset, manifest, targets, report, .gitignore, CI workflow."),
    CommandEntry("judge-agreement", "review:judge_agreement_command", "Each judge against the human ratings: Cohen's κ, raw agreement, confusion, disagreements."),
    CommandEntry("leaderboard", "analysis:leaderboard_command", "Every arm on a dataset, and the order the data supports."),
    CommandEntry("merge", "merge:merge_command", "Merge the shard runs of each BATCH (default: every batch with shards) into one run per config."),
    CommandEntry("noise", "analysis:noise_command", "RUN's spread across repeats and each item's flakiness."),
    CommandEntry("plan-size", "plan_size:plan_size_command", "Items a stop_when run is expected to use for an assumed difference, by simulation."),
    CommandEntry("promote", "compare:promote_command", "Make RUN the baseline of its arm, with a reason."),
    CommandEntry("query", "query:query_command", "Run SQL over the views runs, cases and scores."),
    CommandEntry("rank-stability", "analysis:rank_stability_command", "How many items the separated part of the order of the arms needs."),
    CommandEntry("rescore", "rescore:rescore_command", "Re-score a run's outputs as a new run."),
    CommandEntry("review", "review:review_group", "Human review of cases: export a sample to rate, import the ratings."),
    CommandEntry("run", "run:run_command", "Execute an experiment: one run per arm, written under runs/."),
    CommandEntry("runs", "runs:runs_command", "List runs, newest first; or exclude a run from comparisons, or include it again."),
    CommandEntry("schema", "schema:schema_command", "Print the manifest JSON Schema (Draft 2020-12), known evaluator types and target kinds listed."),
    CommandEntry("serve", "build:serve_command", "Serve the site on 127.0.0.1 and rebuild it when runs, data, manifests or the theme change."),
    CommandEntry("show", "runs:show_command", "One run's summary."),
    CommandEntry("validate", "validate:validate_command", "Check every manifest, dataset, lock and run; exit 1 listing every problem (and, with --strict, every warning)."),
)


#: ``ctx.meta`` key: the command's own ``--help`` is asked for (help works in any folder).
ASKS_HELP = "evalsite.asks_help"
#: Commands that work in any folder: they make a project, or read files named on their command line.
OUTSIDE_A_PROJECT = frozenset({"dataset", "docs", "import", "init", "plan-size", "schema"})


class _LazyCommands(Mapping[str, click.Command]):
    """Command name -> command, importing the command's module when it is first looked up."""

    def __init__(self, entries: tuple[CommandEntry, ...]) -> None:
        self.entries = {entry.name: entry for entry in entries}

    def __getitem__(self, name: str) -> click.Command:
        module, attribute = self.entries[name].target.split(":")
        if name in READS_RUNS:
            blas_on_one_thread()  # before the command's module loads numpy
        command: click.Command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        return command

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


class Refusal(click.ClickException):
    """An :class:`~evalsite.errors.EvalsiteError` as click shows it: ``Error: <message>`` on stderr,
    exit code the error's (1)."""

    def __init__(self, error: EvalsiteError) -> None:
        super().__init__(error.message)
        self.exit_code = error.exit_code  # type: ignore[misc]  # click declares it per class


def _save_kept_digests() -> None:
    """Keep the run files' sha256s the command computed for the next one (:mod:`evalsite.runlog.digests`);
    nothing to do, and nothing imported, when it read no run's footer."""
    digests = sys.modules.get("evalsite.runlog.digests")
    if digests is not None:
        digests.save_kept()


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's LazyGroup pattern); its
    listing in ``--help`` uses the help strings of ``COMMANDS``, so it imports none of them.
    It is also the one place a library error becomes the CLI's one line (:meth:`invoke`)."""

    def __init__(self, *args: Any, entries: tuple[CommandEntry, ...], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _LazyCommands(entries)  # type: ignore[assignment]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The process's entry (the ``evalsite`` script, ``python -m evalsite``; tests call
        :meth:`main`): the command, with fewer garbage collections in its process
        (:func:`~evalsite.cli.lean.fewer_collections`) and without httpx's command-line client
        (:func:`~evalsite.cli.lean.httpx_without_its_command_line`)."""
        fewer_collections()
        httpx_without_its_command_line()
        return super().__call__(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; an :class:`~evalsite.errors.EvalsiteError` from anywhere below (the
        group's own checks, a command's options or body) leaves as a :class:`Refusal`."""
        try:
            return super().invoke(ctx)
        except EvalsiteError as error:
            raise Refusal(error) from None
        finally:
            _save_kept_digests()

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """Also note whether the command's own ``--help`` is asked for: help works in any folder."""
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta[ASKS_HELP] = any(arg in ctx.help_option_names for arg in rest)
        return name, command, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        entries = self.commands.entries  # type: ignore[attr-defined]
        with formatter.section("Commands"):
            formatter.write_dl([(name, entries[name].help) for name in self.list_commands(ctx)])


#: Where ``evalsite --help`` sends a reader: the docs ship inside the package (the wheel's
#: ``evalsite/docs``; :mod:`evalsite.cli.docs`), since no public URL is recorded to point at.
EPILOG = ("Docs ship with evalsite: 'evalsite docs' lists the pages, 'evalsite docs guide' prints the guide "
          "(a first project, step by step), 'evalsite docs commands' every command and option; 'evalsite docs "
          "--path' names their folder. 'evalsite COMMAND --help' describes one command.")


@click.group(cls=LazyGroup, entries=COMMANDS, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalsite")
@click.option("--runs", "runs_location", metavar="DIR|URI",
              help="Read runs from this folder or object-storage URI (s3://bucket/prefix) instead of runs/ "
                   "or [store] runs; the same as EVALSITE_RUNS.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display and no informational lines (warnings, "
              "errors and results still print).")
@click.option("-v", "--verbose", is_flag=True, help="Also print debug lines: what each step read and wrote.")
@click.option("--no-color", "no_color", is_flag=True,
              help="Never colour the output (colour is used only on a terminal, and never when NO_COLOR is set).")
def main(runs_location: str | None, quiet: bool, verbose: bool, no_color: bool) -> None:
    """Run experiments into append-only run logs, test them honestly, publish a static site."""
    if quiet and verbose:
        raise click.UsageError("--quiet and --verbose contradict each other; pass one")
    configure(quiet=quiet, verbose=verbose, colour=not no_color)
    context = click.get_current_context()
    if context.invoked_subcommand not in OUTSIDE_A_PROJECT and not context.meta.get(ASKS_HELP) and not runs_location:
        from evalsite.project import require_project

        require_project()
    if runs_location:
        os.environ["EVALSITE_RUNS"] = runs_location  # evalsite.project.RUNS_ENV, read by Project.runs_location
    if context.invoked_subcommand in READS_RUNS and not context.meta.get(ASKS_HELP):
        pyarrow_without_pandas(load=context.invoked_subcommand not in LEAVES_PYARROW)  # never needed to read runs
    if context.invoked_subcommand in READS_RUNS:
        _refresh_store()


#: Commands that read runs: over a URI runs location they read its local mirror, refreshed first.
READS_RUNS = frozenset({"bootstrap", "build", "check-claims", "compare", "family-test", "holdout", "leaderboard",
                        "noise", "query", "rank-stability", "runs", "serve", "show"})

#: Commands that read runs without pyarrow (``build`` loads it only when something is new).
LEAVES_PYARROW = frozenset({"runs", "show", "build"})


def _refresh_store() -> None:
    from evalsite.project import find_project

    project = find_project()
    location = project.runs_location or ""
    if "://" in location:  # imports fsspec and DuckDB only for a store
        from evalsite.analysis.remote import refresh_project_store

        refresh_project_store(project)
    elif location and not project.runs_dir.is_dir():  # a typo would read as a project with no runs
        found = "not a folder" if project.runs_dir.exists() else "no such folder"
        raise ProjectError(f"runs location {location}: {found} ({project.runs_dir})")
