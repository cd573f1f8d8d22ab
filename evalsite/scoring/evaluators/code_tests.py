"""``code_tests``: the output is Python code; it passes when the row's unit tests pass.

The program is HumanEval's: the row's prompt (``include_prompt``, the ``prompt_field``), then
the output (a reply that is one fenced block is unwrapped), then the row's tests
(``tests_field``: a string, or a list of statements as MBPP's ``test_list``), then
``check(<entry point>)`` when the row names one (``entry_point_field``; null: the tests are
plain statements). It runs in a separate limited process (:mod:`evalsite.scoring.sandbox`):
``timeout_s`` wall-clock seconds (default 10), ``cpu_s`` CPU seconds (default: the wall clock),
``memory_mb`` of address space (512), ``processes`` (32), at most ``workers`` programs at once
(default 4, this evaluator's own bound whatever the run's concurrency); TCP connections are
refused unless ``network: true`` (where the kernel's Landlock can refuse them).

The label says how it ended: ``passed``, ``failed`` (an assertion), ``error`` (another
exception, or an exit before the tests finished), ``syntax_error``, ``timeout`` (wall clock or
CPU), ``memory`` and ``killed`` (a signal). The detail has the reason and the first
``output_kb`` (8) KB of stdout and stderr.
"""

from __future__ import annotations

import asyncio
import math
import re
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any

from evalsite.jsonshape import JSONObject
from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.text import as_text
from evalsite.scoring.sandbox import Limits, Ran, run_python

CODE_FENCE = re.compile(r"\A\s*```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)\n?[ \t]*```\s*\Z", re.DOTALL | re.IGNORECASE)
FIELDS = {"prompt_field": "input", "tests_field": "tests", "entry_point_field": "entry_point"}
NUMBERS = {"cpu_s": (1, 3600), "memory_mb": (64, 65536), "processes": (1, 4096), "workers": (1, 64),
           "output_kb": (1, 1024)}
DEFAULT_WORKERS = 4
MAX_WALL_S = 86_400  # a day: far past any program's tests, and within what the sandbox's wait can count


@register_evaluator("code_tests")
class CodeTests(Evaluator):
    param_names = ("include_prompt", "network", *FIELDS, *NUMBERS)
    default_timeout_s = 10.0
    runs_code = True
    helper_modules = ("evalsite.scoring.sandbox", "evalsite.scoring.sandbox_child")

    def check(self) -> None:
        if self.timeout_s is None:
            raise ValueError("timeout_s: code_tests needs a wall-clock limit in seconds, not null")
        if self.timeout_s > MAX_WALL_S:
            raise ValueError(f"timeout_s: needs at most {MAX_WALL_S} seconds (a day) for one program, got {self.timeout_s:g}")
        self.include_prompt = self.option("include_prompt", bool, True)
        self.fields = {key: self._field(key, default) for key, default in FIELDS.items()}
        numbers = {key: self._number(key, low, high) for key, (low, high) in NUMBERS.items()}
        self.workers = numbers.pop("workers") or DEFAULT_WORKERS
        output_kb = numbers.pop("output_kb")
        numbers["output_bytes"] = None if output_kb is None else output_kb * 1024
        numbers["cpu_s"] = numbers["cpu_s"] or math.ceil(self.timeout_s)
        given = {key: value for key, value in numbers.items() if value is not None}  # the rest: the sandbox's defaults
        self.limits = Limits(wall_s=self.timeout_s, network=self.option("network", bool, False), **given)
        # the sandbox enforces the wall clock on each program (a wait for a worker is not counted),
        # so the base class's deadline around a whole scoring is off
        self.timeout_s = None

    def _field(self, key: str, default: str) -> str | None:
        if key == "entry_point_field" and key in self.params and self.params[key] is None:
            return None
        field: str = self.option(key, str, default)
        return field

    def _number(self, key: str, low: int, high: int) -> int | None:
        value: int | None = self.option(key, int)
        if value is not None and not low <= value <= high:
            raise ValueError(f"{key}: needs a whole number from {low} to {high}, got {value}")
        return value

    def scoring_params(self) -> JSONObject:
        """The params, with the wall clock (a common key) that decides a timeout; not ``workers``."""
        kept = {k: v for k, v in self.params.items() if k != "workers"}
        return {**kept, "timeout_s": self.limits.wall_s}

    @property
    def waits_on_io(self) -> bool:
        return True

    @cached_property
    def pool(self) -> ThreadPoolExecutor:
        """``workers`` threads, each waiting on one sandboxed process: the bound on programs at once."""
        return ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="evalsite-code-tests")

    def program(self, case: CaseView) -> str:
        """The source to run: prompt, output, tests and the call of ``check``."""
        code = unfenced(as_text(case.output))
        if self.include_prompt:  # HumanEval's completion continues the prompt's function
            code = self._row_text(case, self.fields["prompt_field"]) + code
        parts = [code, self._row_text(case, self.fields["tests_field"])]
        if (entry_field := self.fields["entry_point_field"]) is not None:
            entry_point = self._row_text(case, entry_field)
            if not entry_point.isidentifier():
                raise ScoringError(f"row field {entry_field!r} should name a function, got {entry_point!r}")
            parts.append(f"check({entry_point})")
        return "\n\n".join(parts) + "\n"

    @staticmethod
    def _row_text(case: CaseView, field: str | None) -> str:
        value: Any = case.row.get(field) if field else None
        if isinstance(value, list) and all(isinstance(line, str) for line in value):
            return "\n".join(value)
        if not isinstance(value, str):
            raise ScoringError(f"row has no text field {field!r} (code_tests needs it; see its *_field params)")
        return value

    async def ameasure(self, case: CaseView) -> Outcome:
        program = self.program(case)
        ran = await asyncio.get_running_loop().run_in_executor(self.pool, run_python, program, self.limits)
        if ran.label == "sandbox_error":
            raise ScoringError(f"the sandbox could not be set up, so the program did not run: {ran.message}")
        passed = ran.label == "passed"
        return Outcome(1.0 if passed else 0.0, passed, label=ran.label, detail=describe(ran))


def describe(ran: Ran) -> str:
    """The score's detail: the reason and how long the program ran, then the captured streams
    that are not empty."""
    lines = [f"{ran.message or ran.label} ({ran.seconds:.2f} s)"]
    for name, text in (("stdout", ran.stdout), ("stderr", ran.stderr)):
        if text:
            lines.append(f"--- {name} ---\n{text.rstrip()}")
    return "\n".join(lines)


def unfenced(text: str) -> str:
    """The code of a reply that is one fenced block (```python … ```), else the reply as is."""
    match = CODE_FENCE.match(text)
    return match.group(1) if match else text
