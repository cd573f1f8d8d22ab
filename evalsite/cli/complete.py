"""Shell completion of RUN: the run ids under the project's runs folder, newest first (by recorded
start, as ``ARM@latest`` picks), then ``ARM@latest``.

Click asks :func:`complete_runs` while the shell waits, so it reads only the run folders' headers
(no analysis, no database): the folders ``run_directories`` counts as runs, the runs location the
command would read (``--runs``, ``EVALSITE_RUNS``, ``[store] runs``: for a URI, its local mirror,
as last refreshed). Enabling completion in a shell: docs/reference/commands.md.
"""

from __future__ import annotations

import os

import click
from click.shell_completion import CompletionItem


def complete_runs(context: click.Context, parameter: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The run ids starting with ``incomplete`` (each with its arm as help), then ``ARM@latest`` for
    each arm starting with it; nothing outside a project."""
    from evalsite.errors import RunLogError
    from evalsite.project import RUNS_ENV, find_project
    from evalsite.runlog.store import LATEST, read_header, run_directories

    location = context.find_root().params.get("runs_location")
    if location:  # the group's callback, which sets it for a command, does not run while completing
        os.environ[RUNS_ENV] = location
    runs: dict[str, tuple[str, str | None]] = {}  # run id -> (recorded start, arm)
    for directory in run_directories(find_project().runs_dir):
        try:
            header = read_header(directory)
            runs[directory.name] = (str(header.started_at or ""), header.arm_id)
        except RunLogError:  # unreadable: still a name the commands resolve (and refuse clearly)
            runs[directory.name] = ("", None)
    newest_first = sorted(runs, key=lambda run_id: (runs[run_id][0], run_id), reverse=True)
    items = [CompletionItem(run_id, help=runs[run_id][1]) for run_id in newest_first if run_id.startswith(incomplete)]
    arms = dict.fromkeys(runs[run_id][1] for run_id in newest_first if runs[run_id][1] is not None)
    return items + [CompletionItem(f"{arm}{LATEST}", help=f"the newest run of {arm}")
                    for arm in arms if f"{arm}{LATEST}".startswith(incomplete)]
