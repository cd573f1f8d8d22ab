"""One exception tree for everything a user can cause.

Every class derives from ``click.ClickException`` so that a user's mistake prints one line
(``Error: <message>``) and never a traceback. Code raises the most specific class; the CLI
never catches and rewraps them.
"""

from __future__ import annotations

from typing import IO, Any

import click


class EvalsiteError(click.ClickException):
    """Base of every user-facing error; exit code 1."""

    exit_code = 1


class ProjectError(EvalsiteError):
    """The project folder or one of its settings is unusable."""


class DatasetError(EvalsiteError):
    """A dataset file cannot be read or holds an invalid row."""


class ManifestError(EvalsiteError):
    """An experiment manifest is malformed or refers to something that does not exist."""


class PlanError(EvalsiteError):
    """A manifest expands to a plan that must not run (empty, too large)."""


class TargetError(EvalsiteError):
    """A target cannot be constructed from its settings."""


class MissingSecretError(TargetError):
    """An environment variable a target's settings name (a key, a header) is not set: ``run``
    refuses, ``validate`` warns (CI validates without keys), ``validate --strict`` fails."""


class EvaluatorError(EvalsiteError):
    """An evaluator cannot be constructed from its settings."""


class RunLogError(EvalsiteError):
    """A run directory is missing, unreadable or of a newer format."""


class NotComparableError(EvalsiteError):
    """Two runs may not be compared; the message gives the reason. Printed as ``ERROR: <message>``,
    the refusal line DESIGN.md promises scripts (the same as ``evalsite compare`` prints)."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"ERROR: {self.format_message()}", file=file, err=file is None)


class SiteError(EvalsiteError):
    """The site cannot be built or served (output folder, template, size budget)."""


class DecisionError(EvalsiteError):
    """A promotion or another decision about runs is refused; the message says why and how to proceed."""


class SourceError(EvalsiteError):
    """A file given to ``evalsite import`` cannot be read as the format it was given as."""


class AlreadyImportedError(EvalsiteError):
    """A file with this sha256 was imported before; ``--again`` imports it anyway."""
