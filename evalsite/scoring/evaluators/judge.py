"""``llm_judge``: a judge arm (any target) grades the output against a rubric.

The judge is asked for one JSON object ``{"score": 0-10, "reason": "..."}`` and the reply is
parsed strictly: the whole reply (a ```json fence aside) must be that object. An unparseable
reply gets one re-ask; if the second reply is unparseable too the score is an error quoting
it. A number is never taken from prose ("In 2024 the answer…" does not score 2024 or 10).
With ``samples: k`` the judge is asked k times; the score is the mean and ``spread`` (max − min,
on the 0..1 scale) records how far the judge disagreed with itself.

Limits keep a judge call small and its cost bounded: the input is cut to ``max_input_chars``
(4,000) and the output to ``max_output_chars`` (6,000), the cut marked in the text; the judge is
asked for ``max_tokens: 200`` unless its params say otherwise; the detail kept is the first
``detail_chars`` (200) characters. Every call made is paid for, so a score that ends in an error
still carries the cost of its calls.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Any

from evalsite.errors import EvalsiteError, MissingSecretError
from evalsite.experiment.prompts import render_template
from evalsite.jsonshape import JSONObject
from evalsite.python_refs import check_reference
from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.text import as_text, strip_fence

if TYPE_CHECKING:
    from evalsite.calls.targets.base import Target

# The model clients and retries (``evalsite.calls``) are imported inside the methods that use them,
# when a judge is built rather than with this module: the evaluator catalogue is shared with
# comparisons, which must not load targets or httpx for manifests that have no judge.

DEFAULT_RUBRIC = "Is the output correct, relevant and complete for the input?"
SYSTEM_PROMPT = "You are a strict, fair grader. You reply with one JSON object and nothing else."
INSTRUCTION = (
    "Grade the output against the rubric from 0 (fails it completely) to 10 (meets it fully). "
    'Reply with only a JSON object: {"score": <integer 0-10>, "reason": "<one short sentence>"}'
)
REASK = (
    "Your reply was not a JSON object of the required form. Reply with only "
    '{"score": <integer 0-10>, "reason": "<one short sentence>"} and nothing else.'
)
JUDGE_KEYS = ("target", "params", "settings", "price")
QUOTE_CHARS = 300
LIMITS = {"max_input_chars": 4000, "max_output_chars": 6000, "detail_chars": 200}
#: The most grades asked for one case: they are asked all at once, so a case's calls stay bounded.
MAX_SAMPLES = 100
DEFAULT_MAX_TOKENS = 200


@dataclass(frozen=True)
class Grade:
    score: float
    reason: str


def parse_judge_reply(reply: Any) -> Grade | None:
    """The grade in a judge's reply, or None unless the reply is exactly the JSON object asked for."""
    data = reply
    if isinstance(reply, str):
        try:
            data = json.loads(strip_fence(reply.strip()))
        except json.JSONDecodeError:
            return None
    if not isinstance(data, dict):
        return None
    score, reason = data.get("score"), data.get("reason", "")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 10:
        return None
    if not isinstance(reason, str):
        return None
    return Grade(float(score), reason)


