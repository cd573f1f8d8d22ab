"""The target interface and registry.

Kinds come from :func:`register_target` calls into :data:`TARGETS`: the built-ins' and those of
installed packages that declare an ``evalsite.targets`` entry point (loaded the first time an
unknown kind is asked for; :mod:`evalsite.registry`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from evalsite.errors import TargetError
from evalsite.jsonshape import JSONObject, as_text
from evalsite.registry import Registry
from evalsite.runlog.fields import shown
from evalsite.runlog.records import MAX_COST_USD, MAX_TOKENS
from evalsite.runlog.secrets import SecretPattern, looks_secret, scrub_all

Number = TypeVar("Number", int, float)


@dataclass(frozen=True)
class TargetRequest:
    """What a target is asked: the rendered input plus the row it came from."""

    input: Any
    row: JSONObject
    params: JSONObject
    repeat: int
    item_id: str
    thread_id: str | None = None  # one id for every call of a multi-turn replay (sent as THREAD_HEADER)
    checkpoint: JSONObject | None = None  # {id, path} on a checkpoint axis (path None for 'none')


THREAD_HEADER = "X-Evalsite-Thread"


COMMON_SETTINGS = {"timeout"}  # read by the runner for every target: seconds per call
RESULT_KEYS = ("output", "input_tokens", "output_tokens", "cost_usd", "finish_reason", "cache_read_tokens",
               "cache_write_tokens")


@dataclass
class TargetResult:
    """What a target answers. ``error`` set means the generation failed for good (no retry).

    Provenance, when the provider says: ``request_id`` (the response ``id``), ``served_model``
    (the model that answered, which may differ from the one asked for) and ``system_fingerprint``.
    ``called`` is false when no model was called for it (a pre step failed first, or the study's
    emulated mock answered): such an attempt is not counted in a case's ``attempts``, and the
    response cache neither stores nor marks it. ``transcript``, when the call held a conversation
    of its own (the model called tools: :mod:`evalsite.calls.targets.tools`), is every message of
    it, the request's included; the case records it. ``cache_read_tokens`` and
    ``cache_write_tokens`` are the part of ``input_tokens`` the provider read from its prompt cache
    or wrote to it (0 when it says none): they are priced at the arm's ``price.cache_read`` and
    ``price.cache_write`` (:func:`call_cost`).
    """

    output: Any = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    finish_reason: str | None = None
    error: str | None = None
    extra: JSONObject = field(default_factory=dict)
    request_id: str | None = None
    served_model: str | None = None
    system_fingerprint: str | None = None
    called: bool = True
    transcript: list[Any] | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class TransientTargetError(Exception):
    """Raised by a target for a failure worth retrying (timeout, connection error, 429, 5xx).

    The runner retries with backoff up to ``schedule.max_attempts``, waiting at least
    ``retry_after`` seconds when the provider said how long to wait.
    """

    def __init__(self, message: str, retry_after: float | None = None, request_id: str | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.request_id = request_id


class Target(Protocol):
    """``replays_turns`` (optional, default true): whether ``turns`` rows are replayed turn by turn."""

    kind: str

    async def generate(self, request: TargetRequest) -> TargetResult: ...

    async def aclose(self) -> None: ...


def text_or_none(value: Any) -> str | None:
    """A provenance field as a response gives it: a non-empty string, else unknown."""
    return value if isinstance(value, str) and value else None


def result_from_value(value: Any) -> TargetResult:
    """A target's answer as a result: a dict of :data:`RESULT_KEYS`, else the output itself."""
    if isinstance(value, dict):
        unknown = set(value) - set(RESULT_KEYS)
        if unknown:
            return TargetResult(error=f"target returned unknown keys: {', '.join(sorted(map(as_text, unknown)))}")
        if "output" not in value:
            return TargetResult(error="target returned a dict without 'output'")
        none_cached = {key: 0 for key in ("cache_read_tokens", "cache_write_tokens") if value.get(key, 0) is None}
        return checked_result(TargetResult(**{**value, **none_cached}))
    if value is None:
        return TargetResult(error="target returned None instead of an output")
    return TargetResult(output=value)


