"""A one-line progress bar on stderr, drawn only when stderr is a terminal.

``evalsite run`` shows done/total, errors, spent cost and rate per run; redirected to a file or
a pipe (CI logs), it stays quiet.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24
REDRAW_SECONDS = 0.1


class Progress:
    """Counts cases of one run at a time; a disabled instance only counts."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.label, self.total, self.done, self.errors = "", 0, 0, 0
        self.spent: float | None = None
        self._started = self._drawn = 0.0
        self._new = 0

    def start(self, label: str, total: int, done: int = 0) -> None:
        self.label, self.total, self.done, self.errors, self._new = label, total, done, 0, 0
        self._started = time.monotonic()
        self._draw()

    def advance(self, error: bool, spent: float | None) -> None:
        self.done += 1
        self._new += 1
        self.errors += bool(error)
        self.spent = spent
        if time.monotonic() - self._drawn >= REDRAW_SECONDS or self.done == self.total:
            self._draw()

    def notice(self, message: str) -> None:
        """A message on its own line (shown even when the bar is not), then the bar again."""
        self.stream.write(("\r\x1b[K" if self.enabled else "") + message + "\n")
        self._draw()

    def finish(self) -> None:
        if self.enabled:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()

    def line(self) -> str:
        filled = BAR_WIDTH * self.done // self.total if self.total else BAR_WIDTH
        elapsed = time.monotonic() - self._started
        rate = f"{self._new / elapsed:.1f}/s" if elapsed > 0 else "—/s"
        cost = "cost ?" if self.spent is None else f"${self.spent:.4f}"
        bar = "█" * filled + "░" * (BAR_WIDTH - filled)
        return f"{self.label} {bar} {self.done}/{self.total}  errors {self.errors}  {cost}  {rate}"

    def _draw(self) -> None:
        if not self.enabled:
            return
        self._drawn = time.monotonic()
        self.stream.write("\r" + self.line() + "\x1b[K")
        self.stream.flush()
