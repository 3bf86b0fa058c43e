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
    ToolRegisteredMessage,
    Topics,
    parse_message,
)
from argentic_tools._protocol.messages import encode
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.observers import spy_on_calls
from tests.support.processes import ToolProcess, ready

pytestmark = pytest.mark.anyio


async def new_registration_of(name: str, watcher: aiomqtt.Client, *, besides: str) -> str:
    """The id of the next TOOL_REGISTERED for ``name`` other than ``besides`` (bounded)."""
    with anyio.fail_after(15):
        async for message in watcher.messages:
            confirmed = parse_message(message.payload)
            if (
                isinstance(confirmed, ToolRegisteredMessage)
                and confirmed.tool_name == name
                and confirmed.tool_id != besides
            ):
                return confirmed.tool_id
    raise AssertionError("the watcher's connection ended")


async def test_killed_tool_fails_its_pending_calls_through_last_will(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix) as proc:
        await ready(manager)
        info = await manager.wait_for_tool("sleep", timeout=15)
        async with spy_on_calls(mosquitto.url, topics, info.id) as spy:
            calls = [
                asyncio.create_task(
                    manager.execute_tool(
                        "sleep", {"seconds": 60}, call_id=f"doomed-{i}", timeout=60
                    )
                )
                for i in range(3)
            ]
            # The three tasks went through the broker to the tool before it is killed.
            assert sorted(map(str, await spy.wait_for_calls(3))) == [
                "doomed-0",
                "doomed-1",
                "doomed-2",
            ]
        proc.kill()
        with anyio.fail_after(30):
            results = await asyncio.gather(*calls)
    assert sorted(str(r.call_id) for r in results) == ["doomed-0", "doomed-1", "doomed-2"]
    for result in results:
        assert isinstance(result, TaskErrorMessage)
        assert result.error_code == "tool_offline"
        assert "Tool 'sleep' went offline" in result.error
    await manager.wait_for_tool_removed(info.id, timeout=10)
    assert "sleep" not in manager.get_tool_names()


async def test_restarted_manager_gets_live_tools_back_without_restarting_them(
    mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix):
        async with messager_for(mosquitto.url, topics) as first, manager_for(first, topics) as m1:
            await ready(m1)
            first_id = m1.tools_by_name["echo"]["id"]
            assert (await m1.execute_tool("echo", {"message": "one"})).ok
        async with messager_for(mosquitto.url, topics) as second, manager_for(second, topics) as m2:
            await m2.wait_for_tool("echo", timeout=10)
            result = await m2.execute_tool("echo", {"message": "two"})
            assert result.ok and result.result == "two"
            # The tool keeps its id across manager restarts.
            assert m2.tools_by_name["echo"]["id"] == first_id


async def test_broker_restart_is_survived_by_manager_and_tools(
    private_mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    broker = private_mosquitto
    with ToolProcess("tests.support.tool_proc", broker.url, prefix):
        async with (
            messager_for(broker.url, topics) as messager,
            manager_for(messager, topics) as manager,
        ):
            await ready(manager)
            sleep_id = manager.tools_by_name["sleep"]["id"]
            async with spy_on_calls(broker.url, topics, sleep_id) as spy:
                in_flight = asyncio.create_task(
                    manager.execute_tool("sleep", {"seconds": 0.5}, call_id="in-flight", timeout=3)
                )
                # The task reached the broker and the tool before the outage.
                assert await spy.wait_for_calls(1) == ["in-flight"]
            broker.kill()
            await anyio.to_thread.run_sync(broker.start)
            # Called at once, before manager and tool have even noticed the restart.
            result = await manager.execute_tool("echo", {"message": "after"}, timeout=10)
            assert result.ok, result
            assert result.result == "after"
            with anyio.fail_after(3 + 2):
                outcome = await in_flight
            # The call in flight during the outage ends either way, never hangs.
            assert isinstance(outcome, TaskResultMessage | TaskErrorMessage)
            assert outcome.call_id == "in-flight"


async def test_two_processes_with_the_same_tool_name_are_both_served(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix) as first:
        await ready(manager)
        first_id = manager.tools_by_name["whoami"]["id"]
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as watcher:
            # The manager confirms each registration it admits, on the registering
            # process's own status topic.
            await watcher.subscribe(topics.status + "/#", qos=1)
            async with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix) as second:
                second_id = await new_registration_of("whoami", watcher, besides=first_id)
                await manager.wait_for_tool(second_id, timeout=10)
                ids = {tid for tid, t in manager.tools_by_id.items() if t["name"] == "whoami"}
                assert ids == {first_id, second_id}
                pids = set()
                for _ in range(10):
                    result = await manager.execute_tool("whoami", {})
                    assert result.ok
                    pids.add(result.result["pid"])
                assert pids == {first.pid, second.pid}
                assert await second.stop() == 0
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

    async with (
        aiomqtt.Client("127.0.0.1", mosquitto.port) as intruder,
        spy_on_calls(mosquitto.url, topics, sleep_id) as spy,
    ):
        call = asyncio.create_task(
            manager.execute_tool("sleep", {"seconds": 0.3}, call_id="victim", timeout=10)
        )
        # The victim task is out: the forgeries below carry its real task id.
        (sent,) = await spy.wait_for_tasks(1)
        assert sent.call_id == "victim"
        victim = sent.task_id
        # A result for the victim task on another tool's topic must not resolve it.
        await intruder.publish(topics.response(echo_id), forged(victim, echo_id, "echo"), qos=1)
        await intruder.publish(topics.response(sleep_id), forged("nobody", sleep_id, "sleep"), 1)
        result = await call
        assert result.ok and result.result == 0.3
        # A duplicate of a finished task is dropped too.
        await intruder.publish(topics.response(sleep_id), forged(victim, sleep_id, "sleep"), 1)
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
            replies.append(json.loads(message.payload))
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
        replies: dict[str, list[Any]] = {}
        with anyio.fail_after(60):
            # "early" has finished (it is not merely running) before the newer tasks come.
            await peer.publish(topics.call(info.id), task("early"), qos=1)
            message = await anext(aiter(peer.messages))
            reply = json.loads(message.payload)
            replies.setdefault(reply["task_id"], []).append(reply["result"])
            # Published concurrently, not one round trip at a time; the broker keeps the
            # order, so "early" comes again after all the newer tasks.
            later = [*(f"newer-{i}" for i in range(newer)), "early"]
            peer.pending_calls_threshold = len(later)  # so many in flight is intended here
            await asyncio.gather(
                *(peer.publish(topics.call(info.id), task(t), qos=1) for t in later)
            )
            async for message in peer.messages:
                reply = json.loads(message.payload)
                replies.setdefault(reply["task_id"], []).append(reply["result"])
                if len(replies) == newer + 1 and len(replies["early"]) == 2:
                    break
    # The second delivery of "early" got the recorded result, and the tool ran every
    # task once.
    first, second = replies["early"]
    assert first == second == 1
    fresh = await manager.execute_tool("count", {})
    assert fresh.result == newer + 2
