"""``python:module:function``: a function from the project scores the case.

The function takes the keyword arguments it declares among ``output``, ``expected``, ``input``,
``row``, ``latency_ms``, ``cost_usd``, ``transcript``, ``turn_outputs``, ``turn``, ``params``
and ``case`` (the whole view), may be ``async``, and returns:

- a bool — score 1 or 0, passed or failed;
- a number from 0 to 1 — the score; it passes at ``threshold`` when one is set;
- a string — a label (passes when it is in the ``pass_labels`` param, if given);
- None — skipped;
- a mapping with any of ``score``, ``passed``, ``label``, ``detail``.

Its version hashes the function's source and, transitively, the source of the functions and
classes it uses from the project (and the values of simple constants they read), so editing
the scorer or a helper it calls makes new runs not comparable with old ones.

A sync function runs in a daemon thread so that ``timeout_s`` (default 30 s) can end its score:
past the deadline the score is an error and the case goes on, but a thread cannot be killed, so
the function keeps running in the background until it returns (its result is then dropped) and
a function that never returns holds its thread until evalsite exits. The hand-over costs about
0.1 ms a case; ``timeout_s: null`` (no deadline) runs it inline instead.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalsite.errors import EvalsiteError
from evalsite.jsonshape import JSONObject
from evalsite.project import load_callable
from evalsite.python_refs import check_reference
from evalsite.runlog.hashing import canonical_json
from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator

OFFERED = ("output", "expected", "input", "row", "latency_ms", "cost_usd", "transcript", "turn_outputs",
           "turn", "params", "case")
RESULT_KEYS = ("score", "passed", "label", "detail")
SIMPLE_CONSTANTS = (str, int, float, bool, type(None), tuple, list, dict, frozenset, set)


@register_evaluator("python", takes_reference=True)
class PythonFunction(Evaluator):
    """A user's scoring function; ``params`` other than ``pass_labels`` are passed to it."""

    param_names = None
    default_timeout_s = 30.0
    runs_code = True

    def check(self) -> None:
        if not self.run_code:
            self._check_source()
        else:
            self._import()
        unknown = sorted(self.accepted - set(OFFERED))
        if unknown:
            raise ValueError(
                f"{self.reference} takes {unknown[0]!r}, which evalsite cannot supply (it offers: {', '.join(OFFERED)})"
            )
        labels = self.option("pass_labels", list)
        self.pass_labels = None if labels is None else set(labels)

    def _import(self) -> None:
        try:
            self.function: Callable[..., Any] | None = load_callable(self.reference, self.project_root, "evaluator function")
        except EvalsiteError as exc:
            raise ValueError(exc.message) from None
        except Exception as exc:  # the module itself raised while being imported
            raise ValueError(f"importing {self.reference} failed: {type(exc).__name__}: {exc}") from None
        parameters = inspect.signature(self.loaded).parameters.values()
        self.takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters)
        self.accepted = {p.name for p in parameters if p.kind is not p.VAR_KEYWORD}

    def _check_source(self) -> None:
        """``evalsite validate``: the function is found in its module's source, nothing is imported."""
        try:
            shape = check_reference(self.reference, self.project_root, "evaluator function")
        except EvalsiteError as exc:
            raise ValueError(exc.message) from None
        self.function = None
        self.takes_all = bool(shape.takes_all)
        self.accepted = set(shape.parameters or ())

    @property
    def loaded(self) -> Callable[..., Any]:
        """The imported function; ``validate`` checks its source without importing it."""
        if self.function is None:
            raise ScoringError(f"{self.reference} was checked without being imported, so it cannot score")
        return self.function

    @property
    def waits_on_io(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    def code_identity(self) -> str:
        return source_closure(self.loaded, self.project_root)

    def _arguments(self, case: CaseView) -> dict[str, Any]:
        params = {k: v for k, v in self.params.items() if k != "pass_labels"}
        offered = {
            "output": case.output, "expected": self.target(case), "input": case.input, "row": case.row,
            "latency_ms": case.latency_ms, "cost_usd": case.cost_usd, "transcript": case.transcript,
            "turn_outputs": case.turn_outputs, "turn": case.turn, "params": params, "case": case,
        }
        return offered if self.takes_all else {k: v for k, v in offered.items() if k in self.accepted}

    async def ameasure(self, case: CaseView) -> Outcome:
        function = self.loaded
        if inspect.iscoroutinefunction(function):
            value = await function(**self._arguments(case))
        elif self.timeout_s is None:  # no deadline: inline, the cheapest (a hang hangs the run)
            value = function(**self._arguments(case))
        else:
            value = await in_daemon_thread(function, self._arguments(case))
        if inspect.isawaitable(value):
            value = await value
        return self.as_outcome(value)

    def as_outcome(self, value: Any) -> Outcome:
        if value is None:
            return Outcome.skip(f"{self.reference} returned None")
        if isinstance(value, bool):
            return Outcome.check(value)
        if isinstance(value, (int, float)):
            return Outcome(_unit_score(value, self.reference))
        if isinstance(value, str):
            return Outcome(label=value, passed=None if self.pass_labels is None else value in self.pass_labels)
        if isinstance(value, dict):
            return self._from_mapping(value)
        raise ScoringError(
            f"{self.reference} returned a {type(value).__name__}; return a bool, a number from 0 to 1, "
            "a label, None, or a mapping with score, passed, label, detail"
        )

    def _from_mapping(self, value: JSONObject) -> Outcome:
        unknown = sorted(set(value) - set(RESULT_KEYS))
        if unknown:
            raise ScoringError(f"{self.reference} returned unknown key {unknown[0]!r} (allowed: {', '.join(RESULT_KEYS)})")
        score, passed, label, detail = (value.get(k) for k in RESULT_KEYS)
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise ScoringError(f"{self.reference} returned score {score!r}; it must be a number from 0 to 1")
            score = _unit_score(score, self.reference)
        if passed is not None and not isinstance(passed, bool):
            raise ScoringError(f"{self.reference} returned passed {passed!r}; it must be true or false")
        if passed is None and label is not None and self.pass_labels is not None:
            passed = label in self.pass_labels
        if score is None and passed is None and label is None:
            return Outcome.skip(as_optional_text(detail) or f"{self.reference} returned no score, passed or label")
        return Outcome(score, passed, None if label is None else str(label), as_optional_text(detail))


async def in_daemon_thread(function: Callable[..., Any], arguments: JSONObject) -> Any:
    """``function(**arguments)`` in a new daemon thread, awaited: the caller's deadline can give up
    on it, and a call that never returns does not keep evalsite from exiting (an executor's
    threads would be joined at exit)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():  # the caller may have given up already
            future.set_result(value) if ok else future.set_exception(value)

    def work() -> None:
        try:
            outcome = (True, function(**arguments))
        except BaseException as exc:  # handed to the awaiting coroutine, which records it
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop has closed: nobody is waiting any more
            pass

    threading.Thread(target=work, name="evalsite-scorer", daemon=True).start()
    return await future


def as_optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _unit_score(value: float, reference: str) -> float:
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise ScoringError(f"{reference} returned {value!r}; scores must be numbers from 0 to 1")
    return float(value)


def source_closure(function: Callable[..., Any], project_root: Path) -> str:
    """The source of ``function`` and of every function or class defined in the project that
    it reaches through global names, plus the simple constants those read."""
    root = Path(project_root).resolve()
    parts: dict[str, str] = {}
    pending: list[Any] = [inspect.unwrap(function)]
    while pending:
        item = pending.pop()
        key = f"{item.__module__}.{item.__qualname__}"
        if key in parts:
            continue
        parts[key] = inspect.getsource(item)
        namespace = vars(sys.modules[item.__module__])
        for name in sorted(_global_names(item)):
            value = namespace.get(name)
            if (inspect.isfunction(value) or inspect.isclass(value)) and _defined_under(value, root):
                pending.append(inspect.unwrap(value))
            elif isinstance(value, SIMPLE_CONSTANTS):
                parts[f"{item.__module__}.{name}"] = _constant_text(value)
    return canonical_json(parts)


def _global_names(item: Any) -> set[str]:
    functions = [item] if inspect.isfunction(item) else [v for v in vars(item).values() if inspect.isfunction(v)]
    names: set[str] = set()
    codes = [f.__code__ for f in functions]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return names


def _defined_under(value: Any, root: Path) -> bool:
    try:
        source_file = inspect.getsourcefile(value)
    except TypeError:  # built-in
        return False
    return source_file is not None and root in Path(source_file).resolve().parents


def _constant_text(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        return repr(sorted(map(repr, value)))
    return canonical_json(value)