def format_messages(value: Any) -> str:
    """A message list as ``role: content`` lines; anything else as text."""
    if isinstance(value, list) and all(isinstance(m, dict) and "content" in m for m in value):
        return "\n".join(f"{m.get('role', 'user')}: {as_text(m['content'])}" for m in value)
    return as_text(value)


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked inside the limit."""
    if len(text) <= limit:
        return text
    marker = f" […cut: {len(text)} characters, first shown]"
    if len(marker) >= limit:
        return text[:limit]
    return text[: limit - len(marker)] + marker


def default_prompt(variables: JSONObject) -> str:
    sections = [("Rubric", variables["rubric"]), ("Input", format_messages(variables["input"]))]
    if variables["expected"] is not None:
        sections.append(("Reference answer", as_text(variables["expected"])))
    if variables["transcript"] is not None:
        sections.append(("Conversation", format_messages(variables["transcript"])))
    sections.append(("Output to grade", as_text(variables["output"])))
    return "\n\n".join(f"{title}:\n{text}" for title, text in sections) + "\n\n" + INSTRUCTION


class _AnyRow(dict[str, str]):
    """A stand-in row for checking a prompt template at build time: every field exists."""

    def __missing__(self, key: str) -> str:
        return ""


def _quote(reply: Any) -> str:
    text = as_text(reply)
    return repr(text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "…")


@register_evaluator("llm_judge")
class LlmJudge(Evaluator):
    """Params: ``judge`` (a target spec, or ``{target, params, settings}`` — the model goes in
    ``params.model``), ``rubric``, ``prompt`` (a Jinja template replacing the default prompt; it
    sees ``input``, ``output``, ``expected``, ``transcript``, ``rubric``, ``row``),
    ``samples`` (default 1) and the :data:`LIMITS`. Score = judge score / 10; passes at
    ``threshold`` (default 0.7)."""

    param_names = ("judge", "rubric", "prompt", "samples", *LIMITS)
    helper_modules = ("evalsite.scoring.evaluators.text",)
    default_threshold = 0.7
    runs_code = True

    @property
    def waits_on_io(self) -> bool:
        return True

    def check(self) -> None:
        from evalsite.calls import retry, targets

        judge = self.params.get("judge")
        judge = {"target": judge} if isinstance(judge, str) else judge
        if not isinstance(judge, dict) or not isinstance(judge.get("target"), str):
            raise ValueError("judge: needs a target such as 'python:judges:grade' or {target: ..., params: {model: ...}}")
        if unknown := sorted(set(judge) - set(JUDGE_KEYS)):
            raise ValueError(f"judge: unknown key {unknown[0]!r} (allowed: {', '.join(JUDGE_KEYS)})")
        self.judge_params: JSONObject = {"max_tokens": DEFAULT_MAX_TOKENS, **(judge.get("params") or {})}
        self.judge_target = targets.with_model(judge["target"], self.judge_params.get("model"))
        self.judge_settings: JSONObject = dict(judge.get("settings") or {})
        self.judge_price: JSONObject | None = judge.get("price")
        if self.judge_price is not None and not (
            isinstance(self.judge_price, dict) and set(self.judge_price) <= set(targets.PRICE_KEYS)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in self.judge_price.values())
        ):
            raise ValueError("judge.price: needs {input: USD, output: USD} per million tokens (cache_read, cache_write "
                             f"optional), got {self.judge_price!r}")
        self.missing_secrets: list[str] = []
        try:
            self._make_target()
        except MissingSecretError as exc:  # validate warns, run refuses (see unset_secrets)
            self.missing_secrets.append(f"judge.target: {exc.message}")
        try:
            self.retry_policy = retry.RetryPolicy.from_schedule({}, self.judge_settings)
        except EvalsiteError as exc:
            raise ValueError(f"judge.{exc.message}") from None
        self.rubric: str = self.option("rubric", str, DEFAULT_RUBRIC)
        self.prompt: str | None = self.option("prompt", str)
        if self.prompt is not None:
            self._render({"input": "", "output": "", "expected": None, "transcript": None, "row": _AnyRow()})
        self.samples: int = self.option("samples", int, 1)
        if not 1 <= self.samples <= MAX_SAMPLES:
            raise ValueError(f"samples: needs a whole number from 1 to {MAX_SAMPLES}, got {self.samples}")
        self.limits: dict[str, int] = {key: self.option(key, int, default) for key, default in LIMITS.items()}
        if bad := next((key for key, value in self.limits.items() if value < 1), None):
            raise ValueError(f"{bad}: needs a whole number of at least 1, got {self.limits[bad]}")

    def unset_secrets(self) -> list[str]:
        return self.missing_secrets

    def _make_target(self) -> Target | None:
        """The judge's target; None when project code may not run (``validate``: a ``python:``
        judge is then only checked in its source). A bad target is a ``ValueError``."""
        from evalsite.calls import targets

        try:
            if not self.run_code and self.judge_target.startswith("python:"):
                check_reference(self.judge_target.removeprefix("python:"), self.project_root, "target")
                return None
            return targets.make_target(self.judge_target, self.judge_settings, self.project_root)
        except MissingSecretError:
            raise
        except EvalsiteError as exc:
            raise ValueError(f"judge.target: {exc.message}") from None
        except Exception as exc:  # e.g. a python: judge whose module raises while being imported
            raise ValueError(f"judge.target: {self.judge_target}: {type(exc).__name__}: {exc}") from None

    def _render(self, variables: JSONObject) -> str:
        variables = {**variables, "rubric": self.rubric}
        if self.prompt is None:
            return default_prompt(variables)
        try:
            return render_template(self.prompt, variables)
        except EvalsiteError as exc:
            raise ValueError(exc.message) from None

    def scoring_params(self) -> JSONObject:
        """A judge's ``price`` only prices its calls: changing it keeps runs comparable."""
        judge = self.params.get("judge")
        if isinstance(judge, dict) and "price" in judge:
            return {**self.params, "judge": {k: v for k, v in judge.items() if k != "price"}}
        return self.params

    def describe(self) -> JSONObject:
        return {**super().describe(), "judge": {"target": self.judge_target, "model": self.judge_params.get("model")}}

    def messages(self, case: CaseView) -> list[JSONObject]:
        user = self._render({
            "input": truncate(format_messages(case.input), self.limits["max_input_chars"]),
            "output": truncate(as_text(case.output), self.limits["max_output_chars"]),
            "expected": case.expected, "transcript": case.transcript, "row": case.row,
        })
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    async def ameasure(self, case: CaseView) -> Outcome:
        from evalsite.calls import targets

        messages = self.messages(case)
        target = self._make_target()
        if target is None:
            raise ScoringError("judge: built for checking only (project code may not run), so it cannot score")
        spent: list[float | None] = []
        try:
            graded = await asyncio.gather(
                *(self._grade(target, messages, case, n, spent) for n in range(self.samples)), return_exceptions=True
            )
        finally:
            await target.aclose()
        cost = targets.total_or_none(spent)
        if failed := next((g for g in graded if isinstance(g, BaseException)), None):
            if not isinstance(failed, ScoringError):
                raise failed
            raise ScoringError(str(failed), cost_usd=cost)  # every call made is paid for
        grades = [g for g in graded if isinstance(g, Grade)]  # every one, none having failed
        scores = [g.score for g in grades]
        if len(scores) == 1:
            return Outcome(scores[0] / 10, detail=self._detail(f"{scores[0]:g}/10: {grades[0].reason}"), cost_usd=cost)
        spread = (max(scores) - min(scores)) / 10
        listed = ", ".join(f"{s:g}" for s in scores)
        detail = f"samples {listed} (/10, spread {spread:.2f}); first reason: {grades[0].reason}"
        return Outcome(fmean(scores) / 10, spread=spread, cost_usd=cost, detail=self._detail(detail))

    def _detail(self, text: str) -> str:
        limit = self.limits["detail_chars"]
        return text if len(text) <= limit else text[: limit - 1] + "…"

    async def _grade(self, target: Target, messages: list[JSONObject], case: CaseView, sample: int,
                     spent: list[float | None]) -> Grade:
        reply = await self._ask(target, messages, case, sample, spent)
        grade = parse_judge_reply(reply)
        if grade is not None:
            return grade
        retry = [*messages, {"role": "assistant", "content": as_text(reply)}, {"role": "user", "content": REASK}]
        reply = await self._ask(target, retry, case, sample, spent)
        grade = parse_judge_reply(reply)
        if grade is None:
            raise ScoringError(f"judge reply is not a JSON object with a 0-10 score, even after a re-ask: {_quote(reply)}")
        return grade

    async def _ask(self, target: Target, messages: list[JSONObject], case: CaseView, sample: int,
                   spent: list[float | None]) -> Any:
        """One judge call (with retries under the case's call context: they stop with the batch);
        its cost — billed, else tokens × ``judge.price`` — joins ``spent`` and the batch's budget."""
        from evalsite.calls import retry, targets

        request = targets.TargetRequest(input=messages, row=case.row, params=self.judge_params, repeat=sample,
                                item_id=str(case.row.get("id", "")))
        # the same retries as a generation: timeouts, connection errors, 429 (Retry-After) and 5xx
        called = await retry.call_with_retries(target, request, self.retry_policy, case.calls, random.Random())
        result = called.result
        spent.append(targets.call_cost(result, self.judge_price))
        case.calls.spend(spent[-1])
        if result.error is not None:
            raise ScoringError(f"judge failed: {result.error}")
        return result.output
