"""Hostile input on every topic the manager and a tool subscribe to: dropped, never fatal."""

import json
import logging
from collections.abc import Iterator

import aiomqtt
import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argentic_tools import PROTOCOL_VERSION, RegisterToolMessage, ToolManager, Topics
from tests.support.brokers import Mosquitto, running_mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ToolProcess, ready

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)
types = st.sampled_from(
    [
        "TASK",
        "REGISTER_TOOL",
        "UNREGISTER_TOOL",
        "TOOL_REGISTERED",
        "CLIENT_OFFLINE",
        "MANAGER_ONLINE",
        "???",
        "",
    ]
)
shaped = st.fixed_dictionaries(
    {"type": types},
    optional={
        "task_id": json_values,
        "tool_id": json_values,
        "tool_name": json_values,
        "status": json_values,
        "result": json_values,
        "error": json_values,
        "arguments": json_values,
        "tool_api": json_values,
        "source": json_values,
    },
).map(lambda d: json.dumps(d).encode())
payloads = st.one_of(
    st.binary(max_size=300),
    shaped,
    json_values.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 400).map(lambda depth: b"[" * depth + b"]" * depth),
    st.just(b'{"type": "TASK", "tool_name": "' + b"x" * 200_000 + b'"}'),
    st.just(b"\xc3\x28\xa0\xa1"),
)


def registrations(manager: ToolManager) -> dict[str, tuple[str, str]]:
    """Name and argument schema of every registered tool, by id."""
    return {tid: (tool["name"], tool["parameters"]) for tid, tool in manager.tools_by_id.items()}


@pytest.fixture(scope="module")
def fuzz_world() -> Iterator[tuple[Mosquitto, Topics, ToolProcess]]:
    with running_mosquitto() as broker:
        topics = Topics.with_prefix("fuzz")
        with ToolProcess("tests.support.tool_proc", broker.url, "fuzz") as proc:
            yield broker, topics, proc


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(payloads, min_size=20, max_size=40))
def test_random_and_mutated_messages_never_break_manager_or_tool(
    fuzz_world: tuple[Mosquitto, Topics, ToolProcess], batch: list[bytes]
) -> None:
    broker, topics, proc = fuzz_world

    async def scenario() -> None:
        async with (
            messager_for(broker.url, topics) as messager,
            manager_for(messager, topics) as manager,
        ):
            await ready(manager)
            before = registrations(manager)
            echo_id = manager.tools_by_name["echo"]["id"]
            targets = [
                topics.register,
                topics.status,
                topics.response(echo_id),
                topics.call(echo_id),
            ]
            async with aiomqtt.Client("127.0.0.1", broker.port) as attacker:
                for index, payload in enumerate(batch):
                    await attacker.publish(targets[index % len(targets)], payload, qos=1)
            with anyio.fail_after(10):
                result = await manager.execute_tool("echo", {"message": "still alive"})
            assert result.ok, result
            assert result.result == "still alive"
            # Every real registration survived as it was: same ids, names and schemas (a
            # well-formed REGISTER_TOOL in the batch may add a tool, never alter one).
            after = registrations(manager)
            assert {tid: after.get(tid) for tid in before} == before
            # No garbage result left a call waiting.
            assert manager.pending_calls == 0

    anyio.run(scenario)
    assert proc.process is not None
    assert proc.process.poll() is None, "the tool process died"


def test_a_flood_of_garbage_is_logged_a_bounded_number_of_times(
    fuzz_world: tuple[Mosquitto, Topics, ToolProcess], caplog: pytest.LogCaptureFixture
) -> None:
    broker, topics, proc = fuzz_world
    flood = 200
    canary = RegisterToolMessage(
        tool_name="canary", source="fuzz-attacker", protocol=PROTOCOL_VERSION
    )

    async def scenario() -> None:
        async with (
            messager_for(broker.url, topics) as messager,
            manager_for(messager, topics) as manager,
        ):
            await ready(manager)
            before = registrations(manager)
            async with aiomqtt.Client("127.0.0.1", broker.port) as attacker:
                for index in range(flood):
                    await attacker.publish(topics.register, b"\xff garbage %d" % index, qos=1)
                # Same connection, same topic: the manager reads the canary after the
                # whole flood, so once it is registered every piece of garbage was handled.
                await attacker.publish(topics.register, canary.model_dump_json(), qos=1)
            await manager.wait_for_tool("canary", timeout=10)
            with anyio.fail_after(10):
                result = await manager.execute_tool("echo", {"message": "still alive"})
            assert result.ok and result.result == "still alive"
            after = registrations(manager)
            assert {tid: after.get(tid) for tid in before} == before

    with caplog.at_level(logging.WARNING, logger="argentic_tools.manager"):
        anyio.run(scenario)
    on_register = f"dropped message on {topics.register!r}"
    dropped = [r for r in caplog.records if r.getMessage().startswith(on_register)]
    # Each garbage message is dropped, but a flood cannot fill a disk: at most 20 lines a
    # minute, and the flood took far less.
    assert 1 <= len(dropped) <= 20
    assert proc.process is not None
    assert proc.process.poll() is None, "the tool process died"
