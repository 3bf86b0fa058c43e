"""Trust at the edges: results belong to their calls, remote clocks decide nothing, bad
input always ends in one clear result, replicas agree."""

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiomqtt
import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argentic_tools import (
    RegistrationError,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools._protocol.messages import encode
from tests.support.brokers import Mosquitto
from tests.support.clients import CONFIRM, manager_for, messager_for

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool
def refuse(text: str) -> str:
    """Fail, quoting the whole input."""
    raise ValueError(f"cannot use {text}")


@tool
def echo(message: str) -> str:
    """Return the message."""
    return message


@pytest.fixture
async def served(mosquitto: Mosquitto, topics: Topics) -> AsyncIterator[ToolService]:
    async with ToolService(mosquitto.url, [add, refuse], topics=topics) as service:
        yield service


async def ready(manager: ToolManager, *names: str) -> None:
    with anyio.fail_after(10):
        for name in names:
            await manager.wait_for_tool(name)


# -- 1. a result belongs to the call that made it ------------------------------------------


async def test_a_reused_call_id_gets_the_new_calls_result_not_the_recorded_one(
    manager: ToolManager, served: ToolService
) -> None:
    await ready(manager, "add")
    first = await manager.execute_tool("add", {"a": 1, "b": 2}, task_id_override="call_0")
    second = await manager.execute_tool("add", {"a": 40, "b": 2}, task_id_override="call_0")
    assert (first.result, second.result) == (3, 42)
    # The label comes back; the wire ids were the manager's own and differ.
    assert first.task_id == second.task_id == "call_0"


async def test_two_agents_with_the_same_call_id_each_get_their_own_result(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, served: ToolService
) -> None:
    from argentic_tools import ToolCallRequest

    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as other,
    ):
        await ready(manager, "add")
        await ready(other, "add")
        mine, _ = await manager.get_tool_results(
            [ToolCallRequest(tool_id="add", arguments={"a": 1, "b": 1}, call_id="calc_0")]
        )
        theirs, _ = await other.get_tool_results(
            [ToolCallRequest(tool_id="add", arguments={"a": 100, "b": 1}, call_id="calc_0")]
        )
    assert (mine[0].result, theirs[0].result) == (2, 101)
    assert mine[0].call_id == theirs[0].call_id == "calc_0"
    assert mine[0].task_id != theirs[0].task_id


async def test_a_forged_task_reusing_another_callers_task_id_does_not_get_its_result(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, served: ToolService
) -> None:
    await ready(manager, "add")
    info = await manager.wait_for_tool("add")
    mine = await manager.execute_tool("add", {"a": 5, "b": 5})
    assert mine.result == 10
    forged = TaskMessage(
        source="someone-else",
        task_id=mine.task_id,
        tool_id=info.id,
        tool_name="add",
        arguments={"a": 0, "b": 0},
        timeout_seconds=10,
    )
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as peer:
        await peer.subscribe(topics.response(info.id), qos=1)
        await peer.publish(topics.call(info.id), encode(forged), qos=1)
        with anyio.fail_after(10):
            reply = json.loads((await anext(aiter(peer.messages))).payload)
    # The tool ran the forged task for its own caller instead of replaying our result.
    assert reply["task_id"] == mine.task_id
    assert reply["result"] == 0


# -- 2. no remote clock decides a deadline ----------------------------------------------------


async def test_a_task_from_a_caller_whose_clock_is_minutes_behind_still_runs(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, served: ToolService
) -> None:
    await ready(manager, "add")
    info = await manager.wait_for_tool("add")
    # The caller's clock is 5 minutes behind the tool's: by the tool's clock the absolute
    # deadline passed long ago, but the caller waits 10 s from now.
    skewed = TaskMessage(
        source="slow-clock",
        task_id="skewed-1",
        tool_id=info.id,
        tool_name="add",
        arguments={"a": 2, "b": 2},
        timeout_seconds=10,
        deadline=time.time() - 300 + 10,
    )
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as peer:
        await peer.subscribe(topics.response(info.id), qos=1)
        await peer.publish(topics.call(info.id), encode(skewed), qos=1)
        with anyio.fail_after(10):
            reply = json.loads((await anext(aiter(peer.messages))).payload)
    assert (reply["task_id"], reply["status"], reply["result"]) == ("skewed-1", "success", 4)


