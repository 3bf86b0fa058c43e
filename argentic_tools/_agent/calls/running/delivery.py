"""Getting tasks and cancellations to a tool: only on a connection it listens on.

:class:`Delivery` is the only sender of tasks: the first send, and a send again after a
broker or the tool lost them. A task's JSON is built here, when its turn to be published
comes. After a reconnection the broker may have forgotten every subscription, so a task
waits until its tool has registered again, and after the TOOL_CANCELs posted to that tool
before it. Cancellations go out through one :class:`~.cancels.CancelOutbox`, and a task
sent again is a task of its own; the manager owns both, so closing it waits for them
briefly instead of dropping them.
"""

import contextlib
import functools
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import TypeAdapter

from ...._lifecycle import TaskSet
from ...._logging import InstanceLogger
from ...._protocol.encoding import encode_fields
from ...._protocol.messages import BaseMessage, CallContext, TaskMessage, ToolCreditMessage
from ...._protocol.participation import ToolAnswerMessage
from ...._protocol.topics import Topics
from ...._transport import Messager
from ...fleet.registry import ToolRegistry
from ...publishing import publish_quietly
from ..pending.flow import Window
from ..pending.pending import Batch, Pending, ToolGoneError, UnsendableTaskError
from .cancels import CancelOutbox

SENDING: int | None = None
"""Tasks of one manager being published at once (until their PUBACK); None: as many as
the connection's own window of unacknowledged publishes (``Messager.max_unacked``). More
wait their turn here, holding only their place in the queue: waiting inside the publish,
each held the task's bytes and two more coroutine frames, ~0.6 KB per call with
thousands queued."""

_CONTEXT = TypeAdapter(CallContext)


