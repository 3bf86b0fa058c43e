"""Hostile input on every topic the manager and a tool subscribe to: dropped, never fatal."""

import json
import resource
from collections.abc import Iterator

import aiomqtt
import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argentic_tools import Topics

from .brokers import Mosquitto, running_mosquitto
from .conftest import ToolProcess, manager_for, messager_for, ready

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


@pytest.fixture(scope="module")
def fuzz_world() -> Iterator[tuple[Mosquitto, Topics, ToolProcess]]:
    with running_mosquitto() as broker:
        topics = Topics.with_prefix("fuzz")
        with ToolProcess("tests.tool_proc", broker.url, "fuzz") as proc:
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
            assert set(manager.get_tool_names()) >= {"echo", "sleep"}

    anyio.run(scenario)
    assert proc.process is not None
    assert proc.process.poll() is None, "the tool process died"
    # Memory stays bounded: the test process does not balloon across examples.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2_000_000
