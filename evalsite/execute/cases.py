"""One case: the prepared input, the target call (or a replayed conversation), the scores, the record."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalsite.calls.context import CallContext
from evalsite.calls.retry import CallOutcome, RetryPolicy, call_with_retries
from evalsite.calls.targets import TargetRequest, TargetResult, replays_turns, total_or_none
from evalsite.calls.targets.base import Target, checked_cost, checked_result, scrubbed_result, target_secrets
from evalsite.calls.targets.turns import assistant_replies
from evalsite.errors import DatasetError, ManifestError
from evalsite.execute.cache import HIT, case_cache_mark
from evalsite.experiment.datasets import Item
from evalsite.experiment.manifest_shapes import PriceSpec
from evalsite.experiment.plan import Config, Plan
from evalsite.experiment.prompts import render_input
from evalsite.experiment.turns import TurnsError, normalise_turns
from evalsite.runlog.builders import Execution, case_json
from evalsite.runlog.rows import is_critical
from evalsite.runlog.secrets import SecretPattern, scrub_all, secret_pattern
from evalsite.runlog.store import now_iso
from evalsite.scoring.case import score_case, scoring_cost, unscored
from evalsite.scoring.evaluators import CaseView, Evaluator


@dataclass(frozen=True)
class PreparedInput:
    """A row's input, rendered before anything is spent; ``turns`` set for a multi-turn row."""

    input: object
    turns: list[dict[str, Any]] | None = None
    checkpoint: dict[str, Any] | None = None  # {id, path} the case starts from: the config's, else the item's own


@dataclass
class Job:
    config: Config
    target: Target
    policy: RetryPolicy
    inputs: dict[str, PreparedInput]
    resume_directory: Path | None = None
    emulated: bool = False  # emulation.infra.llm: mock answers instead of the target
    fresh: Callable[[], Target] | None = None  # schedule.reset_state: builds each case's own target
    secrets: SecretPattern | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.secrets = secret_pattern(target_secrets(self.target))


@dataclass
class Generation:
    """One case's generation, single call or replayed conversation."""

    result: TargetResult
    cost_usd: float | None
    latency_ms: float
    attempts: int
    transcript: list[dict[str, Any]] | None = None
    turn_outputs: list[Any] | None = None
    turn_figures: list[dict[str, Any]] | None = None  # a replay's calls: latency, tokens and cost of each, in order
    provenance: dict[str, Any] | None = None  # request ids, served model, fingerprint, thread: see provenance()
    cache: str | None = None  # hit | recorded | missing, with the response cache on


def prepare_input(plan: Plan, item: Item, config: Config, replaying: bool) -> PreparedInput:
    """The input a case sends, rendered before anything is spent (a ``turns`` row keeps its turns)."""
    prompt, row = plan.manifest.prompt, item.row
    checkpoint = config.checkpoint or plan.item_checkpoints.get(item.item_id)
    try:
        if "turns" not in row:
            return PreparedInput(render_input(prompt, row, config.prompt_variables), checkpoint=checkpoint)
        turns = normalise_turns(row["turns"])
        if not replaying:
            return PreparedInput(turns, turns, checkpoint)
        prefix = [] if prompt is None else render_input(prompt, row, config.prompt_variables)
        prefix = [{"role": "system", "content": prefix}] if isinstance(prefix, str) else prefix
        return PreparedInput(prefix, turns, checkpoint)
    except TurnsError as exc:
        raise DatasetError(f"{plan.dataset.path}: item {item.item_id!r}: {exc}") from None
    except ManifestError as exc:
        raise ManifestError(f"{exc.message} (item {item.item_id!r})") from None


