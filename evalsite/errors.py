"""One exception tree for everything a user can cause.

Every class derives from ``click.ClickException`` so that a user's mistake prints one line
(``Error: <message>``) and never a traceback. Code raises the most specific class; the CLI
never catches and rewraps them.
"""

from __future__ import annotations

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
    """Two runs may not be compared; the message (``not comparable: <reason>``) gives the reason,
    printed ``Error: not comparable: <reason>`` like every other refusal (one prefix everywhere)."""


class SiteError(EvalsiteError):
    """The site cannot be built or served (output folder, template, size budget)."""


class DecisionError(EvalsiteError):
    """A promotion or another decision about runs is refused; the message says why and how to proceed."""


class SourceError(EvalsiteError):
    """A file given to ``evalsite import`` cannot be read as the format it was given as."""


class OutputError(EvalsiteError):
    """``-o/--output FILE`` names a format the command does not write, or the file cannot be written."""


class AlreadyImportedError(EvalsiteError):
    """A file with this sha256 was imported before; ``--again`` imports it anyway."""
