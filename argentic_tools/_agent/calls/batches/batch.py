"""Many calls at once, started and cancelled a slice at a time: :func:`run_all`.

A call does its checks (the policy, the arguments against the tool's JSON Schema), and
its send when a slot is free, in its first step, before it first waits. Started all at
once, as ``asyncio.gather`` starts them, the first steps of 50,000 calls ran in one turn
of the event loop and stalled it for 2 s (a call to another tool meanwhile took 1.6 s);
cancelled all at once, their endings stalled it for 3.7 s. Here each turn of the loop
starts (or cancels) at most :data:`SLICE` calls, so the first calls are already sent
while later ones are checked, and everything else on the loop keeps its turn.
"""

import asyncio
import contextlib
import contextvars
from collections.abc import Callable, Coroutine, Iterable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

from ...._protocol.messages import ToolResult
from ..participation.handlers import CallerHandlers
from ..pending.pending import Batch, CallSpec
from ..settings.options import CallOptions
from .freezing import PROCESS_FREEZE

T = TypeVar("T")
R = TypeVar("R")

SLICE = 128
"""Calls started per turn of the event loop, and cancelled in the first turn.

A call's first step costs ~40 µs (its ending when cancelled about half), so a slice
holds the loop for ~5 ms; batches up to this size start in one turn, as before."""

TURN_SECONDS = 0.015
"""What a turn of the loop that ends cancelled calls may take: each next turn ends as
many calls as the last turn's time says fit (at least :data:`SLICE`)."""


READ_SLICE = 8 * SLICE
"""Items :func:`read_all` reads per turn of the event loop (~2 µs each: a call's settings)."""


async def read_all(items: Iterable[T]) -> list[T]:
    """``list(items)``, a turn of the event loop for every :data:`READ_SLICE` items.

    Reading the settings of 50,000 calls (one ``CallSpec`` each) took 80-140 ms in one
    turn, before the first call started.
    """
    read: list[T] = []
    for item in items:
        read.append(item)
        if len(read) % READ_SLICE == 0:
            await asyncio.sleep(0)
    return read


async def run_all(
    run: Callable[[T], Coroutine[Any, Any, R]],
    items: Iterable[T],
    while_cancelling: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
    each_slice: Callable[[], object] | None = None,
) -> list[R]:
    """``await run(item)`` for every item, concurrently; the results in order.

    Started :data:`SLICE` at a time, each slice in a turn of the event loop of its
    own. Cancelling this cancels every call started (slices per turn again, inside
    ``while_cancelling()``) and returns once all of them have ended; the items not
    started yet never start. ``each_slice()`` is called once each slice has taken its
    first steps, once all have, and each time another :data:`SLICE` calls have ended.
    Every call has ended when this returns or raises: the first call that raised
    (other than by cancellation) has its exception raised here, once all have ended.
    """
    batch: _Batch[R] = _Batch(each_slice)
    try:
        for item in items:
            if len(batch.tasks) % SLICE == 0 and batch.tasks:
                await asyncio.sleep(0)  # the slice before takes its first steps
                if each_slice is not None:
                    each_slice()
            batch.start(run(item))
        if each_slice is not None:
            await asyncio.sleep(0)
            each_slice()
        await batch.all_ended()
    except asyncio.CancelledError:
        with while_cancelling():
            await batch.cancel()
        raise
    return [task.result() for task in batch.tasks]