def checked_result(result: TargetResult) -> TargetResult:
    """``result``, or, when a number it reports is unusable, the same reply with the numbers left
    out and an error naming the value: a NaN or negative billed cost would otherwise be recorded
    and switch off ``--max-cost`` (``spent + nan`` never reaches a ceiling). A finish reason that is
    not text is left out the same way: every reader of the run log skips a case line holding one."""
    problem = result_problem(result)
    if problem is None:
        return result
    reason = result.finish_reason if isinstance(result.finish_reason, str) else None
    return dataclasses.replace(result, input_tokens=None, output_tokens=None, cost_usd=None, cache_read_tokens=0,
                               cache_write_tokens=0, finish_reason=reason, error=result.error or problem)


def result_problem(result: TargetResult) -> str | None:
    """Why a token count or billed cost from outside (a provider, a project's code) cannot be
    kept: the ranges are the run log's (:data:`evalsite.runlog.records.CASE_RANGES`)."""
    for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        count = getattr(result, key)
        if count is None or (type(count) is int and 0 <= count <= MAX_TOKENS):  # an exact int: nearly every count
            continue
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_TOKENS:
            return f"target returned {key}={shown(count)}; expected a whole number from 0 to {MAX_TOKENS} or null"
    cached = (result.cache_read_tokens or 0) + (result.cache_write_tokens or 0)
    if cached and result.input_tokens is not None and cached > result.input_tokens:
        return (f"target returned cache_read_tokens + cache_write_tokens = {cached}, more than "
                f"input_tokens={result.input_tokens} (they are part of it)")
    cost = result.cost_usd
    if cost is not None and not is_cost(cost):
        return f"target returned cost_usd={shown(cost)}; expected a finite number from 0 to {MAX_COST_USD:g} or null"
    if result.finish_reason is not None and not isinstance(result.finish_reason, str):  # the run log's readers skip such a line
        return f"target returned finish_reason={shown(result.finish_reason)}; expected text or null"
    return None


def is_cost(value: Any) -> bool:
    """A usable amount of US dollars for one case: a number from 0 to :data:`MAX_COST_USD` (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_COST_USD


def token_count(value: Any) -> int | None:
    """A token count as a provider's ``usage`` gives it: a whole number, or a float that is one
    (``12.0``, as some OpenAI-compatible servers send); anything else (``12.5``, NaN, ``"12"``) is
    an unknown count — which, with a cost ceiling, stops the run (execute/stopping.py)."""
    if type(value) is int:  # nearly every count (a bool's type is bool)
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def refuse_secret_names(mapping: JSONObject, key: str, instead: str) -> None:
    """Literal settings are recorded with the run, so a secret-looking name must come from the environment."""
    for name in mapping:
        if looks_secret(name):
            raise TargetError(
                f"settings.{key}.{name}: looks like a secret and would be recorded with the run; {instead}"
            )


def check_settings(kind: str, settings: JSONObject, allowed: set[str]) -> None:
    """Refuse unknown settings keys (a typo such as ``base_ur`` must not pass silently)."""
    if "api_key" in settings:
        raise TargetError(
            f"settings.api_key: never write a key in a manifest (it would be recorded with the run); "
            f"put it in an environment variable and name that in settings.api_key_env (target {kind})"
        )
    unknown = sorted(set(settings) - allowed - COMMON_SETTINGS)
    if unknown:
        known = ", ".join(sorted(allowed | COMMON_SETTINGS))
        raise TargetError(f"settings: unknown key {unknown[0]!r} for target {kind} (known: {known})")


TargetFactory = Callable[[str, JSONObject, Path], Target]


@dataclass(frozen=True)
class TargetKind:
    """A registered kind: its factory ``(spec_rest, settings, project_root) -> Target``, and whether
    the rest of the spec names the model (``openai:gpt-4o``), so ``params.model`` can supply it."""

    factory: TargetFactory
    model_in_spec: bool = False


TARGETS: Registry[TargetKind] = Registry("target", "evalsite.targets", TargetError, unknown_as="target kind")


def register_target(kind: str, *, model_in_spec: bool = False, replace: bool = False) -> Callable[[TargetFactory], TargetFactory]:
    """Register a factory ``(spec_rest, settings, project_root) -> Target`` for ``kind`` (a taken
    kind is refused unless ``replace``); ``model_in_spec``: the rest of the spec names the model."""

    def decorate(factory: TargetFactory) -> TargetFactory:
        TARGETS.register(kind, TargetKind(factory, model_in_spec), replace=replace, module=factory.__module__)
        return factory

    return decorate


def target_kinds() -> list[str]:
    """Every kind, the installed plugins' included."""
    return TARGETS.names()


