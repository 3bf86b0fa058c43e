"""A ``BaseTool`` written the argentic way registers itself, serves and unregisters on a real
broker."""

import pytest

from argentic_tools import TaskErrorMessage, ToolManager, Topics
from tests.support.brokers import Mosquitto
from tests.support.clients import messager_for
from tests.support.greeter import Greeter

pytestmark = pytest.mark.anyio


async def test_argentic_style_base_tool_registers_serves_and_unregisters(
    manager: ToolManager, mosquitto: Mosquitto, topics: Topics
) -> None:
    async with messager_for(mosquitto.url, topics) as messager:
        greeter = Greeter(messager)
        tool_id = await greeter.register(
            topics.register, topics.status, topics.call_base, topics.response_base
        )
        info = await manager.wait_for_tool("greeter", timeout=10)
        assert info.id == tool_id == greeter.id
        assert info.input_schema["required"] == ["name"]
        result = await manager.execute_tool("greeter", {"name": "Ada"}, task_id_override="t-1")
        # The override labels the result; the tool sees the unique id the task travelled under.
        assert result.task_id == "t-1"
        assert result.result.startswith("hello Ada (task ")
        assert result.result != "hello Ada (task t-1)"
        await greeter.unregister()
        await manager.wait_for_tool_removed(tool_id, timeout=10)
        gone = await manager.execute_tool("greeter", {"name": "Ada"})
        assert isinstance(gone, TaskErrorMessage)
        assert gone.error_code == "not_found"
