"""The terminal: how loud the CLI is (``-q``/``-v``) and whether it paints (colour).

Library code logs to ``logging.getLogger(__name__)`` under ``evalsite`` and never prints;
:func:`configure` (called by the group for every invocation) routes those records to stderr:
warnings always (``warning: …``), informational lines unless ``--quiet``, debug lines with
``--verbose``. Errors are exceptions (``Error: …``) and results go to stdout, so neither is
ever silenced.

Colour is a choice made once here: only when the stream is a terminal, never with ``NO_COLOR``
set to anything but an empty string (https://no-color.org) or with ``--no-color``. Every
coloured word goes through :func:`paint`.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

import click

LOGGER = "evalsite"
NO_COLOR_ENV = "NO_COLOR"

#: What each kind of word looks like when colour is on.
STYLES: dict[str, dict[str, Any]] = {
    "good": {"fg": "green"},
    "bad": {"fg": "red", "bold": True},
    "warn": {"fg": "yellow"},
    "muted": {"dim": True},
}


@dataclass
class Console:
    """This invocation's choices; ``quiet`` also turns the progress display off."""

    quiet: bool = False
    verbose: bool = False
    colour: bool = True  # False: --no-color
    wide: bool = False  # --wide: every column in full (evalsite.cli.fit)


CONSOLE = Console()


class _ClickHandler(logging.Handler):
    """Writes each record to the stderr click sees now (CliRunner swaps it per invocation)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(self.format(record), err=True)
        except Exception:  # a closed stderr must not turn a log line into a traceback
            self.handleError(record)


class _OncePerInvocation(logging.Filter):
    """Drops a warning already shown by this invocation (settings are read by several steps)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.levelno, record.getMessage())
        if record.levelno < logging.WARNING:
            return True
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            return f"{paint('Error:', 'bad', err=True)} {message}"
        if record.levelno >= logging.WARNING:
            return f"{paint('warning:', 'warn', err=True)} {message}"
        if record.levelno <= logging.DEBUG:
            return paint(f"debug: {record.name}: {message}", "muted", err=True)
        return message


def configure(*, quiet: bool = False, verbose: bool = False, colour: bool = True) -> None:
    """Set this invocation's verbosity and colour, and (re)install the one stderr handler."""
    CONSOLE.quiet, CONSOLE.verbose, CONSOLE.colour, CONSOLE.wide = quiet, verbose, colour, False
    logger = logging.getLogger(LOGGER)
    for handler in [h for h in logger.handlers if isinstance(h, _ClickHandler)]:
        logger.removeHandler(handler)
    handler = _ClickHandler()
    handler.setFormatter(_Formatter())
    handler.addFilter(_OncePerInvocation())
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    logger.propagate = False


def colour_on(err: bool = False) -> bool:
    """Paint only on a terminal, and never with ``NO_COLOR`` or ``--no-color``."""
    if not CONSOLE.colour or os.environ.get(NO_COLOR_ENV, ""):
        return False
    stream = sys.stderr if err else sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def paint(text: str, kind: str, *, err: bool = False) -> str:
    """``text`` in the colour of ``kind`` (:data:`STYLES`) when colour is on, else unchanged."""
    return click.style(text, **STYLES[kind]) if colour_on(err) else text


def info(message: str) -> None:
    """An informational line on stderr (silenced by ``--quiet``)."""
    logging.getLogger(f"{LOGGER}.cli").info(message)