def with_model(spec: str, model: Any) -> str:
    """A kind written alone takes ``params.model``: ``openai`` with model ``gpt-4o`` is
    ``openai:gpt-4o`` (so ``{target: openai, params: {model: …}}`` reads as it says, and a sweep
    over ``model`` reaches the request)."""
    if ":" in spec or not isinstance(model, str) or not model:
        return spec
    kind = TARGETS.find(spec)
    if kind is None or not kind.model_in_spec:
        return spec
    return f"{spec}:{model}"


def make_target(spec: str, settings: JSONObject, project_root: Path, *, fresh: bool = False) -> Target:
    """The target ``spec`` names. ``fresh`` (``schedule.reset_state``): one sharing no state with any
    other target — a kind whose state outlives an instance (the module of a ``python:`` target or
    of a tool handler) offers ``renewed()``, a copy with that state made anew."""
    name, _, rest = spec.partition(":")
    target = TARGETS.get(name).factory(rest, settings, project_root)
    renewed = getattr(target, "renewed", None) if fresh else None
    return renewed() if renewed is not None else target


def replays_turns(target: Target) -> bool:
    return getattr(target, "replays_turns", True)


def target_secrets(target: Target) -> list[str]:
    """Values the target read from the environment (``secrets``, optional): scrubbed from its cases.

    A wrapper (the response cache, the study's pre steps) holds the real target as ``inner``;
    its secrets are those of every target beneath it, so wrapping never turns scrubbing off."""
    found: list[str] = []
    layer: object = target
    while layer is not None:
        found += getattr(layer, "secrets", None) or ()
        layer = getattr(layer, "inner", None)
    return found


def scrubbed_result(result: TargetResult, secrets: SecretPattern | None) -> TargetResult:
    """``result`` with every piece of a secret scrubbed from each field (:func:`evalsite.runlog.secrets.scrub`),
    ``extra`` (the harness's own marks) apart. Applied to every answer before it is scored, cached or
    replayed, so a provider echoing the key is scrubbed the same with the cache on or off."""
    if secrets is None:
        return result
    scrubbed = {f.name: scrub_all(getattr(result, f.name), secrets) for f in dataclasses.fields(result) if f.name != "extra"}
    return dataclasses.replace(result, **scrubbed)


#: the keys of a ``price`` (US dollars per million tokens): input and output required, the two
#: prompt-cache prices optional (the ``input`` price when not given)
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


def call_cost(result: TargetResult, price: Mapping[str, Any] | None) -> float | None:
    """Billed cost when the target reports it, else tokens × ``price`` (USD per million input and
    output tokens; the input tokens read from or written to the provider's prompt cache at
    ``cache_read`` and ``cache_write``, each the ``input`` price when not given); ``None``
    (unknown, never 0) when neither is known. A reported cost or count that
    :func:`result_problem` refuses is unknown here too (a judge's reply, say), never NaN, and so
    is a price times tokens above :data:`MAX_COST_USD`."""
    return None if result_problem(result) is not None else checked_cost(result, price)


def checked_cost(result: TargetResult, price: Mapping[str, Any] | None) -> float | None:
    """:func:`call_cost` of a result :func:`checked_result` returned (whose numbers hold by then)."""
    if result.cost_usd is not None:
        return result.cost_usd
    if not price or result.input_tokens is None or result.output_tokens is None:
        return None
    per_input = price.get("input", 0)
    read, written = result.cache_read_tokens, result.cache_write_tokens
    cost = ((result.input_tokens - read - written) * per_input + read * price.get("cache_read", per_input)
            + written * price.get("cache_write", per_input) + result.output_tokens * price.get("output", 0)) / 1e6
    return cost if is_cost(cost) else None  # an absurd price: unknown, never Infinity


def total_or_none(values: Iterable[Number | None]) -> Number | None:
    """The sum (tokens stay whole numbers, costs dollars), or ``None`` when any value is unknown."""
    known: list[Number] = []
    for value in values:
        if value is None:
            return None
        known.append(value)
    return sum(known[1:], known[0]) if known else 0
