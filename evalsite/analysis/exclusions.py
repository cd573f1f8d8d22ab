"""Keeping a run out of comparisons, and taking it back: ``evalsite runs --exclude/--include``.

A scratch run (``--set dataset.limit=10``, a broken config, a run on the wrong machine) would
otherwise join leaderboards and claims, or add a second dataset id that makes them ask which one
is meant. Excluding it appends an ``exclude`` line, with the reason, to ``runs/decisions.jsonl``:
the run stays on disk, ``evalsite runs`` and ``show`` still list it, ``compare`` still accepts
it by name, but nothing that picks runs by itself (leaderboards, claims, baselines, the site)
uses it until an ``include`` line takes it back.
"""

from __future__ import annotations

from evalsite.errors import DecisionError
from evalsite.project import Project
from evalsite.runlog.decisions import EXCLUDE, INCLUDE, Decision, append_decision, decisions_path, excluded_runs
from evalsite.runlog.fingerprint import git_user
from evalsite.runlog.store import iso, open_run, resolve_run, utc_now


def exclude_run(project: Project, run: str, reason: str) -> Decision:
    """Record that ``run`` (an id, prefix, path or ``ARM@latest``) is kept out of comparisons."""
    return _decide(project, run, reason, EXCLUDE)


def include_run(project: Project, run: str, reason: str) -> Decision:
    """Take an excluded run back into comparisons."""
    return _decide(project, run, reason, INCLUDE)


def _decide(project: Project, run: str, reason: str, kind: str) -> Decision:
    flag = f"--{kind}"
    if not reason.strip():
        raise DecisionError(f"runs {flag}: --reason is empty; say why (it is recorded in runs/decisions.jsonl)")
    known = open_run(resolve_run(project.runs_dir, run))
    excluded = known.run_id in excluded_runs(project.runs_dir)
    if kind == EXCLUDE and excluded:
        raise DecisionError(f"run {known.run_id} is already excluded; `evalsite runs --include {known.run_id}` takes it back")
    if kind == INCLUDE and not excluded:
        raise DecisionError(f"run {known.run_id} is not excluded; nothing to include")
    decision = Decision.about(known.header, kind=kind, reason=reason.strip(), at=iso(utc_now()), by=git_user(project.root))
    append_decision(decisions_path(project.runs_dir), decision)
    return decision
