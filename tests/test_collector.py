"""evalsite.collector: the collector paused, and what exists frozen for a block."""

from __future__ import annotations

import gc

import pytest

from evalsite.collector import collector_paused, kept_frozen


@pytest.fixture
def nothing_frozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_in_the_block_and_as_it_was_after(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_what_exists_is_frozen_until_the_block_ends(nothing_frozen):
    with kept_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_nested_blocks_unfreeze_when_the_outer_one_ends(nothing_frozen):
    with kept_frozen():
        with kept_frozen():
            pass
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_block_that_raises_unfreezes(nothing_frozen):
    with pytest.raises(ValueError), kept_frozen():
        raise ValueError
    assert gc.get_freeze_count() == 0


def test_a_callers_own_freeze_is_left_as_it_was(nothing_frozen):
    """gc.unfreeze unfreezes everything: a block must not undo what its caller froze before it. The
    counts are bounds, not equalities: a frozen object another thread lets go of leaves the count
    (it failed CI once at 424,778 against 424,780); the caller's own objects, held here, stay."""
    held = [[] for _ in range(1000)]  # tracked by the collector, so counted while frozen
    gc.freeze()
    frozen = gc.get_freeze_count()
    with kept_frozen():
        assert gc.get_freeze_count() <= frozen  # nothing frozen again
    assert gc.get_freeze_count() >= len(held)  # the caller's freeze left in place
