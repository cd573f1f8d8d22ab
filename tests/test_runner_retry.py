"""Retry policy: backoff with jitter, Retry-After, limits, and the schedule's validation."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from evalsite.calls.context import Abandoned, CallContext
from evalsite.calls.retry import AttemptDeadlines, RetryPolicy, call_with_retries
from evalsite.calls.targets import TargetRequest, TargetResult, TransientTargetError
from evalsite.calls.targets.http import retry_after
from evalsite.errors import ManifestError, TargetError

REQUEST = TargetRequest(input="q", row={}, params={}, repeat=0, item_id="i")


class Scripted:
    """A target that raises or answers from a list, counting calls."""

    def __init__(self, *steps):
        self.steps, self.calls = list(steps), 0

    async def generate(self, request):
        self.calls += 1
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def call(target, policy, stopping=lambda: False):
    return asyncio.run(call_with_retries(target, REQUEST, policy, CallContext(stopping), random.Random(0)))


def test_backoff_doubles_is_jittered_capped_and_yields_to_retry_after():
    policy = RetryPolicy(backoff=1.0, max_backoff=5.0)
    rng = random.Random(1)
    for failures, (low, high) in {1: (0.5, 1.0), 2: (1.0, 2.0), 3: (2.0, 4.0), 6: (2.5, 5.0)}.items():
        delays = [policy.delay(failures, None, rng) for _ in range(200)]
        assert low <= min(delays) and max(delays) <= high and max(delays) - min(delays) > (high - low) / 2
    assert policy.delay(1, 30.0, rng) == 30.0  # Retry-After beyond max_backoff is still honoured


def test_transient_failures_are_retried_up_to_max_attempts():
    target = Scripted(TransientTargetError("HTTP 503"), TransientTargetError("HTTP 503"), TargetResult(output="ok"))
    outcome = call(target, RetryPolicy(max_attempts=3, backoff=0.001))
    assert outcome.result.output == "ok" and outcome.attempts == 3
    target = Scripted(*[TransientTargetError("HTTP 503")] * 3)
    outcome = call(target, RetryPolicy(max_attempts=2, backoff=0.001))
    assert outcome.result.error == "HTTP 503 (2 attempts)" and target.calls == 2


def test_final_errors_and_target_bugs_are_not_retried():
    target = Scripted(TargetResult(error="HTTP 400 Bad Request"))
    assert call(target, RetryPolicy(backoff=0.001)).attempts == 1
    outcome = call(Scripted(KeyError("choices")), RetryPolicy(backoff=0.001))
    assert outcome.result.error == "KeyError: 'choices'" and outcome.attempts == 1


def test_a_retry_after_beyond_the_limit_fails_at_once():
    target = Scripted(TransientTargetError("HTTP 429", retry_after=3600))
    outcome = call(target, RetryPolicy(max_attempts=5))
    assert outcome.result.error == "HTTP 429; the provider asked to retry after 3600 s (1 attempt)"


def test_no_retry_starts_once_the_run_is_stopping():
    with pytest.raises(Abandoned):
        call(Scripted(TransientTargetError("HTTP 500")), RetryPolicy(backoff=0.001), stopping=lambda: True)


class Sleeping:
    """A target that answers after ``seconds`` (its request's ``input``), or never once canceled."""

    async def generate(self, request):
        await asyncio.sleep(request.input)
        return TargetResult(output=f"after {request.input}")


def test_attempts_in_flight_time_out_each_at_its_own_deadline_under_one_timer():
    """A long timeout started first does not delay a shorter one started after it; an attempt that
    answers in time is not touched; once nothing is in flight no timer is left armed."""

    async def calls():
        loop = asyncio.get_running_loop()

        async def one(seconds: float, timeout: float):
            request = TargetRequest(input=seconds, row={}, params={}, repeat=0, item_id=str(seconds))
            policy = RetryPolicy(timeout=timeout, max_attempts=1)
            return await call_with_retries(Sleeping(), request, policy, CallContext(), random.Random(0))

        outcomes = await asyncio.gather(one(0.6, 0.3), one(5.0, 0.1), one(0.05, 5.0), one(0.2, 0.25))
        return outcomes, AttemptDeadlines.of(loop)._timer

    (patient, short, fast, in_time), timer = asyncio.run(calls())
    assert patient.result.error == "timed out after 0.3 s (1 attempt)" and 300 <= patient.latency_ms < 550
    assert short.result.error == "timed out after 0.1 s (1 attempt)" and 100 <= short.latency_ms < 300
    assert fast.result.output == "after 0.05" and in_time.result.output == "after 0.2"
    assert timer is None


def test_a_cancellation_from_outside_is_not_a_timeout():
    """Ctrl-C's abandon cancels the worker: its attempt ends with CancelledError, also when its own
    deadline passes at the same moment, as under asyncio.timeout; later attempts still time out."""

    async def abandoned():
        request = TargetRequest(input=5.0, row={}, params={}, repeat=0, item_id="i")
        task = asyncio.ensure_future(call_with_retries(Sleeping(), request, RetryPolicy(timeout=0.1, max_attempts=1),
                                                       CallContext(), random.Random(0)))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        both = asyncio.ensure_future(call_with_retries(Sleeping(), request, RetryPolicy(timeout=0.05, max_attempts=1),
                                                       CallContext(), random.Random(0)))
        await asyncio.sleep(0)  # its attempt has started
        asyncio.get_running_loop().call_later(0.06, both.cancel)
        time.sleep(0.1)  # the loop is held: the deadline and the cancel from outside land together
        with pytest.raises(asyncio.CancelledError):
            await both
        after = await call_with_retries(Sleeping(), request, RetryPolicy(timeout=0.05, max_attempts=1), CallContext(),
                                        random.Random(0))
        return after

    assert asyncio.run(abandoned()).result.error == "timed out after 0.05 s (1 attempt)"


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("7") == 7.0 and retry_after("0.5") == 0.5
    assert retry_after(None) is None and retry_after("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    assert 110 <= retry_after(later) <= 120


def test_schedule_values_are_checked_and_settings_timeout_wins():
    policy = RetryPolicy.from_schedule({"timeout_s": 30, "max_attempts": 5}, {"timeout": 2})
    assert (policy.timeout, policy.max_attempts) == (2.0, 5)
    with pytest.raises(ManifestError, match=r"schedule.max_attempts: needs a whole number >= 1, got 2.5"):
        RetryPolicy.from_schedule({"max_attempts": 2.5}, {})
    with pytest.raises(ManifestError, match=r"schedule.backoff_s: needs a number > 0, got 'fast'"):
        RetryPolicy.from_schedule({"backoff_s": "fast"}, {})
    with pytest.raises(TargetError, match=r"settings.timeout: needs a number of seconds > 0, got -1"):
        RetryPolicy.from_schedule({}, {"timeout": -1})
