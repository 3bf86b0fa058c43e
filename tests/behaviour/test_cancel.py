"""Cancelling a call in any way stops the work at the tool: TOOL_CANCEL is on the wire and
the tool reports the task cancelled, never finished."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiomqtt
import anyio
import pytest

from argentic_tools import (
    InMemoryRecorder,
    TaskStatus,
    ToolCallRequest,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools._agent.calls.running import delivery
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.observers import spy_on_calls
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio


class Work:
    """A tool that runs until cancelled (or for ``seconds``), recording what happened."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.finished: list[str] = []

        @tool(name="work")
        async def work(label: str, seconds: float = 60) -> str:
            """Work for a while."""
            self.started.set()
            await anyio.sleep(seconds)
            self.finished.append(label)
            return label

        self.tool = work


class Wire:
    """Every message on the tool's call and response topics."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def wait_for(self, kind: str, **fields: Any) -> dict[str, Any]:
        """The first TASK, TOOL_CANCEL, or result with status ``kind``, having ``fields``."""

        def matches(item: tuple[str, dict[str, Any]]) -> bool:
            _, message = item
            if kind in ("TASK", "TOOL_CANCEL"):
                found = message.get("type") == kind and "status" not in message
            else:
                found = message.get("status") == kind
            return found and all(message.get(k) == v for k, v in fields.items())

        with anyio.fail_after(10):
            while not any(matches(item) for item in self.seen):
                message = await anext(aiter(self.client.messages))
                self.seen.append((message.topic.value, json.loads(message.payload)))
        return next(message for item in self.seen if matches(item) for message in [item[1]])


@pytest.fixture
async def work(mosquitto: Mosquitto, topics: Topics, manager: ToolManager) -> AsyncIterator[Work]:
    served = Work()
    async with ToolService(mosquitto.url, [served.tool], topics=topics):
        await manager.wait_for_tool("work", timeout=10)
        yield served


@pytest.fixture
async def wire(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, work: Work
) -> AsyncIterator[Wire]:
    tool_id = manager.tools_by_name["work"]["id"]
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as client:
        await client.subscribe(topics.call(tool_id), qos=1)
        await client.subscribe(topics.response(tool_id) + "/#", qos=1)
        yield Wire(client)


async def assert_stopped_at_the_tool(wire: Wire, work: Work, label: str) -> None:
    sent = await wire.wait_for("TASK", call_id=label)
    await wire.wait_for("TOOL_CANCEL", task_id=sent["task_id"])
    reply = await wire.wait_for("cancelled", task_id=sent["task_id"])
    assert reply["error_code"] == "cancelled"
    assert work.finished == []


async def test_cancelling_the_awaiting_task_cancels_the_call_at_the_tool(
    manager: ToolManager, work: Work, wire: Wire
) -> None:
    call = asyncio.ensure_future(manager.execute_tool("work", {"label": "a"}, call_id="a"))
    with anyio.fail_after(10):
        await work.started.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await assert_stopped_at_the_tool(wire, work, "a")
    assert manager.pending_calls == 0


async def test_a_cancelled_scope_around_the_call_cancels_it_at_the_tool(
    manager: ToolManager, work: Work, wire: Wire
) -> None:
    async with anyio.create_task_group() as group:
        with anyio.CancelScope() as scope:

            async def cancel_once_started() -> None:
                await work.started.wait()
                scope.cancel()

            group.start_soon(cancel_once_started)
            await manager.execute_tool("work", {"label": "b"}, call_id="b")
    assert scope.cancelled_caught
    await assert_stopped_at_the_tool(wire, work, "b")
    assert manager.pending_calls == 0


async def test_closing_the_manager_cancels_its_pending_calls_at_the_tool(
    mosquitto: Mosquitto, topics: Topics, work: Work, wire: Wire
) -> None:
    async with messager_for(mosquitto.url, topics) as messager:
        other = manager_for(messager, topics)
        await other.async_init()
        await other.wait_for_tool("work", timeout=10)
        call = asyncio.ensure_future(other.execute_tool("work", {"label": "c"}, call_id="c"))
        with anyio.fail_after(10):
            await work.started.wait()
        await other.aclose()
        result = await call
    assert result.status == TaskStatus.FAILED
    assert "closed" in getattr(result, "error", "")
    await assert_stopped_at_the_tool(wire, work, "c")


async def test_manager_cancel_ends_the_call_as_cancelled_and_stops_the_tool(
    manager: ToolManager, work: Work, wire: Wire
) -> None:
    call = asyncio.ensure_future(
        manager.execute_tool("work", {"label": "d"}, task_id_override="job-d", call_id="d")
    )
    with anyio.fail_after(10):
        await work.started.wait()
    assert await manager.cancel("job-d", reason="the user changed their mind")
    result = await call
    assert result.status == TaskStatus.CANCELLED
    assert result.task_id == "job-d"
    assert "the user changed their mind" in getattr(result, "error", "")
    await assert_stopped_at_the_tool(wire, work, "d")
    assert not await manager.cancel("job-d")


BATCH = 3_000
"""Calls in the batches below: many slices of calls started per turn of the event loop."""


async def test_cancelling_a_big_batch_ends_each_call_once_and_cancels_only_tasks_sent(
    mosquitto: Mosquitto, topics: Topics, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tool takes 400 at once and the manager sends 4 at once: most calls that have a
    # slot at the tool wait for their turn to be sent. (Tasks and TOOL_CANCELs stay
    # within the 1,000 messages the broker queues for a client.)
    monkeypatch.setattr(delivery, "SENDING", 4)
    recorder = InMemoryRecorder()
    async with (
        ToolProcess("tests.support.tool_proc", mosquitto.url, prefix, "--max-concurrency", "400"),
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("sleep", timeout=10)
        tool_id = manager.tools_by_name["sleep"]["id"]
        async with spy_on_calls(mosquitto.url, topics, tool_id) as spy:
            requests = [
                ToolCallRequest(tool_id="sleep", arguments={"seconds": 600}, timeout=900)
                for _ in range(BATCH)
            ]
            batch = asyncio.ensure_future(manager.get_tool_results(requests))
            await spy.wait_for_tasks(1)
            seen: list[int] = []

            async def probe() -> None:
                # One look per turn of the event loop, until the batch has ended.
                while not batch.done():
                    seen.append(manager.pending_calls)
                    await asyncio.sleep(0)

            watching = asyncio.ensure_future(probe())
            batch.cancel()
            with pytest.raises(asyncio.CancelledError):
                await batch
            with anyio.fail_after(10):
                await watching
            assert manager.pending_calls == 0
            # The calls ended over several turns of the loop, not all in one.
            assert any(0 < pending < max(seen) for pending in seen)
            # Published after every TOOL_CANCEL of the batch (its calls' TOOL_CANCELs go
            # out after they have all ended, and a task to the tool after those before
            # it): the wire before it is whole.
            marker = await manager.execute_tool("sleep", {"seconds": 0}, call_id="marker")
            assert marker.ok
            await spy.wait_for_call("marker")
    wire = spy.wire[:-1]
    sent = [task_id for kind, task_id in wire if kind == "TASK"]
    cancelled = [task_id for kind, task_id in wire if kind == "TOOL_CANCEL"]
    assert 0 < len(sent) < BATCH, "the batch was cancelled before all of it was sent"
    # A TOOL_CANCEL only for a task on the wire before it, and one for each.
    for position, (kind, task_id) in enumerate(wire):
        if kind == "TOOL_CANCEL":
            assert ("TASK", task_id) in wire[:position]
    assert sorted(cancelled) == sorted(sent)
    ended = [o for o in recorder.observations if o.call_id != "marker"]
    assert {o.status for o in ended} == {"cancelled"}
    assert len({o.task_id for o in ended}) == len(ended) <= BATCH
    assert set(sent) <= {o.task_id for o in ended}
