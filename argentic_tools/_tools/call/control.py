"""A running call's controls: cancellation, progress reports and streamed chunks.

The endpoint makes one :class:`CallControl` per task it serves; the tool reaches
it through its :class:`~argentic_tools.ToolContext` (``context.cancelled``,
``context.report_progress``, ``context.send_partial``), from the event loop or
from the worker thread a sync tool runs in.

Progress is rate-limited here, on the tool side: a tool may report in a tight
loop, and at most one report per :data:`PROGRESS_INTERVAL` goes on the wire,
always the latest. Chunks are never dropped or merged: they leave in order
through one outbox per call, and the result follows the last of them. A caller
that paces the stream by its reader (``stream_window``) gets each chunk only once
it has credit for it (:class:`~.credit.StreamCredit`): until then the tool waits.
"""

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any

from ..._errors import BrokerError, PayloadTooLargeError
from ..._protocol.messages import TaskMessage, ToolPartialMessage, ToolProgressMessage, encode
from ..._protocol.participation import ToolAnswerMessage
from ..records.stats import ToolCounters
from .asking import CallerLine
from .credit import StreamCredit
from .output import split_output, too_large

logger = logging.getLogger("argentic_tools.tool")

PROGRESS_INTERVAL = 0.1
"""Seconds between two progress reports of one call on the wire; reports made in
between are merged into the next one (the latest wins)."""

OUTBOX_LIMIT = 256
"""Messages (chunks, progress) of one call being published (not yet acknowledged)
before ``send_partial`` makes its caller wait: a tool cannot outrun the broker
unboundedly."""

MESSAGE_TEXT_LIMIT = 1000
"""Characters of a progress message kept."""

PUBLISH_SECONDS = 30.0
"""How long one chunk or report may wait for the broker before it is dropped."""

PAUSE_GRACE_SECONDS = 5.0
"""How long past the caller's deadline a stream waiting for credit gives up (the call is
then cancelled at the tool): the caller's own TOOL_CANCEL normally comes first."""

THREAD_POLL_SECONDS = 0.5
"""How often a sync tool's thread waiting for room looks whether its call ended."""


class Reported:
    """What ``report_progress`` and ``send_partial`` return: await it, or don't.

    A sync tool ignores it (its thread waits inside the call); an async tool may
    ``await`` it, which waits only when the call's outbox is full (so a fast producer
    slows down to the broker's pace) or, for a stream paced by its reader, while the
    reader has given no credit for the chunk.
    """

    __slots__ = ("_waiter",)

    def __init__(self, waiter: "asyncio.Future[None] | None" = None) -> None:
        self._waiter = waiter

    def __await__(self) -> Generator[Any, None, None]:
        if self._waiter is not None:
            yield from self._waiter.__await__()


REPORTED = Reported()
"""A :class:`Reported` with nothing to wait for."""


