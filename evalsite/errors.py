"""One exception tree for everything a user can cause.

Plain exceptions, usable without click (``import evalsite; evalsite.run_experiment(...)`` raises
them as any library does). Code raises the most specific class; the CLI converts every one, in
one place (:class:`evalsite.cli.LazyGroup`), to one line on stderr (``Error: <message>``, never a
traceback) and the class's :attr:`EvalsiteError.exit_code`. This module imports only the
standard library: it is the base every layer imports.

A message quotes what the user gave (a name, a value, a path), and that can be any length: every
message is bounded here, in the one place all of them pass (:func:`bounded_message`), so a 100 KB
name is shown by its start and its length, never echoed whole.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

#: How many characters of a long value a message shows, before ``…(N chars)``.
SHOWN_CHARS = 60
#: A stretch of a message without white space longer than this is a value someone passed, not
#: wording: it is shown by its first :data:`SHOWN_CHARS` characters and its length.
MAX_WORD_CHARS = 400
#: A line of a message still longer than this (a long value with spaces in it) keeps its start and
#: its end (where the advice is) and says how many characters were left out between them.
MAX_LINE_CHARS = 2000
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD_CHARS + 1},}}")
_CLOSING = "'\":;,.)]}"


def shortened(text: str, keep: int = SHOWN_CHARS) -> str:
    """``text``, or its first ``keep`` characters and its length when it is longer."""
    return text if len(text) <= keep else f"{text[:keep]}…({len(text):,} chars)"


def bounded_message(message: str) -> str:
    """``message`` with every overlong value shortened (:data:`MAX_WORD_CHARS`, :data:`MAX_LINE_CHARS`)."""
    message = _LONG_WORD.sub(lambda match: _shortened_word(match.group()), message)
    return "\n".join(_bounded_line(line) for line in message.split("\n"))


def and_more(count: int) -> str:
    """``and 1,214 more``: what a cut list says of the entries it left out."""
    return f"and {count:,} more"


def listed(entries: Sequence[str], limit: int, separator: str = ", ") -> str:
    """The entries joined by ``separator``, cut after ``limit`` by ``… and N more``: how a message,
    a terminal line or a summary names a long list's culprits without growing with it."""
    if len(entries) <= limit:
        return separator.join(entries)
    return separator.join([*entries[:limit], f"… {and_more(len(entries) - limit)}"])


def did_you_mean(value: object, candidates: Sequence[str]) -> str:
    """``; did you mean 'params'?`` for the closest candidate, or nothing."""
    close = difflib.get_close_matches(str(value), list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _shortened_word(word: str) -> str:
    """A long value, shortened, keeping the punctuation that closes it (``'…'``, ``…:``)."""
    value = word.rstrip(_CLOSING)
    return shortened(value) + word[len(value):]


def _bounded_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    head, tail = line[: MAX_LINE_CHARS // 2], line[-(MAX_LINE_CHARS // 4):]
    return f"{head}…({len(line) - len(head) - len(tail):,} chars)…{tail}"


class EvalsiteError(Exception):
    """Base of every user-facing error: a refusal, exit code 1 on the command line. Its
    ``message`` (also its ``str``) is bounded (:func:`bounded_message`)."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        self.message = bounded_message(str(message))
        super().__init__(self.message)


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
