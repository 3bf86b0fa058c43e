"""Long calls on the caller side: progress reports, idle timeouts and streamed chunks.

A call made with ``on_progress``, ``idle_timeout``, ``max_duration`` or through
``stream_tool`` carries a :class:`CallWatch`. The reader hands it each
TOOL_PROGRESS and TOOL_PARTIAL message as it arrives (:meth:`CallWatch.arrived`):
a report resets the idle deadline at once, and the events queue up in order for
the waiting call, which runs the caller's callbacks in its own task before it
returns the result. Chunks are put back in ``seq`` order and each is delivered
once, whatever the broker redelivers.

A streamed call to a tool of protocol 3 or later is paced by its reader: the task
carries a window (:data:`STREAM_WINDOW`) and the caller grants credit as its reader
takes chunks (:meth:`CallWatch.taken`), every half window, so the tool never has more
than a window of chunks in flight or unread and waits instead (see ``docs/protocol.md``).

A chunk that is missing (the chunks after it came, it did not) is waited for at most
:data:`STREAM_GAP_SECONDS`, and at most :data:`STREAM_HELD_CHUNKS` later chunks are
held meanwhile: a chunk the broker lost never comes (a tool does not send a chunk
twice), so the call then ends with ``stream_interrupted`` naming the missing chunk,
at once, instead of holding every later chunk until the tool's result.
"""

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from ...._protocol.messages import ToolPartialMessage, ToolProgressMessage, ToolResult

logger = logging.getLogger("argentic_tools.manager")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]
"""``on_progress(progress, total, message)``: a plain function or a coroutine function."""

BatchProgressCallback = Callable[
    [str | None, float, float | None, str | None], Awaitable[None] | None
]
"""``on_progress(call_id, progress, total, message)`` for the calls of a batch."""

ChunkSink = Callable[[Any], None]
"""Receives each streamed chunk, in order, once; may raise :class:`BrokenStreamError`."""

STREAM_WINDOW = 256
"""Chunks a paced stream's tool may send beyond what the reader has taken.

It bounds what one stream holds at the broker for this caller's connection, so it stays
well below the broker's queue per client (mosquitto: ``max_queued_messages``, 1,000 by
default, beyond the 20 in flight), which drops what does not fit: ``n`` streams read
slowly at once hold up to ``n`` windows there. Credit goes back every half window."""

STREAM_GAP_SECONDS = 5.0
"""How long a missing chunk is waited for once a later one came; the call then ends
with ``stream_interrupted`` naming it. Chunks of one call leave the tool in order on
one connection, so only a reconnection can reorder them, and 5 s covers one."""

STREAM_HELD_CHUNKS = 1000
"""How many chunks after a missing one are held (in order to deliver them once it
comes) before the call ends with ``stream_interrupted`` naming it."""


class BrokenStreamError(Exception):
    """A streamed call must end now, with ``stream_interrupted``.

    Args:
        why: What broke, for the error message (names the bound that was reached).
        details: The error's ``details``.

    """

    def __init__(self, why: str, details: dict[str, Any]) -> None:
        super().__init__(why)
        self.why = why
        self.details = details


def long_call(
    on_progress: ProgressCallback | None,
    on_chunk: ChunkSink | None,
    timeout: float | None,
    idle_timeout: float | None,
    max_duration: float | None,
    wait: float | None,
) -> "tuple[CallWatch, float | None]":
    """The watch of a long call, and the time the caller waits in all (None: no cap).

    With ``idle_timeout``, the cap is ``max_duration``, else an explicit
    ``timeout``, else none; without it, ``max_duration`` or the usual ``wait``.

    Raises:
        ValueError: ``idle_timeout`` or ``max_duration`` is not a positive number.

    """
    for name, value in (("idle_timeout", idle_timeout), ("max_duration", max_duration)):
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    if idle_timeout is None:
        cap: float | None = max_duration if max_duration is not None else wait
    else:
        cap = max_duration if max_duration is not None else timeout
    loop = asyncio.get_running_loop()
    cap_at = None if cap is None else loop.time() + max(cap, 0.0)
    return CallWatch(on_progress, on_chunk, idle_timeout, cap_at), cap


