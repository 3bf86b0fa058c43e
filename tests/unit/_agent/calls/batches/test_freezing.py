"""GcFreeze: big batches kept out of full garbage collections: by default from AUTO_CALLS."""

import gc
from collections.abc import Iterator

import pytest

from argentic_tools._agent.calls.batches.freezing import AUTO_CALLS, GcFreeze


def test_a_batch_freezes_after_each_slice_and_unfreezes_once_it_has_ended() -> None:
    freezing = GcFreeze()
    with freezing.during_batch() as each_slice:
        assert gc.get_freeze_count() == 0  # nothing until the first slice has started
        each_slice()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_objects_stay_frozen_until_the_last_of_the_managers_batches_has_ended() -> None:
    freezing = GcFreeze()
    with freezing.during_batch() as first:
        with freezing.during_batch() as second:
            second()
        first()  # the first batch still runs: its slices are still frozen
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_an_explicit_setting_decides_for_every_batch_of_more_than_a_slice() -> None:
    freezing = GcFreeze()
    assert freezing.wanted(True, 129, 128)
    assert not freezing.wanted(True, 128, 128)
    assert not freezing.wanted(False, 50_000, 128)


def test_by_default_only_big_batches_freeze_and_only_with_the_collector_on() -> None:
    freezing = GcFreeze()
    assert freezing.wanted(None, AUTO_CALLS, 128)
    assert not freezing.wanted(None, AUTO_CALLS - 1, 128)
    gc.disable()
    try:
        assert not freezing.wanted(None, 50_000, 128)
    finally:
        gc.enable()


@pytest.fixture
def application_froze() -> Iterator[None]:
    gc.freeze()
    yield None
    gc.unfreeze()


@pytest.mark.usefixtures("application_froze")
def test_by_default_the_applications_own_freeze_is_left_alone() -> None:
    freezing = GcFreeze()
    assert not freezing.wanted(None, 50_000, 128)  # its objects are frozen, not ours
    assert freezing.wanted(True, 50_000, 128)  # asked explicitly: the caller knows


def test_by_default_a_batch_joins_a_freeze_the_managers_started() -> None:
    freezing = GcFreeze()
    with freezing.during_batch() as each_slice:
        each_slice()
        assert freezing.wanted(None, AUTO_CALLS, 128)  # frozen by a batch, not the app
    assert gc.get_freeze_count() == 0


def test_a_batch_that_does_not_freeze_gets_no_slice_hook() -> None:
    freezing = GcFreeze()
    with freezing.for_batch(None, AUTO_CALLS - 1, 128) as each_slice:
        assert each_slice is None
    with freezing.for_batch(None, AUTO_CALLS, 128) as each_slice:
        assert each_slice is not None
        each_slice()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