async def test_a_task_whose_caller_gave_up_while_it_queued_is_declined_with_a_reason(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    release = anyio.Event()

    @tool(max_concurrency=1)
    async def gate(name: str) -> str:
        """Wait for the test to open the gate."""
        if name == "first":
            await release.wait()
        return name

    async with ToolService(mosquitto.url, [gate], topics=topics):
        await ready(manager, "gate")
        async with anyio.create_task_group() as group:
            results: dict[str, Any] = {}

            async def call(name: str, timeout: float) -> None:
                results[name] = await manager.execute_tool("gate", {"name": name}, timeout=timeout)

            group.start_soon(call, "first", 30.0)
            info = await manager.wait_for_tool("gate")
            async with aiomqtt.Client("127.0.0.1", mosquitto.port) as peer:
                await peer.subscribe(topics.response(info.id), qos=1)
                # Its caller gives it no time at all: whenever the only slot frees, the
                # caller has given up, so the tool must decline it, not run it.
                queued = TaskMessage(
                    source="impatient",
                    task_id="queued-1",
                    tool_id=info.id,
                    tool_name="gate",
                    arguments={"name": "second"},
                    timeout_seconds=0,
                )
                await peer.publish(topics.call(info.id), encode(queued), qos=1)
                release.set()
                with anyio.fail_after(10):
                    async for message in peer.messages:
                        reply = json.loads(message.payload)
                        if reply["task_id"] == "queued-1":
                            break
        assert results["first"].result == "first"
    assert reply["status"] == "timeout"
    assert "not started" in reply["error"]
    assert "timeout ran out" in reply["error"]


# -- 9. bad input ends in one prompt, clear result -----------------------------------------


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": nested(300)}, "nested deeper than"),
        ({"a": object()}, "not a JSON value"),
        ({"a": float("nan")}, "JSON cannot carry"),
        ({1: 2}, "key that is not a string"),
    ],
)
async def test_arguments_json_cannot_carry_are_refused_before_sending(
    manager: ToolManager, served: ToolService, arguments: Any, expected: str
) -> None:
    await ready(manager, "add")
    result = await manager.execute_tool("add", arguments, timeout=30)
    assert isinstance(result, TaskErrorMessage)
    assert result.error_code == "invalid_arguments"
    assert "Tool 'add'" in result.error
    assert expected in result.error


async def test_a_tool_error_quoting_a_huge_input_still_reaches_the_caller_truncated(
    manager: ToolManager, served: ToolService
) -> None:
    await ready(manager, "refuse")
    result = await manager.execute_tool("refuse", {"text": "x" * 600_000}, timeout=30)
    assert isinstance(result, TaskErrorMessage)
    assert result.error_code == "execution_error"
    assert "truncated" in result.error
    assert len(result.error) < 10_000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)
anything = json_values | st.builds(object) | st.binary(max_size=8) | st.sets(st.integers())


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(arguments=st.dictionaries(st.text(max_size=8), anything, max_size=4) | anything)
async def test_execute_tool_returns_one_result_for_any_arguments(
    manager: ToolManager, served: ToolService, arguments: Any
) -> None:
    await ready(manager, "add")
    with anyio.fail_after(30):
        result = await manager.execute_tool("add", arguments, timeout=20)
    assert isinstance(result, TaskResultMessage | TaskErrorMessage)
    if isinstance(result, TaskErrorMessage):
        assert "Tool 'add'" in result.error
        assert result.error_code in {"invalid_arguments", "execution_error"}


# -- 10. the OpenAI strict export round-trips -------------------------------------------------


async def test_a_null_for_an_optional_parameter_made_nullable_by_strict_export_means_default(
    manager: ToolManager, served: ToolService
) -> None:
    await ready(manager, "add")
    [entry] = [e for e in manager.export_tools("openai") if e["function"]["name"] == "add"]
    parameters = entry["function"]["parameters"]
    assert entry["function"]["strict"] is True
    assert parameters["required"] == ["a", "b"]
    # Exactly what strict mode lets a model send when it skips b:
    result = await manager.execute_tool("add", {"a": 2, "b": None})
    assert result.ok, result
    assert result.result == 3
    # A null for a required parameter is still an error.
    bad = await manager.execute_tool("add", {"a": None, "b": 2})
    assert isinstance(bad, TaskErrorMessage)
    assert bad.error_code == "invalid_arguments"


# -- 12. replicas agree ---------------------------------------------------------------------