class CallControl:
    """Cancellation, progress, chunks and the caller's line of one task being served.

    Args:
        publish: Publishes one encoded message on the tool's response topic.
        task: The task served; its ``report_progress`` and ``stream`` say what the
            caller wants sent.
        tool_id: The serving tool's id.
        source: The tool process's client id, the ``source`` of what it sends.
        max_payload_bytes: Largest message the connection may send.
        local_deadline: The call's end on this process's monotonic clock (None: no
            limit but the caller's cancellation), which a stream waiting for credit
            does not outlive.
        counters: Where the pauses of a stream waiting for credit are counted.

    """

    def __init__(
        self,
        publish: Callable[[bytes], Awaitable[None]],
        *,
        task: TaskMessage,
        tool_id: str,
        source: str,
        max_payload_bytes: int,
        local_deadline: float | None = None,
        counters: ToolCounters | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._publish = publish
        self.task = task
        self.task_id = task.task_id
        self.tool_id = tool_id
        self.source = source
        self.progress_enabled = bool(task.report_progress)
        self.stream_enabled = bool(task.stream)
        self.max_payload_bytes = max_payload_bytes
        self.local_deadline = local_deadline
        self._counters = counters
        window = task.stream_window if self.stream_enabled else None
        self.credit = StreamCredit(window) if window else None
        """The reader's credit, when the caller paces the stream (None: send at once)."""
        self._pause_timer: asyncio.TimerHandle | None = None
        self.cancelled = False
        """True once the call is cancelled; a sync tool polls it through ``context.cancelled``
        (a plain attribute: one thread writes it, and reading it costs nothing)."""
        self.reason: str | None = None
        self.finished = False
        """The call's outcome is decided: nothing the tool does from now on is sent."""
        self.runner: asyncio.Task[None] | None = None
        """The task serving the call."""
        self.chunks = 0
        """Chunks sent so far."""
        self.result_in_chunks = False
        """The result is the list of the chunks, which the caller has already been sent."""
        self._lock = threading.Lock()
        self._latest: tuple[float, float | None, str | None] | None = None
        self._next_report = 0.0
        self._report_due = False
        self._report_seq = 0
        self._sending: set[asyncio.Task[None]] = set()
        self._room: list[asyncio.Future[None]] = []
        self._thread_running = False
        self._thread_waiter: asyncio.Future[None] | None = None
        self._caller: CallerLine | None = None

    @property
    def caller(self) -> CallerLine:
        """The call's line to its caller: questions and log records (made on first use)."""
        line = self._caller
        if line is None:
            with self._lock:
                line = self._caller
                if line is None:
                    line = self._caller = CallerLine(
                        self.task,
                        tool_id=self.tool_id,
                        source=self.source,
                        enqueue=self._enqueue,
                        in_loop=lambda function: self._in_loop(function, 0.0),
                        loop=self._loop,
                        loop_thread=self._loop_thread,
                    )
        return line

    def answered(self, answer: ToolAnswerMessage) -> bool:
        """The caller answered one of the call's questions; False: it asked none such."""
        line = self._caller
        return line is not None and line.answered(answer)

    # -- cancellation -----------------------------------------------------------

    def cancel(self, reason: str) -> None:
        """Cancel the call: the flag for sync tools, and the serving task for async ones."""
        self.reason = reason
        self.cancelled = True
        if self._caller is not None:
            self._caller.close()  # a question waiting in a sync tool's thread ends too
        if self.runner is not None:
            self.runner.cancel()
        self._wake_producers()  # a sync tool's thread waiting for room sees it now

    def raise_if_cancelled(self) -> None:
        """Raise :class:`asyncio.CancelledError` when the call was cancelled."""
        if self.cancelled:
            raise asyncio.CancelledError(self.reason or "the call was cancelled")

    # -- progress ----------------------------------------------------------------

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Reported:
        """Note how far the call has got; sent now, or merged into the next report.

        Raises:
            ValueError: ``progress`` or ``total`` is not a finite number.

        """
        if not _finite(progress) or (total is not None and not _finite(total)):
            raise ValueError(
                f"progress and total must be finite numbers, got {progress!r} and {total!r}"
            )
        if not self.progress_enabled or self.finished:
            return REPORTED
        if message is not None and message.__class__ is not str:
            message = str(message)
        with self._lock:
            self._latest = (progress, total, message)
            if self._report_due:
                return REPORTED  # the report already scheduled takes this value
            self._report_due = True
            delay = self._next_report - time.monotonic()
        self._in_loop(self._send_report, delay)
        return REPORTED

    def _send_report(self) -> None:
        with self._lock:
            latest, self._latest = self._latest, None
            self._report_due = False
            self._next_report = time.monotonic() + PROGRESS_INTERVAL
        if latest is None or self.finished:
            return
        progress, total, message = latest
        if message is not None and len(message) > MESSAGE_TEXT_LIMIT:
            message = message[:MESSAGE_TEXT_LIMIT]
        self._report_seq += 1
        self._enqueue(
            encode(
                ToolProgressMessage(
                    source=self.source,
                    task_id=self.task_id,
                    tool_id=self.tool_id,
                    seq=self._report_seq,
                    progress=progress,
                    total=total,
                    message=message,
                )
            )
        )

    # -- chunks ----------------------------------------------------------------------

    def send_partial(self, chunk: Any) -> Reported:
        """Send one chunk of the result to a streaming caller (nothing when it does not stream).

        From a worker thread this blocks while the outbox is full; from the event
        loop, awaiting the returned :class:`Reported` waits for room.

        Raises:
            ValueError: The chunk is not JSON-serialisable or larger than a message may be.

        """
        if not self.stream_enabled or self.finished:
            return REPORTED
        with self._lock:
            seq = self.chunks
            self.chunks += 1
        try:
            chunk, content = split_output(chunk)
            message = ToolPartialMessage(
                source=self.source,
                task_id=self.task_id,
                tool_id=self.tool_id,
                seq=seq,
                chunk=chunk,
                content=content,
            )
            data = encode(message)
        except Exception as exc:  # noqa: BLE001 - pydantic's serialisation errors vary
            raise ValueError(f"chunk {seq} is not JSON-serialisable: {exc}") from None
        if len(data) > self.max_payload_bytes:
            why = f"chunk {seq} is {len(data):,} bytes, more than the limit of " + (
                f"{self.max_payload_bytes:,} bytes"
            )
            if content:
                why += f" ({too_large(content, len(data), self.max_payload_bytes)})"
            raise ValueError(why)
        if threading.get_ident() == self._loop_thread:
            self._enqueue_chunk(data)
            if self._has_room():
                return REPORTED
            waiter = self._loop.create_future()
            self._room.append(waiter)
            return Reported(waiter)
        room = asyncio.run_coroutine_threadsafe(self._enqueue_and_wait(data), self._loop)
        self._wait_in_thread(room)
        return REPORTED

    async def _enqueue_and_wait(self, data: bytes) -> None:
        self._enqueue_chunk(data)
        if not self._has_room():
            waiter = self._loop.create_future()
            self._room.append(waiter)
            await waiter

    def _wait_in_thread(self, room: "concurrent.futures.Future[None]") -> None:
        """Block a sync tool's thread until its chunk has room (or the call ended).

        Waiting for the broker is bounded by :data:`PUBLISH_SECONDS`; waiting for the
        reader's credit lasts as long as the call (its deadline ends the pause).
        """
        started = time.monotonic()
        while True:
            try:
                room.result(timeout=THREAD_POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                if self.finished or self.cancelled:
                    return
                credit = self.credit
                if (credit is None or not credit.paused) and (
                    time.monotonic() - started > PUBLISH_SECONDS
                ):
                    return
                continue
            except Exception:  # noqa: BLE001 - the loop closed: nothing more to wait for
                return
            return

    def _enqueue_chunk(self, data: bytes) -> None:
        """Send a chunk now, or hold it until the reader's credit lets it go."""
        credit = self.credit
        if credit is None or credit.offer(data):
            self._enqueue(data)
        elif credit.held == 1:
            self._paused()

    def _has_room(self) -> bool:
        """Whether the producer may go on: no chunk waits for credit, the outbox has room."""
        credit = self.credit
        return (credit is None or not credit.paused) and len(self._sending) < OUTBOX_LIMIT

    # -- the reader's credit ---------------------------------------------------------

    def granted(self, read: int) -> None:
        """The caller's reader has taken ``read`` chunks (a TOOL_CREDIT): send what it allows."""
        credit = self.credit
        if credit is None or self.finished:
            return
        for data in credit.grant(read):
            self._enqueue(data)
        self._resumed()
        if self._has_room():
            self._wake_producers()

    async def flushed(self) -> None:
        """Wait until no chunk waits for credit (before the result, which follows them all).

        The pause ends with the reader's credit, or the call's end (cancelled, or its
        deadline passed: see :data:`PAUSE_GRACE_SECONDS`).
        """
        credit = self.credit
        while credit is not None and credit.paused and not self.finished:
            waiter = self._loop.create_future()
            self._room.append(waiter)
            await waiter

    def _paused(self) -> None:
        """A chunk waits for credit: count the pause, and bound it by the call's deadline."""
        if self._counters is not None:
            self._counters.stream_paused()
        deadline = self.local_deadline
        if deadline is not None:
            delay = max(deadline - time.monotonic(), 0.0) + PAUSE_GRACE_SECONDS
            self._pause_timer = self._loop.call_later(delay, self._pause_expired)

    def _resumed(self) -> None:
        """Called after a grant or a drop: ends the pause (its time counted) once nothing waits."""
        credit = self.credit
        seconds = None if credit is None else credit.end_pause()
        if seconds is None:
            return
        if self._counters is not None:
            self._counters.stream_resumed(seconds)
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None

    def _pause_expired(self) -> None:
        self._pause_timer = None
        credit = self.credit
        if credit is None or not credit.paused or self.finished:
            return
        logger.info(
            "tool %s: task %s waited for its reader's credit past the caller's deadline "
            "(%d chunk(s) sent, %d read); stopping it",
            self.tool_id,
            self.task_id,
            credit.sent,
            credit.read,
        )
        self.cancel(
            f"its caller's deadline passed while the stream waited for its reader "
            f"({credit.sent} chunks sent, {credit.read} read, window {credit.window})"
        )

    # -- the outbox --------------------------------------------------------------------

    def _enqueue(self, data: bytes) -> None:
        # One task per message, created in order: each hands its message to the MQTT
        # client at its first step, so they go out in order without one waiting for the
        # other's acknowledgement (a broker keeps the order of one client's messages).
        sending = self._loop.create_task(self._send(data))
        self._sending.add(sending)
        sending.add_done_callback(self._sent)

    async def _send(self, data: bytes) -> None:
        try:
            async with asyncio.timeout(PUBLISH_SECONDS):
                await self._publish(data)
        except (TimeoutError, BrokerError, PayloadTooLargeError) as exc:
            logger.warning(
                "tool %s: a progress report or chunk of task %s was not sent: %s",
                self.tool_id,
                self.task_id,
                exc or "no connection to the broker",
            )

    def _sent(self, sending: "asyncio.Task[None]") -> None:
        self._sending.discard(sending)
        if self._has_room():
            self._wake_producers()

    def _wake_producers(self) -> None:
        room, self._room = self._room, []
        for waiter in room:
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Let every chunk and report so far reach the MQTT client before the result.

        Their publishing tasks were created in order and take their first step (the
        hand-over to the client) before this returns; their acknowledgements are not
        awaited, so the result costs no extra round trip.
        """
        if self._sending:
            await asyncio.sleep(0)

    def close(self) -> None:
        """The call is over: later reports and chunks are dropped; queued ones still go.

        A progress report held back by the rate limit goes now, before the result (it is
        the latest the tool made: a tool that reports 100 % and returns within
        :data:`PROGRESS_INTERVAL` must not leave its caller at the report before). Not
        for a cancelled call: its caller has stopped listening.
        """
        if self._report_due and not self.cancelled:
            self._send_report()
        self.finished = True
        if self._caller is not None:
            self._caller.close()
        if self.credit is not None:
            self.credit.drop()  # a cancelled call's: a finished one waited for them (flushed)
            self._resumed()
        self._wake_producers()

    # -- sync tools' threads ---------------------------------------------------------------

    def thread_starts(self) -> bool:
        """Called by the worker thread before it runs the tool; False: cancelled, don't."""
        with self._lock:
            if self.cancelled:
                return False
            self._thread_running = True
            return True

    def thread_returned(self) -> None:
        """Called by the worker thread when the tool function returns or raises."""
        with self._lock:
            self._thread_running = False
            waiter = self._thread_waiter
        if waiter is not None:
            self._loop.call_soon_threadsafe(_set_done, waiter)

    async def wait_for_thread(self) -> None:
        """Wait until a cancelled sync tool's thread has really returned.

        Further cancellations are absorbed: the call keeps its concurrency slot
        until then, so a ``max_concurrency=1`` tool never runs twice at once.
        """
        with self._lock:
            self.cancelled = True  # a thread that has not started yet never will
            if not self._thread_running:
                return
            waiter = self._thread_waiter = self._loop.create_future()
        while not waiter.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(waiter)

    def _in_loop(self, function: Callable[[], None], delay: float) -> None:
        if threading.get_ident() == self._loop_thread:
            if delay <= 0:
                function()
            else:
                self._loop.call_later(delay, function)
        elif delay <= 0:
            self._loop.call_soon_threadsafe(function)
        else:
            self._loop.call_soon_threadsafe(self._loop.call_later, delay, function)


async def collect_chunks(chunks: AsyncIterator[Any], control: CallControl | None) -> Any:
    """Run an async generator tool: send each chunk to a streaming caller, return the list.

    When the caller streams, the chunks already went out one by one, so the
    result does not repeat them (the caller assembles the list itself).
    """
    collected: list[Any] = []
    streaming = control is not None and control.stream_enabled
    try:
        async for chunk in chunks:
            if streaming:
                assert control is not None
                await control.send_partial(chunk)
            else:
                collected.append(chunk)
    finally:
        # Cancelled between two chunks, the generator is left at its ``yield``: closed
        # now, its ``finally`` releases what it holds at once, not whenever (or if ever)
        # it is garbage-collected.
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    return _collected(collected, control)


def collect_chunks_sync(chunks: Iterator[Any], control: CallControl | None) -> Any:
    """:func:`collect_chunks` for a sync generator tool (runs in its worker thread)."""
    collected: list[Any] = []
    streaming = control is not None and control.stream_enabled
    try:
        for chunk in chunks:
            if control is not None and control.cancelled:
                break  # a sync tool cannot be interrupted: it stops at its next chunk
            if streaming:
                assert control is not None
                control.send_partial(chunk)
            else:
                collected.append(chunk)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # its ``finally`` runs now
    return _collected(collected, control)


def _collected(collected: list[Any], control: CallControl | None) -> list[Any] | None:
    if control is not None and control.stream_enabled:
        control.result_in_chunks = True  # the caller has them all already
        return None
    return collected


def _finite(value: Any) -> bool:
    kind = value.__class__
    if kind is float or kind is int:  # the common cases first: this is hot
        return math.isfinite(value)
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _set_done(waiter: "asyncio.Future[None]") -> None:
    if not waiter.done():
        waiter.set_result(None)
