"""GcFreeze: a manager's big batches kept out of full garbage collections, when asked."""

import gc

from argentic_tools._agent.calls.freezing import GcFreeze


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