async def test_a_replica_with_a_different_schema_is_refused_with_a_clear_error(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    @tool(name="echo")
    def loud_echo(message: str, volume: int) -> str:
        """Return the message, louder."""
        return message * volume

    async with ToolService(mosquitto.url, [echo], topics=topics):
        await ready(manager, "echo")
        before = manager.export_tools("mcp")
        with pytest.raises(RegistrationError, match="different schema"):
            async with ToolService(
                mosquitto.url, [loud_echo], topics=topics, confirm_timeout=CONFIRM
            ):
                pass
        assert manager.export_tools("mcp") == before
        # A replica with the same schema is welcome (entering returns once a manager
        # has confirmed it).
        async with ToolService(mosquitto.url, [echo], topics=topics, confirm_timeout=CONFIRM):
            assert len([i for i in manager.tools_by_id.values() if i["name"] == "echo"]) == 2
        result = await manager.execute_tool("echo", {"message": "hi"})
        assert result.status == TaskStatus.SUCCESS


# -- 3. a burst never overflows the broker's queue for a tool -------------------------------


async def test_a_burst_to_a_frozen_tool_waits_in_the_manager_instead_of_being_dropped(
    prefix: str,
) -> None:
    import os
    import signal

    from tests.support.brokers import running_mosquitto
    from tests.support.observers import spy_on_calls
    from tests.support.processes import ToolProcess, python_cmd  # noqa: F401 - python_cmd documents the child

    # mosquitto's defaults for a slow client: 20 in flight, a short queue (1,000 by default;
    # 10 here so the test needs few calls), and whatever is beyond is dropped.
    with running_mosquitto("max_inflight_messages 20\nmax_queued_messages 10\n") as broker:
        topics = Topics.with_prefix(prefix)
        async with (
            messager_for(broker.url, topics) as messager,
            manager_for(messager, topics) as manager,
        ):
            with ToolProcess(
                "tests.support.tool_proc", broker.url, prefix, "--max-concurrency", "4"
            ) as proc:
                info = await manager.wait_for_tool("sleep", timeout=15)
                assert info.metadata["max_concurrency"] == 4
                os.kill(proc.pid, signal.SIGSTOP)
                try:
                    async with (
                        spy_on_calls(broker.url, topics, info.id) as spy,
                        anyio.create_task_group() as group,
                    ):
                        results: list[Any] = []

                        async def call(n: int) -> None:
                            results.append(
                                await manager.execute_tool(
                                    "sleep", {"seconds": 0}, timeout=60, call_id=f"burst-{n}"
                                )
                            )

                        for n in range(60):
                            group.start_soon(call, n)
                        # The tool's 4 slots are taken; the other 56 calls wait here.
                        await spy.wait_for_tasks(4)
                        os.kill(proc.pid, signal.SIGCONT)
                finally:
                    os.kill(proc.pid, signal.SIGCONT)
    assert [r.status.value for r in results].count("success") == 60


# -- 5. a flood of registrations is bounded and costs registered tools nothing ---------------


async def test_a_registration_flood_is_bounded_and_real_calls_keep_succeeding(
    mosquitto: Mosquitto, topics: Topics
) -> None:
    from argentic_tools import RegisterToolMessage, ToolSpec

    def forged(n: int, source: str | None = None) -> bytes:
        schema = {"type": "object", "properties": {f"p{n}": {"type": "integer", "maximum": n}}}
        return encode(
            RegisterToolMessage(
                source=source or f"forger-{n % 50}",
                tool_name=f"forged-{n}",
                tool_manual="not a real tool",
                tool_api=json.dumps(schema),
                tool_spec=ToolSpec(name=f"forged-{n}", description="", input_schema=schema),
                protocol=1,
            )
        )

    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, max_tools=300, max_tools_per_client=5) as manager,
        ToolService(mosquitto.url, [add], topics=topics),
    ):
        await ready(manager, "add")
        results: list[Any] = []
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as forger:

            async def flood() -> None:
                for n in range(1_000):
                    await forger.publish(topics.register, forged(n), qos=0)

            async def calls() -> None:
                for n in range(50):
                    results.append(await manager.execute_tool("add", {"a": n}, timeout=30))

            with anyio.fail_after(120):
                async with anyio.create_task_group() as group:
                    group.start_soon(flood)
                    group.start_soon(calls)
                # The flood is over once a marker sent after it on the same topic lands.
                await forger.publish(topics.register, forged(10_000_000, "marker"), qos=1)
                await manager.wait_for_tool("forged-10000000")
        forged_tools = [n for n in manager.get_tool_names() if n.startswith("forged-")]
        # 50 forging clients, 5 tools each, and the marker.
        assert len(forged_tools) <= 50 * 5 + 1
        assert [r.result for r in results] == [n + 1 for n in range(50)]
        # The real tool is still there and answers.
        after = await manager.execute_tool("add", {"a": 1, "b": 1})
        assert after.result == 2


# -- 4. a graceful broker restart fails no call that outlasts it ------------------------------


