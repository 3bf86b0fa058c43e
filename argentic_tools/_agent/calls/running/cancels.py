"""TOOL_CANCELs on their way to the tools: :class:`CancelOutbox`, one queue per manager.

Every TOOL_CANCEL a manager sends is posted here as its bytes (a few fields encoded,
no model), and a few worker tasks publish the queue in order, enough of them to keep
the connection's window of unacknowledged publishes full. Cancelling a batch of 20,000
calls that had reached their tool took a task, a message model and a timeout per call
and held the event loop for seconds; posting one is now a few microseconds.

A post returns a ticket. Whoever must know that a TOOL_CANCEL is out (a caller
cancelling one call, before its cancellation returns) awaits :meth:`CancelOutbox.sent`
with it: every TOOL_CANCEL posted up to that ticket has then been published (or given
up on, and logged). A cancelled batch does not wait for its calls' TOOL_CANCELs: a
task for a tool is published only after the TOOL_CANCELs posted to that tool before it
(:meth:`CancelOutbox.unsent`), so a tool still learns of every cancellation before it
is sent more work.
"""

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections import deque
from collections.abc import Iterator

from ...._errors import BrokerError
from ...._lifecycle import TaskSet
from ...._logging import InstanceLogger
from ...._protocol.encoding import encode_fields
from ...._protocol.messages import ToolCancelMessage
from ...._transport import Messager

PUBLISH_SECONDS = 10.0
"""How long one TOOL_CANCEL may take to publish (a reconnection included) before it is
given up on and logged."""


class CancelOutbox:
    """The TOOL_CANCELs of one manager, published in the order posted.

    Args:
        messager: The manager's connection.
        logger: Where a TOOL_CANCEL that could not be published is reported.
        tasks: Owns the workers (the manager's: closing it gives them a grace period).

    """

    __slots__ = (
        "_finished",
        "_holds",
        "_last",
        "_logger",
        "_messager",
        "_order",
        "_out",
        "_queue",
        "_sent",
        "_tasks",
        "_waiters",
        "_workers",
        "posted",
    )

    def __init__(
        self, messager: Messager, logger: "logging.Logger | InstanceLogger", tasks: TaskSet
    ) -> None:
        self._messager = messager
        self._logger = logger
        self._tasks = tasks
        self._queue: deque[tuple[int, str, bytes]] = deque()
        self.posted = 0
        """Tickets handed out so far: the last one posted."""
        self._out: deque[int] = deque()
        """Tickets being published, in the order the workers took them."""
        self._finished: set[int] = set()
        """Tickets in ``_out`` already published (out of order)."""
        self._sent = 0
        """Every ticket up to this one is published (or given up on)."""
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()  # ties between waiters of one ticket
        self._workers = 0
        self._holds = 0
        self._last: dict[str, int] = {}
        """The last ticket posted to each tool id, while one may still be unsent."""

    def post(self, topic: str, task_id: str, tool_id: str, reason: str, source: str) -> int:
        """Queue a TOOL_CANCEL for ``task_id``; returns its ticket for :meth:`sent`."""
        payload = encode_fields(
            ToolCancelMessage,
            {"source": source, "task_id": task_id, "tool_id": tool_id, "reason": reason},
        )
        self.posted += 1
        self._queue.append((self.posted, topic, payload))
        self._last[tool_id] = self.posted
        if not self._holds:
            self._start_workers()
        return self.posted

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Publish nothing until the block is left: the TOOL_CANCELs posted meanwhile wait.

        A cancelled batch ends its calls first, then their TOOL_CANCELs go out: published
        at once, the PUBACKs and the tools' replies took most of the loop's turns while
        the batch was still ending thousands of calls.
        """
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                self._start_workers()

    def _start_workers(self) -> None:
        """As many workers as there are TOOL_CANCELs queued, up to the connection's window."""
        wanted = min(len(self._queue), self._messager.max_unacked)
        while self._workers < wanted:
            self._workers += 1
            self._tasks.spawn(self._work(), "cancel")

    def unsent(self, tool_id: str) -> int | None:
        """The ticket of the last TOOL_CANCEL posted to ``tool_id``, if it is not out yet."""
        ticket = self._last.get(tool_id)
        if ticket is not None and ticket <= self._sent:
            del self._last[tool_id]
            return None
        return ticket

    async def sent(self, ticket: int, timeout: float | None = None) -> None:
        """Wait until every TOOL_CANCEL posted up to ``ticket`` is out (at most ``timeout`` s).

        Each is out within :data:`PUBLISH_SECONDS` of its turn, published or given up on.
        """
        if ticket <= self._sent:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (ticket, next(self._order), waiter))
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            pass  # still on its way: the caller does not wait longer for it

    async def _work(self) -> None:
        """Publish queued TOOL_CANCELs until the queue is empty."""
        try:
            while self._queue:
                ticket, topic, payload = self._queue.popleft()
                self._out.append(ticket)
                try:
                    async with asyncio.timeout(PUBLISH_SECONDS):
                        await self._messager.publish(topic, payload)
                except (TimeoutError, BrokerError) as exc:
                    self._logger.warning("could not publish a TOOL_CANCEL: %s", exc)
                finally:
                    self._published(ticket)
        finally:
            self._workers -= 1

    def _published(self, ticket: int) -> None:
        """``ticket`` is out: move the mark of what is all out on, and wake who waits for it."""
        out = self._out
        if out[0] != ticket:
            self._finished.add(ticket)
            return
        out.popleft()
        while out and out[0] in self._finished:
            self._finished.remove(out.popleft())
        if out:
            self._sent = out[0] - 1
        elif self._queue:
            self._sent = self._queue[0][0] - 1
        else:
            self._sent = self.posted
            self._last.clear()
        waiters = self._waiters
        while waiters and waiters[0][0] <= self._sent:
            *_, waiter = heapq.heappop(waiters)
            if not waiter.done():
                waiter.set_result(None)
