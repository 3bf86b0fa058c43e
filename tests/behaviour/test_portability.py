"""The protocol on any MQTT 3.1.1 broker: core behaviour on mosquitto and on embedded amqtt.

amqtt speaks MQTT 3.1.1 only and has no shared subscriptions, so passing here shows that
correlation, routing, deadlines and liveness live in the payload and the Last Will.
"""

import asyncio
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from argentic_tools import TaskErrorMessage, TaskStatus, Topics
from tests.support.brokers import ThreadedEmbeddedBroker, running_mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.observers import spy_on_calls
from tests.support.processes import ToolProcess, ready

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["mosquitto", "embedded"])
def any_broker(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "embedded":
        pytest.importorskip("amqtt", reason="the embedded broker needs the 'broker' extra")
        embedded = ThreadedEmbeddedBroker()
        try:
            yield embedded
        finally:
            embedded.stop()
    else:
        with running_mosquitto() as broker:
            yield broker


async def test_register_call_timeout_and_last_will_on_any_broker(
    any_broker: Any, topics: Topics, prefix: str
) -> None:
    async with (
        messager_for(any_broker.url, topics) as messager,
        manager_for(messager, topics) as manager,
    ):
        with ToolProcess("tests.support.tool_proc", any_broker.url, prefix) as proc:
            await ready(manager)
            echoed = await manager.execute_tool("echo", {"message": "portable"}, timeout=10)
            assert echoed.result == "portable"
            slow = await manager.execute_tool("sleep", {"seconds": 5}, timeout=0.2)
            assert slow.status == TaskStatus.TIMEOUT
            sleep_id = manager.tools_by_name["sleep"]["id"]
            async with spy_on_calls(any_broker.url, topics, sleep_id) as spy:
                pending = asyncio.create_task(
                    manager.execute_tool("sleep", {"seconds": 60}, call_id="doomed")
                )
                # The task went through the broker to the tool before it is killed.
                assert await spy.wait_for_calls(1) == ["doomed"]
            proc.kill()
            with anyio.fail_after(20):
                result = await pending
            assert isinstance(result, TaskErrorMessage)
            assert result.error_code == "tool_offline"


async def test_manager_restart_on_any_broker(any_broker: Any, topics: Topics, prefix: str) -> None:
    with ToolProcess("tests.support.tool_proc", any_broker.url, prefix):
        async with messager_for(any_broker.url, topics) as first, manager_for(first, topics) as m1:
            await ready(m1)
        async with (
            messager_for(any_broker.url, topics) as second,
            manager_for(second, topics) as m2,
        ):
            await m2.wait_for_tool("echo", timeout=10)
            result = await m2.execute_tool("echo", {"message": "again"}, timeout=10)
            assert result.ok
            assert result.result == "again"