@dataclass
class CaseExecutor:
    """Executes cases for a batch: ``calls`` is the batch's call context (its stop predicate,
    budget and deadline), under which the generation and every judge call."""

    evaluators: list[Evaluator]
    calls: CallContext
    rng: random.Random  # backoff jitter only
    experiment: str = ""  # names the thread id of a multi-turn replay

    def execute(self, job: Job, item: Item, repeat: int) -> Awaitable[dict[str, Any]]:
        """One case: its generation (one call, or a replayed conversation), scored, as a cases.jsonl
        record; with ``job.fresh`` (``schedule.reset_state``) through a target of its own, closed after.
        Not a coroutine itself: one layer less to enter and resume, once a case."""
        if job.fresh is None:
            return self._execute(job, item, repeat)
        return self._execute_own(replace(job, target=job.fresh()), item, repeat)

    async def _execute_own(self, job: Job, item: Item, repeat: int) -> dict[str, Any]:
        """A case through a target built for it alone, closed after."""
        try:
            return await self._execute(job, item, repeat)
        finally:
            await job.target.aclose()

    async def _execute(self, job: Job, item: Item, repeat: int) -> dict[str, Any]:
        started_at = now_iso()
        prepared = job.inputs[item.item_id]
        case_input: object
        if prepared.turns is not None and replays_turns(job.target):
            generation = await self._replay(job, item, repeat, prepared)
            case_input = prepared.turns
        else:
            generation = await self._generate(job, item, repeat, prepared.input)
            case_input = prepared.input
            if prepared.turns is not None:  # a recorded conversation scored as it is
                generation.transcript = prepared.turns
                generation.turn_outputs = assistant_replies(prepared.turns)
        result, expected = generation.result, item.row.get("expected")
        if self.evaluators:
            view = CaseView(
                input=case_input, output=result.output, expected=expected, row=item.row,
                latency_ms=generation.latency_ms, cost_usd=generation.cost_usd,
                turn_outputs=generation.turn_outputs, transcript=generation.transcript, calls=self.calls,
            )
            scored = await score_case(self.evaluators, view, result.error)
        else:  # what score_case gives, without the view no evaluator reads
            scored = unscored(result.error)
        # both in their fields' order, without keywords: matching 27 keywords cost ~4 µs a case
        execution = Execution(
            is_critical(item.row), scoring_cost(scored.scores), generation.attempts, job.emulated,
            None if prepared.checkpoint is None else prepared.checkpoint["id"], generation.cache,
            generation.transcript, generation.turn_outputs, generation.turn_figures, generation.provenance or {},
        )
        case = case_json(
            item.item_id, item.sha, repeat, case_input, expected, result.output, result.error,
            round(generation.latency_ms, 3), result.input_tokens, result.output_tokens, generation.cost_usd,
            result.finish_reason, scored.scores, scored.score, scored.passed, started_at, execution,
        )
        line: dict[str, Any] = scrub_all(case, job.secrets)  # an echoed key (or 8+ characters of it) is never written
        return line

    async def _call(self, job: Job, item: Item, repeat: int, rendered: object, thread_id: str | None = None) -> CallOutcome:
        # input, row, params, repeat, item_id, thread_id, checkpoint: without keywords, as a case's line is built
        request = TargetRequest(rendered, item.row, job.config.params, repeat, item.item_id, thread_id,
                                job.inputs[item.item_id].checkpoint)
        call = await call_with_retries(job.target, request, job.policy, self.calls, self.rng)
        extra = call.result.extra
        hit = extra.get("cache") == HIT
        if hit and extra.get("latency_ms") is not None:
            # a hit reports the latency recorded with the response, and no call made
            call = replace(call, latency_ms=extra["latency_ms"], attempts=0)
        # every target's numbers checked, plugins' too; secrets scrubbed before anything scores the reply
        checked = scrubbed_result(checked_result(call.result), job.secrets)
        if not hit:  # a hit spends nothing; what a call spent counts at once
            self.calls.spend(checked_cost(checked, job.config.price))
        return call if checked is call.result else replace(call, result=checked)

    async def _generate(self, job: Job, item: Item, repeat: int, rendered: object) -> Generation:
        call = await self._call(job, item, repeat, rendered)
        return Generation(call.result, checked_cost(call.result, job.config.price), call.latency_ms, call.attempts,
                          transcript=call.result.transcript, provenance=provenance([call]),
                          cache=case_cache_mark([call.result]))

    async def _replay(self, job: Job, item: Item, repeat: int, prepared: PreparedInput) -> Generation:
        """Each user turn is sent with the history so far, the target's own replies included; every
        call carries the replay's one thread id."""
        history: list[dict[str, Any]] = list(prepared.input) if isinstance(prepared.input, list) else []  # a replay's prefix
        thread_id = f"exp-{self.experiment}-{item.item_id}-{repeat}"
        calls: list[CallOutcome] = []
        for message in prepared.turns or []:
            if message["role"] == "assistant":  # a recorded answer: the target gives its own instead
                continue
            history.append(message)
            if message["role"] != "user":
                continue
            call = await self._call(job, item, repeat, list(history), thread_id)
            calls.append(call)
            if call.result.transcript is not None:  # the turn's own conversation: tool calls and results
                history = list(call.result.transcript)
            elif call.result.error is None:
                reply = call.result.output
                history.append({"role": "assistant", "content": reply if isinstance(reply, str) else str(reply)})
            if call.result.error is not None:
                break
        generation = combine_turns(calls, history, job.config.price)
        generation.provenance = {**provenance(calls), "thread_id": thread_id}
        return generation


def provenance(calls: list[CallOutcome]) -> dict[str, Any]:
    """What a case records of who answered: every call's request id in order (retries included),
    and the served model and system fingerprint of its last answer, when the provider said."""
    answered = [call.result for call in calls if call.result.error is None] or [call.result for call in calls]
    last = answered[-1] if answered else None
    record: dict[str, Any] = {}
    if ids := [request_id for call in calls for request_id in call.request_ids]:
        record["request_ids"] = ids
    if last is not None and last.served_model is not None:
        record["served_model"] = last.served_model
    if last is not None and last.system_fingerprint is not None:
        record["system_fingerprint"] = last.system_fingerprint
    return record


def combine_turns(calls: list[CallOutcome], transcript: list[dict[str, Any]], price: PriceSpec | None) -> Generation:
    """A replay's case: summed latency, tokens and cost (unknown if any turn's is), the last reply."""
    results = [call.result for call in calls]
    failed = next(((n, r) for n, r in enumerate(results, start=1) if r.error is not None), None)
    costs = [checked_cost(r, price) for r in results]  # each as _call checked it
    reasons = [r.finish_reason for r in results]
    combined = TargetResult(
        output=None if failed else results[-1].output,
        input_tokens=total_or_none(r.input_tokens for r in results),
        output_tokens=total_or_none(r.output_tokens for r in results),
        finish_reason="length" if "length" in reasons else reasons[-1],
        error=f"turn {failed[0]}: {failed[1].error}" if failed else None,
    )
    return Generation(
        result=combined,
        cost_usd=total_or_none(costs),
        latency_ms=sum(call.latency_ms for call in calls),
        attempts=sum(call.attempts for call in calls),
        transcript=transcript,
        turn_outputs=[r.output for r in results if r.error is None],
        turn_figures=[{"latency_ms": round(call.latency_ms, 3), "input_tokens": call.result.input_tokens,
                       "output_tokens": call.result.output_tokens, "cost_usd": cost} for call, cost in zip(calls, costs)],
        cache=case_cache_mark(results),
    )
