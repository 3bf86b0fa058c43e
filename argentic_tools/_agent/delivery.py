"""Getting tasks and cancellations to a tool: only on a connection it listens on.

After a reconnection the broker may have forgotten every subscription, so a task waits
until its tool has registered again; a cancellation is a task of its own that the
manager owns, so closing the manager waits for it briefly instead of dropping it.
"""

import asyncio
import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

from .._lifecycle import TaskSet
from .._logging import InstanceLogger
from .._protocol.messages import ToolCancelMessage
from .._protocol.topics import Topics
from .._transport import Messager
from .membership import publish_quietly
from .pending import Pending, ToolGoneError
from .registry import ToolRegistry

SENDING = 256
"""Tasks of one manager being published at once (until their PUBACK), as many as the
connection's own window of unacknowledged publishes. More wait their turn here,
holding only their place in the queue: waiting inside the publish, each held the
task's bytes and two more coroutine frames, ~0.6 KB per call with thousands queued."""


class Delivery:
    """Publishes one manager's tasks and cancellations."""

    def __init__(
        self,
        messager: Messager,
        topics: Topics,
        registry: ToolRegistry,
        logger: "logging.Logger | InstanceLogger",
        tasks: TaskSet,
        encode: Callable[[Pending], bytes],
    ) -> None:
        self.messager = messager
        self.topics = topics
        self.registry = registry
        self._logger = logger
        self._tasks = tasks
        self._encode = encode
        self._sending = asyncio.Semaphore(SENDING)

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
            async with self._sending:
                if call.future.done():
                    # Ended while it waited for its turn (cancelled, its manager closed):
                    # sent now, it would reach the tool after its cancellation.
                    return 0
                sent_on = self.messager.connections
                # One topic string for all the tasks queued to a tool, not one per task.
                topic = sys.intern(self.topics.call(tool_id))
                await self.messager.publish(topic, functools.partial(self._encode, call))
            if current.epoch is None or current.epoch >= self.messager.connections:
                return sent_on

    def cancel_at_tool(self, call: Pending, reason: str) -> "asyncio.Task[Any]":
        """Tell the tool to stop working on ``call``; the returned task publishes it."""
        message = ToolCancelMessage(
            source=self.messager.client_id,
            task_id=call.task_id,
            tool_id=call.tool_id,
            reason=reason,
        )
        return self._tasks.spawn(
            publish_quietly(self.messager, self._logger, self.topics.call(call.tool_id), message),
            "cancel",
        )