async def test_calls_around_a_graceful_broker_restart_all_succeed(
    private_mosquitto: Mosquitto, topics: Topics, prefix: str
) -> None:
    from tests.support.observers import spy_on_calls
    from tests.support.processes import ToolProcess

    broker = private_mosquitto
    with ToolProcess("tests.support.tool_proc", broker.url, prefix):
        async with (
            messager_for(broker.url, topics) as messager,
            manager_for(messager, topics) as manager,
        ):
            await manager.wait_for_tool("sleep", timeout=15)
            await manager.wait_for_tool("echo", timeout=15)
            sleep_id = manager.tools_by_name["sleep"]["id"]
            async with anyio.create_task_group() as group:
                results: list[Any] = []

                async def call(name: str, arguments: dict[str, Any], label: str) -> None:
                    result = await manager.execute_tool(name, arguments, timeout=30, call_id=label)
                    results.append(result)

                async with spy_on_calls(broker.url, topics, sleep_id) as spy:
                    for n in range(5):
                        group.start_soon(call, "sleep", {"seconds": 0.5}, f"before-{n}")
                    await spy.wait_for_calls(5)
                # SIGTERM: mosquitto publishes every client's Last Will as it stops.
                await anyio.to_thread.run_sync(broker.stop)
                for n in range(5):
                    group.start_soon(call, "echo", {"message": f"during-{n}"}, f"during-{n}")
                await anyio.to_thread.run_sync(broker.start)
            after = await manager.execute_tool("echo", {"message": "after"}, timeout=30)
    outcomes = {r.call_id: (r.status.value, getattr(r, "error", None)) for r in results}
    assert all(status == "success" for status, _ in outcomes.values()), outcomes
    assert len(outcomes) == 10
    assert after.ok, after


# -- 7. a newcomer with a held tool id runs nothing -----------------------------------------


async def test_a_newcomer_with_a_pinned_id_already_held_runs_no_task(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    runs = {"holder": 0, "newcomer": 0}

    def counter(who: str) -> Any:
        @tool(name="counted", tool_id="counted-1")
        async def counted(n: int) -> str:
            """Count who ran the call."""
            runs[who] += 1
            await anyio.lowlevel.checkpoint()
            return who

        return counted

    async with ToolService(mosquitto.url, [counter("holder")], topics=topics):
        await ready(manager, "counted")
        results: list[Any] = []
        newcomer_refused = anyio.Event()

        async def calls() -> None:
            n = 0
            while not newcomer_refused.is_set() or n < 50:
                results.append(await manager.execute_tool("counted", {"n": n}, timeout=10))
                n += 1

        async def newcomers() -> None:
            for _ in range(5):
                with pytest.raises(RegistrationError, match="already used"):
                    async with ToolService(
                        mosquitto.url, [counter("newcomer")], topics=topics, confirm_timeout=CONFIRM
                    ):
                        pass
            newcomer_refused.set()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for _ in range(8):
                    group.start_soon(calls)
                group.start_soon(newcomers)
    assert runs["newcomer"] == 0
    assert all(r.result == "holder" for r in results), {r.status.value for r in results}
    assert runs["holder"] == len(results)


async def test_calls_waiting_for_a_slot_end_promptly_when_their_tool_leaves(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    import asyncio

    gate = anyio.Event()
    started = anyio.Event()

    @tool(max_concurrency=1)
    async def single(n: int) -> int:
        """Hold the only slot until the gate opens."""
        started.set()
        await gate.wait()
        return n

    service = ToolService(mosquitto.url, [single], topics=topics, grace_period=10)
    await service.start()
    info = await manager.wait_for_tool("single", timeout=10)
    first = asyncio.ensure_future(manager.execute_tool("single", {"n": 1}, timeout=30))
    with anyio.fail_after(10):
        await started.wait()
    # The only slot is taken: this call waits in the manager, never published.
    waiting = asyncio.ensure_future(manager.execute_tool("single", {"n": 2}, timeout=30))
    with anyio.fail_after(10):
        while manager.pending_calls < 2:
            await anyio.sleep(0.01)
    closing = asyncio.ensure_future(service.aclose())
    await manager.wait_for_tool_removed(info.id, timeout=10)
    with anyio.fail_after(10):
        second = await waiting
    assert isinstance(second, TaskErrorMessage)
    assert second.error_code == "tool_offline"
    gate.set()
    with anyio.fail_after(15):
        assert (await first).result == 1
        await closing


# -- 11. tool_offline says whether the tool may have run ------------------------------------


async def test_a_call_whose_tool_process_dies_says_execution_is_unknown(
    mosquitto: Mosquitto, manager: ToolManager, prefix: str, topics: Topics
) -> None:
    import asyncio

    from tests.support.observers import spy_on_calls
    from tests.support.processes import ToolProcess

    async with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix) as proc:
        info = await manager.wait_for_tool("sleep", timeout=15)
        async with spy_on_calls(mosquitto.url, topics, info.id) as spy:
            call = asyncio.ensure_future(
                manager.execute_tool("sleep", {"seconds": 60}, timeout=60, call_id="doomed")
            )
            assert await spy.wait_for_calls(1) == ["doomed"]
        await anyio.to_thread.run_sync(proc.kill)
        with anyio.fail_after(15):
            result = await call
    assert isinstance(result, TaskErrorMessage)
    assert result.error_code == "tool_offline"
    assert "may or may not have run the task" in result.error
    assert result.details == {"executed": "unknown"}
