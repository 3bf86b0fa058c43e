"""Failure behaviour against real processes: every case ends in a clear outcome, never a hang."""

import asyncio
import json
import time
from typing import Any

import aiomqtt
import anyio
import pytest

from argentic_tools import (
    TaskErrorMessage,
    TaskResultMessage,
    TaskStatus,
    ToolManager,
    Topics,
)
from argentic_tools._protocol.messages import encode

from .brokers import Mosquitto
from .conftest import ToolProcess, manager_for, messager_for, ready

pytestmark = pytest.mark.anyio


async def test_killed_tool_fails_its_pending_calls_through_last_will(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    with ToolProcess("tests.tool_proc", mosquitto.url, prefix) as proc:
        await ready(manager)
        info = await manager.wait_for_tool("sleep", timeout=15)
        calls = [
            asyncio.create_task(manager.execute_tool("sleep", {"seconds": 60}, timeout=60))
            for _ in range(3)
        ]
        with anyio.fail_after(10):
            while manager.pending_calls < 3:
                await asyncio.sleep(0)  # let the calls get published
        started = time.monotonic()
        proc.kill()
        with anyio.fail_after(30):
            results = await asyncio.gather(*calls)
        elapsed = time.monotonic() - started
    for result in results:
        assert isinstance(result, TaskErrorMessage)
        assert result.error_code == "tool_offline"
        assert "Tool 'sleep' went offline" in result.error
    await manager.wait_for_tool_removed(info.id, timeout=10)
    assert "sleep" not in manager.get_tool_names()
    print(f"SIGKILL -> pending calls failed after {elapsed * 1000:.0f} ms")


async def test_restarted_manager_gets_live_tools_back_without_restarting_them(
    mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    with ToolProcess("tests.tool_proc", mosquitto.url, prefix):
        async with messager_for(mosquitto.url, topics) as first, manager_for(first, topics) as m1:
            await ready(m1)
            first_id = m1.tools_by_name["echo"]["id"]
            assert (await m1.execute_tool("echo", {"message": "one"})).ok
        started = time.monotonic()
        async with messager_for(mosquitto.url, topics) as second, manager_for(second, topics) as m2:
            await m2.wait_for_tool("echo", timeout=10)
            result = await m2.execute_tool("echo", {"message": "two"})
            elapsed = time.monotonic() - started
            assert result.ok and result.result == "two"
            # The tool keeps its id across manager restarts.
            assert m2.tools_by_name["echo"]["id"] == first_id
    print(f"manager restart -> first successful call after {elapsed * 1000:.0f} ms")


async def test_broker_restart_is_survived_by_manager_and_tools(
    private_mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    broker = private_mosquitto
    with ToolProcess("tests.tool_proc", broker.url, prefix):
        async with (
            messager_for(broker.url, topics) as messager,
            manager_for(messager, topics) as manager,
        ):
            await ready(manager)
            in_flight = asyncio.create_task(
                manager.execute_tool("sleep", {"seconds": 0.5}, timeout=3)
            )
            with anyio.fail_after(10):
                while manager.pending_calls < 1:
                    await asyncio.sleep(0)
            broker.kill()
            await anyio.to_thread.run_sync(broker.start)
            returned = time.monotonic()
            # Called at once, before manager and tool have even noticed the restart.
            result = await manager.execute_tool("echo", {"message": "after"}, timeout=10)
            elapsed = time.monotonic() - returned
            assert result.ok, result
            assert result.result == "after"
            with anyio.fail_after(3 + 2):
                outcome = await in_flight
            assert isinstance(outcome, TaskResultMessage | TaskErrorMessage)
    print(
        f"broker restart -> a call made at once succeeded {elapsed * 1000:.0f} ms after the "
        f"broker returned; the call in flight during the outage ended as {outcome.status.value}"
    )


async def test_two_processes_with_the_same_tool_name_are_both_served(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str
) -> None:
    with ToolProcess("tests.tool_proc", mosquitto.url, prefix) as first:
        await ready(manager)
        first_id = manager.tools_by_name["whoami"]["id"]
        with ToolProcess("tests.tool_proc", mosquitto.url, prefix) as second:
            with anyio.fail_after(15):
                while len([t for t in manager.tools_by_id.values() if t["name"] == "whoami"]) < 2:
                    await manager._registry.changed()
            ids = {tid for tid, t in manager.tools_by_id.items() if t["name"] == "whoami"}
            assert len(ids) == 2 and first_id in ids
            pids = set()
            for _ in range(10):
                result = await manager.execute_tool("whoami", {})
                assert result.ok
                pids.add(result.result["pid"])
            assert pids == {first.pid, second.pid}
            second_id = (ids - {first_id}).pop()
            assert second.terminate() == 0
            await manager.wait_for_tool_removed(second_id, timeout=10)
        # The first process is untouched by the second one leaving.
        assert manager.tools_by_name["whoami"]["id"] == first_id
        for _ in range(4):
            result = await manager.execute_tool("whoami", {})
            assert result.ok and result.result["pid"] == first.pid


async def test_forged_late_duplicate_and_unknown_results_are_dropped(
    manager: ToolManager, mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics
) -> None:
    await ready(manager)
    echo_id = manager.tools_by_name["echo"]["id"]
    sleep_id = manager.tools_by_name["sleep"]["id"]

    def forged(task_id: str, tool_id: str, tool_name: str) -> bytes:
        return encode(
            TaskResultMessage(
                task_id=task_id,
                tool_id=tool_id,
                tool_name=tool_name,
                status=TaskStatus.SUCCESS,
                result="forged",
            )
        )

    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as intruder:
        call = asyncio.create_task(
            manager.execute_tool("sleep", {"seconds": 0.3}, task_id_override="victim", timeout=10)
        )
        with anyio.fail_after(10):
            while manager.pending_calls < 1:
                await asyncio.sleep(0)
        # A result for the victim task on another tool's topic must not resolve it.
        await intruder.publish(topics.response(echo_id), forged("victim", echo_id, "echo"), qos=1)
        await intruder.publish(topics.response(sleep_id), forged("nobody", sleep_id, "sleep"), 1)
        result = await call
        assert result.ok and result.result == 0.3
        # A duplicate of a finished task is dropped too.
        await intruder.publish(topics.response(sleep_id), forged("victim", sleep_id, "sleep"), 1)
    again = await manager.execute_tool("echo", {"message": "fine"})
    assert again.ok and again.result == "fine"


async def test_two_managers_each_get_their_own_results(
    mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics
) -> None:
    async with (
        messager_for(mosquitto.url, topics) as ma,
        manager_for(ma, topics) as a,
        messager_for(mosquitto.url, topics) as mb,
        manager_for(mb, topics) as b,
    ):
        await ready(a)
        await ready(b)
        assert set(a.get_tool_names()) == set(b.get_tool_names())
        assert a.tools_by_name["echo"]["id"] == b.tools_by_name["echo"]["id"]

        async def burst(manager: ToolManager, tag: str) -> list[str]:
            results = await asyncio.gather(
                *(manager.execute_tool("echo", {"message": f"{tag}-{i}"}) for i in range(50))
            )
            return [r.result for r in results]

        got_a, got_b = await asyncio.gather(burst(a, "a"), burst(b, "b"))
        assert got_a == [f"a-{i}" for i in range(50)]
        assert got_b == [f"b-{i}" for i in range(50)]


async def test_a_redelivered_task_is_executed_at_most_once(
    manager: ToolManager, mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics
) -> None:
    from argentic_tools import TaskMessage

    await ready(manager)
    info = await manager.wait_for_tool("count", timeout=15)
    task = encode(TaskMessage(task_id="once", tool_id=info.id, tool_name="count", arguments={}))
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as peer:
        await peer.subscribe(topics.response(info.id), qos=1)
        replies = []
        for _ in range(2):  # the second delivery comes after the first has run, as after
            await peer.publish(topics.call(info.id), task, qos=1)  # a reconnect
            with anyio.fail_after(10):
                message = await anext(aiter(peer.messages))
            replies.append(json.loads(message.payload))  # type: ignore[arg-type]
    # The duplicate got the recorded result; the tool ran once.
    assert [r["result"] for r in replies] == [1, 1]
    assert [r["task_id"] for r in replies] == ["once", "once"]
    fresh = await manager.execute_tool("count", {})
    assert fresh.result == 2


async def test_a_task_is_remembered_until_its_deadline_even_past_4096_newer_tasks(
    manager: ToolManager, mosquitto: Mosquitto, tool_process: ToolProcess, topics: Topics
) -> None:
    from argentic_tools import TaskMessage

    await ready(manager)
    info = await manager.wait_for_tool("count", timeout=15)
    deadline = time.time() + 600  # redeliverable for ten minutes: it must not run twice

    def task(task_id: str) -> bytes:
        return encode(
            TaskMessage(
                task_id=task_id,
                tool_id=info.id,
                tool_name="count",
                arguments={},
                deadline=deadline,
            )
        )

    newer = 4100
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as peer:
        await peer.subscribe(topics.response(info.id), qos=1)
        await peer.publish(topics.call(info.id), task("early"), qos=1)
        for i in range(newer):
            await peer.publish(topics.call(info.id), task(f"newer-{i}"), qos=1)
        await peer.publish(topics.call(info.id), task("early"), qos=1)
        replies: dict[str, list[Any]] = {}
        with anyio.fail_after(60):
            async for message in peer.messages:
                reply = json.loads(message.payload)  # type: ignore[arg-type]
                replies.setdefault(reply["task_id"], []).append(reply["result"])
                if len(replies.get("early", ())) == 2:
                    break
    # The second delivery of "early" got the recorded result (tasks run concurrently, so
    # its count is not necessarily 1), and the tool ran every task once.
    first, second = replies["early"]
    assert first == second
    fresh = await manager.execute_tool("count", {})
    assert fresh.result == newer + 2
