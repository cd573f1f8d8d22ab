"""The progress display of ``evalsite run``, on stderr.

On a terminal: one bar per run (tqdm fits it to the terminal's width, so a narrow terminal never
wraps it): which arm of how many, done/total, errors, what that arm has spent, rate and time left.
Redirected to a file or a pipe (a CI log), the same figures as plain lines: one when a run starts,
then one every ``LINE_SECONDS`` seconds or ``LINE_SHARE`` of the run's cases, whichever comes first
(but at most one a ``MIN_LINE_SECONDS``, so a run of a few seconds is two lines, not twenty), and one
when it ends, so a long run in GitHub Actions shows it is alive. ``--quiet`` turns both off.
tqdm is imported for a bar only: its import costs ~10-30 ms of CPU (its version lookup and its
command-line module), which a run writing lines or nothing would spend for no output.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Never, TextIO

from evalsite.runlog.money import format_usd

if TYPE_CHECKING:
    from tqdm import tqdm

LINE_SECONDS = 10.0
LINE_SHARE = 0.05
MIN_LINE_SECONDS = 1.0


class Progress:
    """Counts the cases of one run at a time; ``enabled``: None draws a bar on a terminal and lines
    elsewhere, True always a bar, False nothing (the instance only counts)."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream or sys.stderr
        self.mode = ("bar" if self.stream.isatty() else "lines") if enabled is None else ("bar" if enabled else "off")
        self.clock = clock
        self.arms_total, self.arms_started = 0, 0
        self.label, self.total, self.done, self.errors = "", 0, 0, 0
        self.spent: float | None = None
        self._bar: tqdm[Never] | None = None  # a bar over no iterable, on a terminal only
        self._running = False  # between start() and finish()
        self._started_at = self._line_at = 0.0
        self._first = self._line_done = 0

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def plan(self, arms: int) -> None:
        """How many runs this batch will show, for "arm 2 of 3"."""
        self.arms_total, self.arms_started = arms, 0

    def start(self, label: str, total: int, done: int = 0) -> None:
        self.arms_started += 1
        self.label, self.total, self.done, self.errors, self.spent = label, total, done, 0, None
        self._bar = self._new_bar() if self.mode == "bar" else None
        self._running = True
        self._started_at = self._line_at = self.clock()
        self._first = done
        if self.mode == "lines":
            self._write_line()

    def advance(self, error: bool, cost_usd: float | None) -> None:
        """One case done; ``cost_usd`` is what it spent (generation and scoring), None if unknown."""
        self.done += 1
        self.errors += bool(error)
        if cost_usd is not None:
            self.spent = (self.spent or 0.0) + cost_usd
        if self.mode == "bar" and self._bar is not None:
            self._bar.set_postfix_str(self._status(), refresh=False)
            self._bar.update(1)
        elif self.mode == "lines" and self._line_due():
            self._write_line()

    def notice(self, message: str) -> None:
        """A message on its own line (shown even when the bar is not), then the bar again."""
        if self._bar is not None and self.mode == "bar":
            self._bar.write(message, file=self.stream)
        else:
            self.stream.write(message + "\n")

    def finish(self) -> None:
        if self.mode == "lines" and self._running and self._line_done != self.done:
            self._write_line()
        self._running = False
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _new_bar(self) -> tqdm[Never]:
        from tqdm import tqdm

        return tqdm(
            total=self.total, initial=self.done, desc=self._desc(), file=self.stream, dynamic_ncols=True, unit="case",
            leave=True, mininterval=0.1, ascii=False,
            bar_format="{desc} {bar} {n_fmt}/{total_fmt}{postfix} {rate_fmt} ETA {remaining}", postfix=self._status(),
        )

    def _desc(self) -> str:
        position = f" ({self.arms_started}/{self.arms_total})" if self.arms_total > 1 else ""
        return f"{self.label}{position}"

    def _status(self) -> str:
        cost = "cost ?" if self.spent is None else format_usd(self.spent)
        return f"errors {self.errors} {cost}"

    def _line_due(self) -> bool:
        step = max(1, math.ceil(self.total * LINE_SHARE))
        waited = self.clock() - self._line_at
        return waited >= LINE_SECONDS or (self.done - self._line_done >= step and waited >= MIN_LINE_SECONDS)

    def _write_line(self) -> None:
        """``careful (1/3): 100/2,000 cases (5%), errors 0, $0.0012, 48 cases/s, ETA 0:39``."""
        now = self.clock()
        share = f" ({self.done / self.total:.0%})" if self.total else ""
        figures = [f"{self.done:,}/{self.total:,} cases{share}", f"errors {self.errors}",
                   "cost ?" if self.spent is None else format_usd(self.spent)]
        elapsed, finished = now - self._started_at, self.done - self._first
        if elapsed > 0 and finished > 0:
            rate = finished / elapsed
            left = round((self.total - self.done) / rate)
            figures += [f"{rate:,.0f} cases/s", f"ETA {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"]
        self.stream.write(f"{self._desc()}: {', '.join(figures)}\n")
        self.stream.flush()
        self._line_at, self._line_done = now, self.done