class Delivery:
    """Publishes one manager's tasks and cancellations.

    Args:
        messager: The manager's connection.
        topics: The manager's topics.
        registry: Where a task's tool is looked up (it may have left, or not be back).
        logger: The manager's logger.
        tasks: Owns the cancellations and tasks sent again (the manager's).
        reply_topic: Where a tool answers this manager, by tool id (None: on the
            shared response topic).
        call_topic: Where tasks to a tool id go (None: ``topics.call``).

    """

    def __init__(
        self,
        messager: Messager,
        topics: Topics,
        registry: ToolRegistry,
        logger: "logging.Logger | InstanceLogger",
        tasks: TaskSet,
        reply_topic: Callable[[str], str] | None = None,
        call_topic: Callable[[str], str] | None = None,
    ) -> None:
        self.messager = messager
        self.topics = topics
        self.registry = registry
        self._logger = logger
        self._tasks = tasks
        self._reply_topic = reply_topic
        self.call_topic = call_topic or topics.call
        # A Window, not an asyncio.Semaphore: a semaphore's waiter that is cancelled
        # removes itself from the middle of its queue (a scan of the queue each), and
        # ending thousands of queued calls newest first (a cancelled batch) was quadratic.
        self._sending = Window(messager.max_unacked if SENDING is None else SENDING)
        self.cancels = CancelOutbox(messager, logger, tasks)
        """Where the TOOL_CANCELs go out, in order."""

    async def send(self, call: Pending) -> int:
        """Publish the task of ``call`` on a connection its tool is known to be subscribed on.

        The task's bytes are built (the same each time) only when it can go out.

        After the manager's connection is re-established (the broker may have restarted
        and lost every subscription), wait until the tool has registered again, and send
        again if the connection changed while publishing. Tools execute a task id once.

        Returns:
            The connection (``messager.connections``) the task went out on; 0 when the
            call ended before its task could go out (it is then never sent).

        """
        tool_id = call.tool_id
        while True:
            if call.future.done():
                return 0  # ended while it waited for its tool to register again
            if not self.messager.is_connected():
                # Decide after the reconnection: published the moment the connection is
                # back, the task would go out again once the tool has re-registered.
                await self.messager.wait_connected()
            current = self.registry.get(tool_id)
            if current is None:
                raise ToolGoneError
            if current.epoch is not None and current.epoch < self.messager.connections:
                await self.registry.changed()
                continue
            cancels = self.cancels.unsent(tool_id)
            if cancels is not None:
                # After the TOOL_CANCELs posted to the tool before it: a tool hears that
                # its work was cancelled before it is handed more (a cancelled batch does
                # not wait for its calls' TOOL_CANCELs). A while at a time: the call may end
                # meanwhile (its manager closing stops the TOOL_CANCELs queued).
                await self.cancels.sent(cancels, 1.0)
                continue
            await self._sending.acquire()
            try:
                batch = call.spec.batch
                if call.future.done() or (batch is not None and batch.cancelling):
                    # Ended while it waited for its turn (cancelled, its manager closed), or
                    # about to (its batch is being cancelled): sent now, it would reach the
                    # tool after its cancellation, or need one.
                    return 0
                sent_on = self.messager.connections
                # From here the tool may get the task: a cancellation must tell it. Before,
                # waiting for its turn, the call is the manager's alone and ends quietly.
                call.published = True
                # One topic string for all the tasks queued to a tool, not one per task.
                topic = sys.intern(self.call_topic(tool_id))
                await self.messager.publish(topic, functools.partial(self.encoded, call))
            finally:
                self._sending.release()
            if current.epoch is None or current.epoch >= self.messager.connections:
                return sent_on

    @contextlib.contextmanager
    def cancelling(self, batch: Batch) -> Iterator[None]:
        """While ``batch`` ends its calls: none of them is sent, no TOOL_CANCEL goes out.

        The TOOL_CANCELs its calls post go out once the block is left: the calls' endings
        first, as a single batch (see :meth:`CancelOutbox.holding`).
        """
        batch.cancelling = True
        with self.cancels.holding():
            yield

    def cancel_at_tool(self, call: Pending, reason: str) -> int:
        """Post a TOOL_CANCEL for ``call``; returns its ticket for ``cancels.sent``."""
        tool_id = call.tool_id
        return self.cancels.post(
            self.call_topic(tool_id), call.task_id, tool_id, reason, self.messager.client_id
        )

    def grant(self, call: Pending, read: int) -> None:
        """Tell the tool that the reader of ``call``'s stream has taken ``read`` chunks.

        Sent on the call topic, as a cancellation is, so only the caller's own grants
        count. Grants are cumulative: one lost is made good by the next.
        """
        if not call.published or call.future.done():
            return
        credit = ToolCreditMessage(
            source=self.messager.client_id, task_id=call.task_id, tool_id=call.tool_id, read=read
        )
        self._post(call, credit, "credit")

    def answer(
        self,
        call: Pending,
        ask_id: str,
        result: dict[str, Any] | None,
        error: str | None,
        unsupported: bool = False,
    ) -> None:
        """Answer a question of ``call``'s tool (on its call topic, as a cancellation goes)."""
        if not call.published or call.future.done():
            return
        answer = ToolAnswerMessage(
            source=self.messager.client_id,
            task_id=call.task_id,
            tool_id=call.tool_id,
            ask_id=ask_id,
            result=result,
            error=error,
            unsupported=unsupported,
        )
        self._post(call, answer, "answer")

    def _post(self, call: Pending, message: BaseMessage, kind: str) -> None:
        """Publish ``message`` on ``call``'s tool's call topic, in the background."""
        topic = self.call_topic(call.tool_id)
        self._tasks.spawn(publish_quietly(self.messager, self._logger, topic, message), kind)

    def resend(self, call: Pending) -> None:
        """Send the task of ``call`` again, now: its tool registered again after losing it.

        The tool runs a task id once: for a task it already ran it sends the recorded
        result again, and it ignores one still running.
        """
        # Built again here: a pending call never keeps its task's bytes (see encoded).
        self._tasks.spawn(
            publish_quietly(
                self.messager,
                self._logger,
                self.call_topic(call.tool_id),
                functools.partial(self.encoded, call),
            ),
            "resend",
        )

    def encoded(self, call: Pending) -> bytes:
        """The task of ``call`` as JSON: the same bytes each time, to send it again.

        Built when the task's turn to be published comes, and never kept: the model
        would cost ~1.5 KB per pending call and the bytes ~0.5 KB, and with thousands
        of calls queued for the connection's window of unacknowledged publishes, each
        held them while it waited. Everything is rebuilt from what the call keeps anyway.

        Raises:
            UnsendableTaskError: JSON cannot carry a value (the checks before let
                through only what it can: this is a last guard, e.g. for the context).

        """
        # Every value here is already checked; unset fields keep their defaults.
        spec, info, watch, timeout, now = (
            call.spec,
            call.entry.info,
            call.watch,
            call.timeout,
            call.timestamp,
        )
        try:
            return encode_fields(
                TaskMessage,
                {
                    "source": self.messager.client_id,
                    "timestamp": now,
                    "message_id": call.task_id,
                    "task_id": call.task_id,
                    "tool_id": info.id,
                    "tool_name": info.name,
                    "arguments": call.arguments,
                    "call_id": spec.call_id,
                    "timeout_seconds": None if timeout is None else float(timeout),
                    "deadline": None if timeout is None else now + timeout,
                    # As the declared type writes it: a subclass's own fields stay home.
                    "context": (
                        None
                        if spec.context is None
                        else _CONTEXT.dump_python(spec.context, exclude_none=True)
                    ),
                    "report_progress": True if watch is not None and watch.wants_progress else None,
                    "stream": True if watch is not None and watch.streams else None,
                    "stream_window": None if watch is None else watch.window,
                    "reattached": True if call.reattached else None,
                    "caller_handles": (
                        None if call.participation is None else call.participation.abilities()
                    ),
                    "traceparent": spec.traceparent,
                    "tracestate": spec.tracestate,
                    # Plain Argentic tools answer on the shared topic whatever it says.
                    "reply_to": (
                        None
                        if self._reply_topic is None or call.entry.protocol is None
                        else self._reply_topic(info.id)
                    ),
                },
            )
        except (ValueError, TypeError, RecursionError) as exc:
            raise UnsendableTaskError(str(exc).splitlines()[0][:200]) from None
