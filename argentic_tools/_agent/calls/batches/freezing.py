"""Keeping big batches out of the garbage collector's full collections, when asked.

CPython's cyclic garbage collector now and then runs a full collection, which walks
every object that can hold references: with 50,000 calls pending there are about a
million (the caller's requests, and a dozen per pending call: its task, coroutine,
futures, timeout, ...), and one full collection held the event loop for 0.3-1 s, however
finely the batch is sliced. ``gc.freeze()`` moves every object that exists to a
permanent generation that collections skip, in constant time; freezing after each
slice of a batch has started, and each time another slice of its calls has ended (their
results, and what the calls that waited for a slot made since), keeps the batch's
objects out of the full collections while it runs.

It is process-wide (every object of the process is frozen, not only the batch's; a
reference cycle that becomes garbage meanwhile is collected only once unfrozen) and
``gc.unfreeze()`` also releases what the application froze itself. So by default
(``ToolManager(gc_freeze=None)``) it acts only for a batch of :data:`AUTO_CALLS` calls or
more, only while the collector is enabled, and never in a process whose application has
frozen objects of its own; ``gc_freeze=True`` acts for every batch of more than one
slice, ``gc_freeze=False`` never. One :data:`PROCESS_FREEZE` serves every manager of the
process, so the objects stay frozen until the last of their big batches has ended.
"""

import contextlib
import gc
from collections.abc import Callable, Iterator

AUTO_CALLS = 4096
"""The size from which a batch freezes by default: below it, a full collection of what
its calls hold stays well under the 100 ms the event loop may be held."""


class GcFreeze:
    """Freezes the process's objects while one of its managers' big batches runs."""

    __slots__ = ("_batches",)

    def __init__(self) -> None:
        self._batches = 0

    def wanted(self, setting: bool | None, calls: int, slice_size: int) -> bool:
        """Whether a batch of ``calls`` freezes, given the manager's ``gc_freeze``."""
        if setting is not None:
            return setting and calls > slice_size
        if calls < AUTO_CALLS or not gc.isenabled():
            return False
        # Frozen objects that are not ours are the application's: leave its freeze alone.
        return self._batches > 0 or gc.get_freeze_count() == 0

    @contextlib.contextmanager
    def for_batch(
        self, setting: bool | None, calls: int, slice_size: int
    ) -> Iterator[Callable[[], None] | None]:
        """For a batch: what to call after each slice, or ``None`` if it does not freeze."""
        if not self.wanted(setting, calls, slice_size):
            yield None
            return
        with self.during_batch() as each_slice:
            yield each_slice

    @contextlib.contextmanager
    def during_batch(self) -> Iterator[Callable[[], None]]:
        """For the block: what to call after each slice of calls has started or ended.

        Once the last of the manager's batches that froze has ended, the frozen objects
        are collectable again (``gc.unfreeze()``): most of the batch's are gone by then.
        """
        self._batches += 1
        try:
            yield gc.freeze
        finally:
            self._batches -= 1
            if not self._batches:
                gc.unfreeze()


PROCESS_FREEZE = GcFreeze()
"""The process's one freezer: every manager's batches count in it."""
