"""Streams paced by their reader, on a broker with mosquitto's default limits per client.

mosquitto queues at most 1,000 QoS 1 messages for a client beyond the 20 in flight and
drops the rest silently. A tool that sends 100,000 chunks as fast as the broker takes
them fills that queue for its caller within a second: the stream must be paced by its
reader, so a slow reader slows the tool down and a reader that stops pauses it, and no
chunk is ever lost on a healthy broker.
"""

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import aiomqtt
import anyio
import anyio.lowlevel
import pytest

from argentic_tools import (
    TaskErrorMessage,
    ToolCreditMessage,
    ToolManager,
    Topics,
)
from argentic_tools._agent.calls.pending.progress import STREAM_WINDOW
from argentic_tools._agent.calls.results.streams import STREAM_BUFFER_CHUNKS
from tests.support.brokers import Mosquitto, running_mosquitto
from tests.support.clients import manager_with_tools
from tests.support.observers import spy_on_calls
from tests.support.processes import ToolProcess, serving

pytestmark = pytest.mark.anyio

COUNT = 100_000
"""Chunks a stream is asked for: a hundred times the broker's queue for its caller."""

SIZE = 1024
"""Characters per chunk (the first eight are its number)."""

MOSQUITTO_DEFAULTS = "max_queued_messages 1000\nmax_inflight_messages 20\n"
"""mosquitto's own limits per client, which the shared test broker raises."""

PACED_TOOLS = ("many", "many_sync")


@pytest.fixture(scope="module")
def default_broker() -> Iterator[Mosquitto]:
    """A mosquitto with its default queue per client (the later lines of its config win)."""
    with running_mosquitto(MOSQUITTO_DEFAULTS) as broker:
        yield broker


@pytest.fixture(scope="module")
def pacing_process(default_broker: Mosquitto) -> Iterator[tuple[ToolProcess, str]]:
    """The generator tools of ``tests.support.long_proc`` in their own process, and its prefix."""
    prefix = f"sp{uuid.uuid4().hex[:10]}"
    with serving("tests.support.long_proc", default_broker.url, prefix, PACED_TOOLS) as process:
        yield process, prefix


@pytest.fixture
async def pacing_manager(
    default_broker: Mosquitto, pacing_process: tuple[ToolProcess, str]
) -> AsyncIterator[ToolManager]:
    topics = Topics.with_prefix(pacing_process[1])
    async with manager_with_tools(default_broker.url, topics, PACED_TOOLS) as manager:
        yield manager


def number(chunk: str) -> int:
    return int(chunk[:8])


async def pauses(manager: ToolManager, name: str) -> tuple[int, int]:
    """The tool's own count of the times its streams waited for a reader, and how many wait now."""
    answers = await manager.fleet_stats(wait=10)
    entries = [entry for answer in answers for entry in answer.tools if entry.tool_name == name]
    assert entries, f"the process serving {name!r} did not answer the stats request"
    return sum(e.slowed for e in entries), sum(e.paused for e in entries)


async def until_paused(manager: ToolManager, name: str) -> None:
    """Wait until the tool says a stream of it waits for its reader (bounded)."""
    with anyio.fail_after(30):
        while (await pauses(manager, name))[1] == 0:
            await anyio.lowlevel.checkpoint()


async def test_a_slow_reader_gets_all_100000_chunks_in_order_and_slows_the_tool(
    pacing_manager: ToolManager,
) -> None:
    slowed_before, _ = await pauses(pacing_manager, "many")
    seen = 0
    with anyio.fail_after(900):
        async with pacing_manager.stream_tool(
            "many", {"count": COUNT, "size": SIZE}, timeout=900
        ) as stream:
            async for chunk in stream:
                assert number(chunk) == seen
                seen += 1
                if seen % 20_000 == 0 and seen < COUNT:
                    # The reader falls behind: it reads on only once the tool waits for it.
                    await until_paused(pacing_manager, "many")
    result = stream.result
    assert result is not None and result.ok, result
    assert seen == COUNT
    assert len(result.result) == COUNT
    slowed_after, paused = await pauses(pacing_manager, "many")
    assert slowed_after >= slowed_before + 4  # the tool waited at least at each stop
    assert paused == 0


@pytest.mark.parametrize("name", PACED_TOOLS)
async def test_a_reader_that_stops_pauses_the_tool_and_the_deadline_names_the_window(
    pacing_manager: ToolManager, default_broker: Mosquitto, name: str
) -> None:
    topics = pacing_manager.topics
    tool_id = pacing_manager.tools_by_name[name]["id"]
    slowed_before, _ = await pauses(pacing_manager, name)
    async with spy_on_calls(default_broker.url, topics, tool_id) as spy:
        with anyio.fail_after(60):
            async with pacing_manager.stream_tool(
                name, {"count": COUNT, "size": SIZE}, timeout=5
            ) as stream:
                first = [await anext(stream) for _ in range(10)]
                # The reader stops. Credit claimed by anyone but the caller counts for nothing.
                (task,) = await spy.wait_for_tasks(1)
                forged = ToolCreditMessage(
                    source="intruder", task_id=task.task_id, tool_id=tool_id, read=COUNT
                )
                async with aiomqtt.Client("127.0.0.1", default_broker.port) as intruder:
                    await intruder.publish(topics.call(tool_id), forged.model_dump_json(), qos=1)
                runner = stream._runner
                assert runner is not None
                await asyncio.wait({runner})
                result = stream.result
                # The call ends at its deadline, saying why and what was delivered.
                assert isinstance(result, TaskErrorMessage), result
                assert result.error_code == "timeout", result.error
                assert f"paused at its window of {STREAM_WINDOW} chunks" in result.error
                assert "Nothing was lost" in result.error
                assert result.details == {
                    "delivered": STREAM_WINDOW,
                    "read": 10,
                    "window": STREAM_WINDOW,
                }
                # What was delivered is still read, in order: the tool sent only its window.
                rest = [chunk async for chunk in stream]
    assert [number(chunk) for chunk in [*first, *rest]] == list(range(STREAM_WINDOW))
    slowed_after, _ = await pauses(pacing_manager, name)
    assert slowed_after > slowed_before
    with anyio.fail_after(30):
        while (await pauses(pacing_manager, name))[1] != 0:  # the call's end ended the pause
            await anyio.lowlevel.checkpoint()
    assert pacing_manager.pending_calls == 0


async def test_a_reader_that_resumes_after_the_tool_paused_gets_every_chunk(
    pacing_manager: ToolManager,
) -> None:
    seen: list[int] = []
    with anyio.fail_after(120):
        async with pacing_manager.stream_tool(
            "many_sync", {"count": 4 * STREAM_BUFFER_CHUNKS, "size": SIZE}, timeout=120
        ) as stream:
            async for chunk in stream:
                seen.append(number(chunk))
                if len(seen) == 10:
                    await until_paused(pacing_manager, "many_sync")
    assert stream.result is not None and stream.result.ok, stream.result
    assert seen == list(range(4 * STREAM_BUFFER_CHUNKS))