class _Batch(Generic[R]):
    """The calls of one :func:`run_all`, and a future resolved once all have ended."""

    __slots__ = (
        "_context",
        "_each_slice",
        "_ended",
        "_finished",
        "_loop",
        "_on_end",
        "_running",
        "_starting",
        "tasks",
    )

    def __init__(self, each_slice: Callable[[], object] | None = None) -> None:
        self._each_slice = each_slice
        self._finished = 0
        self.tasks: list[asyncio.Task[R]] = []
        self._running = 0
        self._starting = True
        self._loop = asyncio.get_running_loop()
        self._ended = self._loop.create_future()
        # One bound method for every call's done callback, and one context for every call
        # and callback: by default each task and each callback would get its own copy of
        # the caller's context (~0.2 KB a call with thousands in flight, and one more
        # object per call for each full garbage collection to walk). The calls see the
        # caller's context variables as before; one a call sets, its siblings see too.
        self._on_end = self._one_ended
        self._context = contextvars.copy_context()

    def start(self, call: Coroutine[Any, Any, R]) -> None:
        task = self._loop.create_task(call, context=self._context)
        self._running += 1
        task.add_done_callback(self._on_end, context=self._context)
        self.tasks.append(task)

    def _one_ended(self, task: "asyncio.Task[R]") -> None:
        if task.cancelled():
            # Retrieved, the CancelledError no longer ties the task to its frames (and the
            # frames to the task): a cancelled call is freed at once, not by a full garbage
            # collection, which with thousands of calls held the loop for seconds.
            with contextlib.suppress(asyncio.CancelledError):
                task.exception()
        self._running -= 1
        self._finished += 1
        if self._each_slice is not None and self._finished % SLICE == 0:
            self._each_slice()
        if self._running == 0 and not self._starting and not self._ended.done():
            self._ended.set_result(None)

    def _started(self) -> "asyncio.Future[None]":
        """No more calls start: the future is resolved once those started have ended."""
        self._starting = False
        if self._running == 0 and not self._ended.done():
            self._ended.set_result(None)
        return self._ended

    async def all_ended(self) -> None:
        """Wait until every call started has ended."""
        await asyncio.shield(self._started())  # cancelled, the calls still end in cancel()

    async def cancel(self) -> None:
        """Cancel every call, a slice per turn of the loop; return once all have ended.

        The slices grow while the turns stay short (see :data:`TURN_SECONDS`).

        Newest first: the calls still waiting for a slot (in their tool's window, or
        for their turn to be sent) end before any call that was sent gives its slot
        back, so none of them is sent on the way out (and needs a TOOL_CANCEL after).
        Cancelled again meanwhile, it carries on: a call left running would be an orphan.
        """
        ended = self._started()
        tasks = self.tasks
        loop = self._loop
        stop, size = len(tasks), SLICE
        while stop > 0:
            start = max(0, stop - size)
            for task in tasks[start:stop]:
                task.cancel()
            stop = start
            began = loop.time()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0)  # the slice's endings run in this turn
            # As many per turn as fit in TURN_SECONDS: a turn of the loop costs more than
            # the endings alone (the reader, the publishers), and 400 turns of 128 took 8 s.
            took = max(loop.time() - began, 1e-4)
            size = max(SLICE, min(4 * size, int(size * TURN_SECONDS / took)))
        while not ended.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(ended)
        for task in tasks:
            if not task.cancelled():
                task.exception()  # its caller is cancelled and never sees it


async def run_batch(
    batch: "Iterable[tuple[str, Any, CallOptions]]",
    call: "Callable[[CallSpec], Coroutine[Any, Any, ToolResult]]",
    cancelling: "Callable[[Batch], AbstractContextManager[Any]]",
    *,
    default_timeout: float | None,
    default_handlers: "CallerHandlers",
    gc_freeze: bool | None,
    overridden: "Callable[[tuple[str, Any, CallOptions]], Coroutine[Any, Any, ToolResult]] | None",
) -> "list[ToolResult]":
    """Run a manager's batch of calls concurrently, each as ``execute_tool`` would.

    Every call's settings are read before any starts (a slice per turn of the event
    loop): a bad ``idle_timeout`` raises before anything is sent. ``batch`` is consumed
    once, so the options of thousands of calls are not kept while they run (their specs
    hold what is needed). ``overridden``: a subclass's own ``execute_tool``, which then
    sees every call, with the label and timeout by position (an override may rename
    them).
    """
    if overridden is not None:
        calls = list(batch)
        for name, arguments, options in calls:
            options.spec(name, arguments, default_timeout)  # raises for bad settings
        return await run_all(overridden, calls)
    shared = Batch()
    specs = await read_all(
        options.spec(name, arguments, default_timeout, None, shared, default_handlers)
        for name, arguments, options in batch
    )
    # Each call runs as the runner's own coroutine, without an execute_tool frame
    # around it (~0.35 KB a call): thousands at once are the case this serves. They
    # start (and, if the batch is cancelled, end) a slice per turn of the event loop;
    # cancelled, none is sent any more and their TOOL_CANCELs go out once all ended.
    with PROCESS_FREEZE.for_batch(gc_freeze, len(specs), SLICE) as each_slice:
        return await run_all(call, specs, lambda: cancelling(shared), each_slice)