def for_call(
    on_progress: BatchProgressCallback | None, call_id: str | None
) -> ProgressCallback | None:
    """A batch's progress callback, bound to one call's id."""
    if on_progress is None:
        return None
    return lambda progress, total, message: on_progress(call_id, progress, total, message)


class CallWatch:
    """The long-call state of one pending call.

    Args:
        on_progress: Called with each progress report, in order.
        on_chunk: Receives each streamed chunk, in order.
        idle: Seconds without a report after which the call times out.
        cap_at: Event-loop time after which the call times out whatever it reports.

    """

    __slots__ = (
        "_events",
        "_gap_since",
        "_granted",
        "_held",
        "_holds",
        "_progress_seq",
        "_wakeup",
        "cap_at",
        "collected",
        "credit",
        "delivered",
        "highest",
        "idle",
        "on_chunk",
        "on_progress",
        "read",
        "reports",
        "timer",
        "window",
    )

    def __init__(
        self,
        on_progress: ProgressCallback | None,
        on_chunk: ChunkSink | None,
        idle: float | None,
        cap_at: float | None,
    ) -> None:
        self.on_progress = on_progress
        self.on_chunk = on_chunk
        self.idle = idle
        self.cap_at = cap_at
        self.timer: asyncio.Timeout | None = None
        """The call's deadline while it waits; progress reschedules it."""
        self.reports = 0
        """Progress reports received."""
        self.delivered = 0
        """Chunks delivered in order (the next expected chunk's ``seq``)."""
        self.collected: list[Any] = []
        """The chunks delivered, in order: the result of a generator tool that streamed."""
        self.highest = -1
        """The highest chunk ``seq`` received (-1: none), delivered or not."""
        self.window: int | None = None
        """The stream's window when the tool paces it by its reader (None: unpaced)."""
        self.read = 0
        """Chunks the reader has taken."""
        self.credit: Callable[[int], object] | None = None
        """Sends the tool a grant (``read`` so far) while the call runs."""
        self._granted = 0
        self._progress_seq = 0
        self._held: dict[int, Any] = {}
        self._gap_since: float | None = None
        self._events: deque[ToolProgressMessage | tuple[Any]] = deque()
        self._wakeup: asyncio.Future[None] | None = None
        self._holds = 0

    @property
    def wants_progress(self) -> bool:
        """Whether the tool should send progress reports for this call."""
        return self.on_progress is not None or self.idle is not None

    @property
    def streams(self) -> bool:
        """Whether the tool should send chunks as they come."""
        return self.on_chunk is not None

    def first_deadline(self, loop: asyncio.AbstractEventLoop) -> float | None:
        """Event-loop time at which the call times out unless a report comes first."""
        return self._next_deadline(loop.time())

    def _next_deadline(self, now: float) -> float | None:
        if self.idle is None:
            return self.cap_at
        idle_at = now + self.idle
        return idle_at if self.cap_at is None else min(idle_at, self.cap_at)

    def capped(self, loop: asyncio.AbstractEventLoop) -> bool:
        """True when the absolute cap (``max_duration``) is what ran out."""
        return self.cap_at is not None and loop.time() >= self.cap_at - 0.001

    def arrived(self, message: ToolProgressMessage | ToolPartialMessage) -> None:
        """A report or chunk for this call came in (called by the reader)."""
        if isinstance(message, ToolProgressMessage):
            if message.seq <= self._progress_seq:
                return  # older than one already seen
            self._progress_seq = message.seq
            self.reports += 1
            self._events.append(message)
        else:
            seq = message.seq
            if seq < self.delivered or seq in self._held or self.on_chunk is None:
                return  # delivered already, or a redelivery
            if seq > self.highest:
                self.highest = seq
            self._held[seq] = chunk_of(message)
            while self.delivered in self._held:
                chunk = self._held.pop(self.delivered)
                self.collected.append(chunk)
                self._events.append((chunk,))
                self.delivered += 1
            if not self._held:
                self._gap_since = None
            elif self._gap_since is None:
                self._gap_since = asyncio.get_running_loop().time()
        self.touched()
        self.wake()

    def suspend(self) -> None:
        """A question of the tool waits for the caller's answer: the idle timeout stops.

        Until :meth:`resume` (one call each), only the cap (``max_duration``) and the
        caller's cancellation end the call.
        """
        self._holds += 1
        timer = self.timer
        if self.idle is not None and timer is not None and not timer.expired():
            timer.reschedule(self.cap_at)

    def resume(self) -> None:
        """A question was answered: once none waits, the idle timeout runs again from now."""
        self._holds = max(self._holds - 1, 0)
        self.touched()

    def touched(self) -> None:
        """A sign of life from the tool (a log record): the idle timeout starts again."""
        timer = self.timer
        if self._holds == 0 and self.idle is not None and timer is not None and not timer.expired():
            timer.reschedule(self._next_deadline(asyncio.get_running_loop().time()))

    def taken(self) -> None:
        """The reader took one chunk: every half window, the tool gets credit for more."""
        self.read = read = self.read + 1
        window = self.window
        if window is None or self.credit is None:
            return
        if read - self._granted >= max(window // 2, 1):
            self._granted = read
            self.credit(read)

    @property
    def paused(self) -> bool:
        """True when the tool has sent all its credit allows: it waits for the reader."""
        return self.window is not None and self.delivered >= self._granted + self.window

    @property
    def granted(self) -> int:
        """The ``read`` of the last grant sent (the tool may send a window beyond it)."""
        return self._granted

    def wake(self) -> None:
        """Let the waiting call look at its events (or its result)."""
        waiter = self._wakeup
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def result(self, future: "asyncio.Future[ToolResult]") -> ToolResult:
        """Run the callbacks for each event as it comes; return the result once it is in.

        Events that arrived before the result are all handled before it is returned.

        Raises:
            BrokenStreamError: A missing chunk did not come within its bounds (see the
                module), or the chunk sink refused a chunk.

        """
        loop = asyncio.get_running_loop()
        future.add_done_callback(lambda _: self.wake())
        while True:
            while self._events:
                await self._deliver(self._events.popleft())
            if future.done():
                return future.result()
            gap_ends = self._check_gap(loop.time())
            self._wakeup = loop.create_future()
            timer = None if gap_ends is None else loop.call_at(gap_ends, self.wake)
            try:
                await self._wakeup
            finally:
                self._wakeup = None
                if timer is not None:
                    timer.cancel()

    def _check_gap(self, now: float) -> float | None:
        """When the open gap (if any) runs out; raises once it has."""
        since = self._gap_since
        if since is None:
            return None
        ends = since + STREAM_GAP_SECONDS
        held = len(self._held)
        if now < ends and held <= STREAM_HELD_CHUNKS:
            return ends
        if held > STREAM_HELD_CHUNKS:
            why = (
                f"chunk {self.delivered} never came, and {held} later chunks waited for "
                f"it (more than the {STREAM_HELD_CHUNKS} held at most)"
            )
        else:
            why = (
                f"chunk {self.delivered} never came within {STREAM_GAP_SECONDS:g} s "
                f"while {held} later chunk(s) waited for it"
            )
        raise BrokenStreamError(why, {"missing": self.delivered, "held": held})

    async def _deliver(self, event: ToolProgressMessage | tuple[Any]) -> None:
        if isinstance(event, tuple):
            if self.on_chunk is not None:
                self.on_chunk(event[0])
            return
        if self.on_progress is None:
            return
        try:
            outcome = self.on_progress(event.progress, event.total, event.message)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.exception("the on_progress callback raised; the call goes on")

    @property
    def missing(self) -> list[int]:
        """Chunks that arrived after a gap, whose predecessors never came."""
        return sorted(self._held)


def chunk_of(message: ToolPartialMessage) -> Any:
    """What a chunk message delivers: its block(s) when it carries some, else its value."""
    content = message.content
    if not content:
        return message.chunk
    return list(content) if isinstance(message.chunk, list) else content[0]
