"""The progress display of ``evalsite run``, on stderr, drawn only when stderr is a terminal.

One line per run (tqdm fits it to the terminal's width, so a narrow terminal never wraps it):
which arm of how many, done/total, errors, what that arm has spent, rate and time left.
Redirected to a file or a pipe (CI logs), it stays quiet.
"""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

from evalsite.runlog.money import format_usd


class Progress:
    """Counts the cases of one run at a time; a disabled instance only counts."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.arms_total, self.arms_started = 0, 0
        self.label, self.total, self.done, self.errors = "", 0, 0, 0
        self.spent: float | None = None
        self._bar: tqdm | None = None

    def plan(self, arms: int) -> None:
        """How many runs this batch will show, for "arm 2 of 3"."""
        self.arms_total, self.arms_started = arms, 0

    def start(self, label: str, total: int, done: int = 0) -> None:
        self.arms_started += 1
        self.label, self.total, self.done, self.errors, self.spent = label, total, done, 0, None
        position = f" ({self.arms_started}/{self.arms_total})" if self.arms_total > 1 else ""
        self._bar = tqdm(
            total=total, initial=done, desc=f"{label}{position}", file=self.stream, disable=not self.enabled,
            dynamic_ncols=True, unit="case", leave=True, mininterval=0.1, ascii=False,
            bar_format="{desc} {bar} {n_fmt}/{total_fmt}{postfix} {rate_fmt} ETA {remaining}",
            postfix=self._status(),
        )

    def advance(self, error: bool, cost_usd: float | None) -> None:
        """One case done; ``cost_usd`` is what it spent (generation and scoring), None if unknown."""
        self.done += 1
        self.errors += bool(error)
        if cost_usd is not None:
            self.spent = (self.spent or 0.0) + cost_usd
        if self._bar is not None and self.enabled:  # nothing to draw: the counts are all it keeps
            self._bar.set_postfix_str(self._status(), refresh=False)
            self._bar.update(1)

    def notice(self, message: str) -> None:
        """A message on its own line (shown even when the bar is not), then the bar again."""
        if self._bar is not None and self.enabled:
            self._bar.write(message, file=self.stream)
        else:
            self.stream.write(message + "\n")

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _status(self) -> str:
        cost = "cost ?" if self.spent is None else format_usd(self.spent)
        return f"errors {self.errors} {cost}"
