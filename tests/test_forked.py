"""A forked child's value comes back whole, and a child that stops working (as on a lock it
inherited at the fork) is stopped instead of being waited on for good."""

from __future__ import annotations

import os
import threading
import time

import pytest

from evalsite import forked


@pytest.fixture(autouse=True)
def quick_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "spare_core", lambda: True)
    monkeypatch.setattr(forked, "STALL_SECONDS", 0.5)
    monkeypatch.setattr(forked, "_POLL_SECONDS", 0.05)


def _child(work: object) -> forked.Forked[object]:
    child = forked.forked(work)  # type: ignore[arg-type]
    assert child is not None
    return child


def test_a_value_larger_than_the_pipe_comes_back_whole() -> None:
    value = os.urandom(5 << 20)
    assert _child(lambda: value).result() == value


def test_a_child_that_works_longer_than_the_stall_time_is_waited_for() -> None:
    def busy() -> int:
        ends, spins = time.monotonic() + 2.0, 0
        while time.monotonic() < ends:
            spins += 1
        return spins

    assert _child(busy).result() > 0


def test_a_child_stuck_on_a_lock_it_inherited_is_stopped(caplog: pytest.LogCaptureFixture) -> None:
    held = threading.Lock()
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with held:
            taken.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait()
    try:
        child = _child(lambda: held.acquire())  # the thread holding it did not come along
    finally:
        release.set()
        holder.join()
    with caplog.at_level("WARNING", logger="evalsite.forked"), pytest.raises(forked.WorkerLost, match="stuck"):
        child.result()
    assert f"worker process {child.child.pid} used no CPU" in caplog.text
    with pytest.raises(ProcessLookupError):
        os.kill(child.child.pid, 0)  # stopped and reaped


def test_a_childs_error_is_raised_here() -> None:
    def fail() -> None:
        raise ValueError("from the child")

    with pytest.raises(ValueError, match="from the child"):
        _child(fail).result()


def _squares(values: list[int]) -> list[int]:
    if -1 in values:
        raise ValueError(f"-1 in the half from {values[0]}")
    return [value * value for value in values]


@pytest.mark.parametrize("count", [0, 1, 2, 7, 10_000])
def test_halving_maps_every_value_in_order(count: int) -> None:
    values = list(range(count))
    assert forked.halving(_squares, values).result() == _squares(values)


def test_halving_raises_the_first_halfs_error_first_else_the_seconds() -> None:
    with pytest.raises(ValueError, match="from 0$"):
        forked.halving(_squares, [0, -1, 2, -1]).result()
    with pytest.raises(ValueError, match="from 2$"):
        forked.halving(_squares, [0, 1, 2, -1]).result()


def test_halving_maps_here_with_no_core_spare_or_when_the_child_is_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(values: list[int]) -> list[int]:
        if os.getpid() != parent:
            os.kill(os.getpid(), 9)
        return _squares(values)

    parent = os.getpid()
    assert forked.halving(killed, [1, 2, 3]).result() == [1, 4, 9]
    monkeypatch.setattr(forked, "spare_core", lambda: False)
    assert forked.halving(killed, [1, 2, 3]).result() == [1, 4, 9]


def test_halving_starts_the_child_at_once_and_sends_its_beside_value_after_its_half() -> None:
    halves = forked.halving(_squares, [1, 2, 3, 4], lambda: os.getpid(), at=1)
    assert halves.child is not None  # started before the result is asked for
    child = halves.child.pid
    assert halves.result() == [1, 4, 9, 16]
    assert halves.beside() == child != os.getpid()
    with pytest.raises(ChildProcessError):
        os.waitpid(child, 0)  # collected


def test_a_childs_error_in_its_half_is_raised_and_its_beside_value_is_then_none() -> None:
    halves = forked.halving(_squares, [0, 1, -1, 2], lambda: "beside")
    with pytest.raises(ValueError, match="from -1$"):
        halves.result()
    assert halves.child is None and halves.beside() is None


def test_a_halving_cancelled_stops_its_child_and_one_without_a_child_maps_here(
        monkeypatch: pytest.MonkeyPatch) -> None:
    halves = forked.halving(_squares, [1, 2, 3, 4], lambda: time.sleep(60))
    assert halves.child is not None
    child = halves.child
    halves.cancel()
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)  # stopped and reaped
    halves.cancel()  # (nothing left to stop)
    monkeypatch.setattr(forked, "spare_core", lambda: False)
    halves = forked.halving(_squares, [1, 2, 3, 4], lambda: "beside")
    assert halves.result() == [1, 4, 9, 16] and halves.beside() is None
