"""Helpers that observe behaviour instead of timing it.

``spy_on_calls`` watches a tool's call topic: a TASK message seen there went through the
broker to every subscriber of that topic, the tool included, which is what a test needs
before it kills the tool or the broker; the order of its TASK and TOOL_CANCEL messages
shows which cancellations were for tasks actually sent. ``Rendezvous`` is a tool that
answers only once ``parties`` calls of it run at the same time: serialised calls never
get there, so a test bounded by ``anyio.fail_after`` fails instead of proving
concurrency by a stopwatch.
"""

import contextlib
from collections.abc import AsyncIterator

import aiomqtt
import anyio

from argentic_tools import (
    BrokerURL,
    TaskMessage,
    ToolCancelMessage,
    ToolPingMessage,
    Topics,
    parse_message,
    tool,
)


class CallSpy:
    """Collects the TASK messages published on one tool's call topic."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self._client = client
        self.tasks: list[TaskMessage] = []
        self.wire: list[tuple[str, str]] = []
        """Every TASK and TOOL_CANCEL seen so far, in order: ``(type, task_id)``."""
        self.pings = 0
        """TOOL_PING messages seen so far (a manager asking whether the tool is there)."""

    async def wait_for_tasks(self, count: int, timeout: float = 10) -> list[TaskMessage]:
        """Return the first ``count`` TASK messages, once they have been seen (bounded).

        A task's ``call_id`` is the one given to ``execute_tool``; its ``task_id`` is the
        manager's own, fresh for every call.
        """
        with anyio.fail_after(timeout):
            while len(self.tasks) < count:
                await self._next()
        return self.tasks[:count]

    async def wait_for_call(self, call_id: str, timeout: float = 10) -> TaskMessage:
        """The task with this ``call_id``, once seen (bounded); ``wire`` holds all before it."""
        with anyio.fail_after(timeout):
            while True:
                task = next((t for t in self.tasks if t.call_id == call_id), None)
                if task is not None:
                    return task
                await self._next()

    async def _next(self) -> None:
        message = await anext(aiter(self._client.messages))
        parsed = parse_message(message.payload)
        # Cancellations travel on the same topic: kept in ``wire``, not in ``tasks``.
        if isinstance(parsed, TaskMessage) and parsed.type == "TASK":
            self.tasks.append(parsed)
            self.wire.append(("TASK", parsed.task_id))
        elif isinstance(parsed, ToolCancelMessage):
            self.wire.append(("TOOL_CANCEL", parsed.task_id))
        elif isinstance(parsed, ToolPingMessage):
            self.pings += 1

    async def wait_for_ping(self) -> None:
        """Return once a TOOL_PING has been seen (bound it with a deadline)."""
        while not self.pings:
            await self._next()

    async def wait_for_calls(self, count: int, timeout: float = 10) -> list[str | None]:
        """The ``call_id`` of each of the first ``count`` tasks (bounded)."""
        return [task.call_id for task in await self.wait_for_tasks(count, timeout)]


@contextlib.asynccontextmanager
async def spy_on_calls(url: str, topics: Topics, tool_id: str) -> AsyncIterator[CallSpy]:
    """Subscribe (QoS 1) to the call topic of ``tool_id`` for the duration of the block.

    Leave the block before stopping the broker: the spy's connection ends with it.
    """
    broker = BrokerURL.parse(url)
    async with aiomqtt.Client(broker.host, broker.port) as client:
        await client.subscribe(topics.call(tool_id), qos=1)
        yield CallSpy(client)


@contextlib.asynccontextmanager
async def spy_on_results(url: str, topics: Topics) -> AsyncIterator[AsyncIterator[bytes]]:
    """Subscribe (QoS 1) to every reply topic: yields the raw payloads of the results.

    For a test that checks what a result looks like on the wire, byte for byte.
    """
    broker = BrokerURL.parse(url)
    async with aiomqtt.Client(broker.host, broker.port) as client:
        await client.subscribe(f"{topics.response_base}/#", qos=1)

        async def results() -> AsyncIterator[bytes]:
            async for message in client.messages:
                payload = bytes(message.payload)
                if b'"status"' in payload:
                    yield payload

        yield results()


class Rendezvous:
    """A ``meet`` tool whose calls all return once ``parties`` of them are running at once.

    Build it inside the test's event loop (it holds an ``anyio.Event``) and serve
    ``rendezvous.tool`` with a :class:`~argentic_tools.ToolService`.
    """

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.all_in = anyio.Event()

        @tool
        async def meet() -> int:
            """Wait until the expected number of calls run together; return that number."""
            self.arrived += 1
            if self.arrived == self.parties:
                self.all_in.set()
            await self.all_in.wait()
            return self.arrived

        self.tool = meet
