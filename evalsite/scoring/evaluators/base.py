"""The evaluator interface, the registry (:data:`EVALUATORS`), and how a case's scores combine.

An evaluator spec in a manifest is ``{type, name?, weight?, threshold?, scope?, params...}``
(params flat or under ``params:``). ``type`` is a registered family, optionally followed by
``:<reference>`` (``python:module:function``). A class registered under the family builds the
evaluator; its ``version`` hashes the type, params, threshold, scope and the source code that
scores, so a changed scorer makes runs not comparable.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from evalsite.calls.context import UNBOUNDED, Abandoned, CallContext
from evalsite.errors import EvaluatorError
from evalsite.experiment.manifest_shapes import EvaluatorSpec
from evalsite.jsonshape import JSONObject, described
from evalsite.registry import Registry
from evalsite.runlog.hashing import short_hash
from evalsite.runlog.records import Score

COMMON_KEYS = ("type", "name", "weight", "threshold", "scope", "params", "timeout_s")
SCOPES = ("thread", "single_turn")


@dataclass(frozen=True)
class CaseView:
    """What an evaluator sees of a finished generation (or of one turn of it); ``calls`` is the
    context its own model calls run under (a judge's retries stop with the batch)."""

    input: Any
    output: Any
    expected: Any
    row: JSONObject
    latency_ms: float | None = None
    cost_usd: float | None = None
    turn_outputs: list[Any] | None = None  # each turn's output, as ``output`` is the thread's
    transcript: list[JSONObject] | None = None  # the conversation's messages
    turn: int | None = None
    calls: CallContext = field(default=UNBOUNDED, repr=False, compare=False)


@dataclass(frozen=True)
class Outcome:
    """What a scoring function returns; the base class turns it into a :class:`Score`.

    ``passed`` None means the result has no pass rule (a bare number, a label). ``spread`` is
    the range of repeated judgements, when an evaluator samples more than once; ``cost_usd``
    what its model calls cost, when it makes any.
    """

    score: float | None = None
    passed: bool | None = None
    label: str | None = None
    detail: str | None = None
    spread: float | None = None
    skipped: bool = False
    cost_usd: float | None = None

    @classmethod
    def check(cls, ok: bool, detail_if_failed: str | None = None) -> Outcome:
        return cls(1.0 if ok else 0.0, ok, detail=None if ok else detail_if_failed)

    @classmethod
    def skip(cls, reason: str) -> Outcome:
        return cls(detail=reason, skipped=True)


class ScoringError(Exception):
    """A case cannot be scored; the message is recorded as the score's ``error`` as is, with
    ``cost_usd`` what the attempt spent (a judge's calls are paid for even when unparseable)."""

    def __init__(self, message: str, cost_usd: float | None = None):
        super().__init__(message)
        self.cost_usd = cost_usd


@dataclass
class Evaluator:
    """Base class: subclasses implement :meth:`measure` (or :meth:`ameasure` when they await).

    ``param_names`` lists the params a family accepts (None: any); :meth:`check` validates them
    when the evaluator is built and raises ``ValueError`` with a message naming the key.
    ``waits_on_io`` marks evaluators that await slow calls, so a case runs them concurrently.
    ``timeout_s`` bounds one scoring (``default_timeout_s`` when the spec sets none; None: no
    bound): past it the score is an error and the run goes on.
    """

    name: str
    params: JSONObject = field(default_factory=dict)
    weight: float = 1.0
    threshold: float | None = None
    scope: str = "thread"
    reference: str = ""
    project_root: Path = field(default_factory=Path.cwd)
    timeout_s: float | None = None
    run_code: bool = True  # false for `evalsite validate`: check project code without importing it

    kind: ClassVar[str] = "evaluator"
    param_names: ClassVar[tuple[str, ...] | None] = None
    default_threshold: ClassVar[float | None] = None
    scopes: ClassVar[tuple[str, ...]] = SCOPES
    takes_reference: ClassVar[bool] = False
    helper_modules: ClassVar[tuple[str, ...]] = ()
    default_timeout_s: ClassVar[float | None] = None
    runs_code: ClassVar[bool] = False  # scoring runs project code or calls a model (python, llm_judge)

    @property
    def waits_on_io(self) -> bool:
        """Whether scoring awaits slow calls (a model, a coroutine), so a case runs it concurrently."""
        return False

    @property
    def type_name(self) -> str:
        return f"{self.kind}:{self.reference}" if self.reference else self.kind

    @cached_property
    def version(self) -> str:
        identity = {
            "type": self.type_name,
            "params": self.scoring_params(),
            "threshold": self.threshold,
            "scope": self.scope,
            "code": self.code_identity(),
        }
        return short_hash(identity)

    def scoring_params(self) -> JSONObject:
        """The params that decide scores (all of them, unless a family knows better)."""
        return self.params

    def code_identity(self) -> str:
        """The source that decides scores: the family's module and the helper modules it names."""
        modules = [sys.modules[type(self).__module__], *map(importlib.import_module, self.helper_modules)]
        return "\n".join(inspect.getsource(module) for module in modules)

    def describe(self) -> JSONObject:
        """This evaluator's entry in a run header and fingerprint."""
        return {"type": self.type_name, "version": self.version, "weight": self.weight}

    def check(self) -> None:
        """Validate params once, at build time; raise ``ValueError`` naming the bad key."""

    def unset_secrets(self) -> list[str]:
        """Environment variables this evaluator's own calls need that are not set (a judge's key):
        ``validate`` warns, ``run`` refuses before the first call."""
        return []

    def option(self, key: str, kinds: type | tuple[type, ...], default: Any = None) -> Any:
        """A param's value (``default`` when absent or null), checked against ``kinds`` (bool is
        never accepted as a number)."""
        value = self.params.get(key)
        if value is None:
            return default
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            wanted = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
            raise ValueError(f"{key}: needs {wanted}, got {value!r}")
        return value

    def target(self, case: CaseView) -> Any:
        """What the output is compared with: ``params.value`` if given, else the row's expected."""
        return self.params["value"] if "value" in self.params else case.expected

    def measure(self, case: CaseView) -> Outcome:
        raise NotImplementedError

    async def ameasure(self, case: CaseView) -> Outcome:
        return self.measure(case)

    async def aevaluate(self, case: CaseView) -> Score:
        """Score one view; a throwing evaluator records its error and never raises."""
        try:
            if type(self).ameasure is not Evaluator.ameasure:
                async with asyncio.timeout(self.timeout_s):
                    outcome = await self.ameasure(case)
            elif self.timeout_s is None:  # synchronous code: an event-loop deadline could not interrupt it
                outcome = self.measure(case)
            else:  # a thread, so the deadline holds even while the comparison runs
                outcome = await asyncio.wait_for(asyncio.to_thread(self.measure, case), self.timeout_s)
        except TimeoutError:
            return self.error_score(f"timed out after {self.timeout_s:g} s (timeout_s)", case.turn)
        except ScoringError as exc:
            return self.error_score(str(exc), case.turn, exc.cost_usd)
        except Abandoned:  # the batch is stopping: the case stays unrecorded, a resume scores it
            raise
        except Exception as exc:
            return self.error_score(described(exc), case.turn)
        return self.to_score(outcome, case.turn)

    async def ascore(self, case: CaseView) -> list[Score]:
        """Every score this evaluator gives a case: one, or one per turn in ``single_turn`` scope."""
        if self.scope != "single_turn" or case.turn_outputs is None:
            return [await self.aevaluate(case)]
        try:
            views = turn_views(case)
        except ScoringError as exc:
            return [self.error_score(str(exc))]
        return [await self.aevaluate(view) for view in views]

    def to_score(self, outcome: Outcome, turn: int | None = None) -> Score:
        if outcome.skipped:
            return Score(self.name, self.version, passed=False, detail=outcome.detail, skipped=True, turn=turn)
        passed = outcome.passed
        threshold = self.threshold if self.threshold is not None else self.default_threshold
        if threshold is not None and outcome.score is not None:
            passed = outcome.score >= threshold
        return Score(self.name, self.version, outcome.score, passed, outcome.label, outcome.detail,
                     turn=turn, spread=outcome.spread, cost_usd=outcome.cost_usd)

    def error_score(self, message: str, turn: int | None = None, cost_usd: float | None = None) -> Score:
        return Score(self.name, self.version, passed=False, error=message, turn=turn, cost_usd=cost_usd)

    def failed_generation(self, error: str) -> Score:
        return Score(self.name, self.version, score=0.0, passed=False, detail=f"generation failed: {error}")


_KIND_NAMES = {bool: "true or false", int: "a whole number", float: "a number", str: "a string",
               list: "a list", dict: "a mapping"}


def turn_views(case: CaseView) -> list[CaseView]:
    """One view per turn of a multi-turn case: that turn's user message, reply, expected entry,
    and the conversation up to and including that reply."""
    outputs = case.turn_outputs or []
    expected = case.expected
    if isinstance(expected, list) and len(expected) != len(outputs):
        raise ScoringError(f"expected has {len(expected)} entries for {len(outputs)} turns")
    messages = _user_messages(case)
    return [
        CaseView(
            input=messages[index] if index < len(messages) else None,
            output=output,
            expected=expected[index] if isinstance(expected, list) else expected,
            row=case.row,
            transcript=_transcript_through(case.transcript, index + 1),
            turn=index + 1,
            calls=case.calls,
        )
        for index, output in enumerate(outputs)
    ]


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else message


def _user_messages(case: CaseView) -> list[Any]:
    turns = case.row.get("turns")
    if isinstance(turns, list):
        return [_content(t) for t in turns if not isinstance(t, dict) or t.get("role", "user") == "user"]
    return [_content(m) for m in case.transcript or [] if isinstance(m, dict) and m.get("role") == "user"]


def _transcript_through(transcript: list[JSONObject] | None, replies: int) -> list[JSONObject] | None:
    """The messages up to and including the ``replies``-th assistant message."""
    if transcript is None:
        return None
    seen = 0
    for position, message in enumerate(transcript):
        if isinstance(message, dict) and message.get("role") == "assistant":
            seen += 1
            if seen == replies:
                return transcript[: position + 1]
    return list(transcript)


E = TypeVar("E", bound="Evaluator")

#: Each built-in type and its family's module (under evalsite.scoring.evaluators), which registers
#: it when imported: the first time the type is looked up (a run loads only the families its
#: manifest names; the text families load ``regex``, ``similarity`` rapidfuzz, ``code_tests`` the
#: sandbox), every family when all types are listed.
BUILT_IN_FAMILIES = {
    "latency": "ceilings", "cost": "ceilings", "code_tests": "code_tests", "contains": "contains",
    "contains_all": "contains", "contains_any": "contains", "starts_with": "contains", "exact": "exact",
    "grounding": "grounding", "json": "json_output", "json_schema": "json_output", "llm_judge": "judge",
    "length": "length", "numeric": "numeric", "regex": "pattern", "python": "python_code", "similarity": "similarity",
}

EVALUATORS: Registry[type[Evaluator]] = Registry(
    "evaluator", "evalsite.evaluators", EvaluatorError,
    builtins={kind: f"evalsite.scoring.evaluators.{family}" for kind, family in BUILT_IN_FAMILIES.items()})


def register_evaluator(
    kind: str, *, takes_reference: bool = False, replace: bool = False
) -> Callable[[type[E]], type[E]]:
    """Register an :class:`Evaluator` subclass under ``kind`` (the built-ins use this too; a taken
    kind is refused unless ``replace``).

    With ``takes_reference`` the spec's type is ``<kind>:<reference>`` and the evaluator gets
    the reference (``python:module:function`` is built this way).
    """

    def decorate(cls: type[E]) -> type[E]:
        EVALUATORS.register(kind, cls, replace=replace)
        cls.kind = kind
        cls.takes_reference = takes_reference
        return cls

    return decorate


def spec_runs_code(spec: Any) -> bool:
    """Whether the evaluator ``spec`` describes runs project code or calls a model when it scores."""
    kind = str(spec.get("type", "")).partition(":")[0] if isinstance(spec, dict) else ""
    cls = EVALUATORS.find(kind) if kind else None
    return cls is not None and cls.runs_code


def evaluator_types() -> list[str]:
    """Every type as a spec writes it (``python:…`` for a family that takes a reference), plugins' included."""
    return [f"{kind}:…" if EVALUATORS.get(kind).takes_reference else kind for kind in EVALUATORS.names()]


def _spec_problems(spec: EvaluatorSpec) -> list[str]:
    problems = []
    weight = spec.get("weight", 1.0)
    if not _is_number(weight) or weight < 0:
        problems.append(f"weight: needs a number of at least 0, got {weight!r}")
    threshold = spec.get("threshold")
    if threshold is not None and (not _is_number(threshold) or not 0 <= threshold <= 1):
        problems.append(f"threshold: needs a number from 0 to 1, got {threshold!r}")
    if spec.get("scope", "thread") not in SCOPES:
        problems.append(f"scope: needs one of {', '.join(SCOPES)}, got {spec.get('scope')!r}")
    if "params" in spec and not isinstance(spec["params"], dict):
        problems.append("params: needs a mapping")
    timeout = spec.get("timeout_s")
    if timeout is not None and (not _is_number(timeout) or timeout <= 0):
        problems.append(f"timeout_s: needs a number of seconds > 0, got {timeout!r}")
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def build_evaluator(spec: Any, index: int, project_root: Path | None = None, *, run_code: bool = True) -> Evaluator:
    where = f"evaluators[{index}]"
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise EvaluatorError(f"{where}: needs a mapping with a 'type'")
    kind, _, reference = spec["type"].partition(":")
    cls = EVALUATORS.find(kind)
    if cls is None:
        raise EvaluatorError(f"{where}.type: {EVALUATORS.unknown(spec['type'], evaluator_types())}")
    if cls.takes_reference != bool(reference):
        form = f"'{kind}:<reference>'" if cls.takes_reference else f"'{kind}' with nothing after it"
        raise EvaluatorError(f"{where}.type: {spec['type']!r} should be written {form}")
    where = f"{where} ({spec.get('name') or spec['type']})"
    problems = _spec_problems(spec)
    if problems:
        raise EvaluatorError(f"{where}: " + "; ".join(problems))
    params = {k: v for k, v in spec.items() if k not in COMMON_KEYS}
    params.update(spec.get("params") or {})
    if cls.param_names is not None and (unknown := sorted(set(params) - set(cls.param_names))):
        allowed = ", ".join(sorted({*COMMON_KEYS, *cls.param_names}))
        raise EvaluatorError(f"{where}: unknown key {unknown[0]!r} (allowed: {allowed})")
    scope = spec.get("scope", "thread")
    if scope not in cls.scopes:
        raise EvaluatorError(f"{where}.scope: {kind} supports only {', '.join(cls.scopes)}")
    evaluator = cls(
        name=str(spec.get("name") or spec["type"]),
        params=params,
        weight=float(spec.get("weight", 1.0)),
        threshold=spec.get("threshold"),
        scope=scope,
        reference=reference,
        project_root=Path(project_root) if project_root is not None else Path.cwd(),
        timeout_s=_timeout(spec, cls.default_timeout_s),
        run_code=run_code,
    )
    try:
        evaluator.check()
    except ValueError as exc:
        raise EvaluatorError(f"{where}: {exc}") from None
    if not run_code:
        return evaluator  # a python evaluator's version needs its imported source
    try:
        _ = evaluator.version  # computed now, so unreadable source fails here and not mid-run
    except (OSError, TypeError) as exc:
        raise EvaluatorError(f"{where}: cannot read the source that scores, for its version: {exc}") from None
    return evaluator


def _timeout(spec: EvaluatorSpec, default: float | None) -> float | None:
    """``timeout_s`` as given; an explicit null is no deadline; absent, the family's default."""
    if "timeout_s" not in spec:
        return default
    return None if spec["timeout_s"] is None else float(spec["timeout_s"])


def build_evaluators(specs: list[EvaluatorSpec], project_root: Path | None = None, *, run_code: bool = True) -> list[Evaluator]:
    """Build a manifest's evaluators, reporting every bad spec at once.

    ``project_root`` is where ``python:`` evaluators and judge targets are imported from
    (default: the current folder). With ``run_code`` false they are only checked in their source
    (:mod:`evalsite.python_refs`), never imported: such evaluators are for checking, not scoring.
    """
    evaluators: list[Evaluator] = []
    problems: list[str] = []
    for index, spec in enumerate(specs):
        try:
            evaluators.append(build_evaluator(spec, index, project_root, run_code=run_code))
        except EvaluatorError as exc:
            problems.append(exc.message)
    if problems:
        raise EvaluatorError("; ".join(problems))
    names = [e.name for e in evaluators]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvaluatorError(f"evaluators: duplicate name {duplicates[0]!r}; give each a distinct 'name'")
    return evaluators


def describe_evaluators(evaluators: list[Evaluator]) -> dict[str, JSONObject]:
    """The evaluators' entry in a run header and its fingerprint: name → type, version, weight…"""
    return {e.name: e.describe() for e in evaluators}
