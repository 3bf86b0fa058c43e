"""Processes that leave with a clean DISCONNECT and no unregistration leave no stale tools.

A clean DISCONNECT discards the Last Will, so nothing tells the manager those tools are
gone: it asks every process it has not heard from lately whether it is still there
(``argentic_tools/_agent/fleet/presence.py``). Live idle tools answer and stay, and plain
argentic 0.16 tools, which cannot answer, are never retired for their silence.
"""

import uuid

import anyio
import pytest

from argentic_tools import Messager, ToolManager, ToolService, Topics, tool
from argentic_tools._agent.fleet import presence
from argentic_tools._protocol.messages import encode
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.observers import spy_on_calls
from tests.support.registrations import registration

pytestmark = [pytest.mark.anyio, pytest.mark.argentic]

CLIENTS = 100


@tool
def idle(text: str) -> str:
    """Return the text (never called here: the tool stays idle)."""
    return text


async def register_and_leave(url: str, topics: Topics, number: int) -> None:
    """Connect, register one tool, and close the connection cleanly without unregistering."""
    async with Messager(url, will_topic=topics.register) as messager:
        message = registration(f"leaver-{number}", source=messager.client_id)
        message = message.model_copy(update={"tool_id": str(uuid.uuid4())})
        await messager.publish(topics.register, encode(message))


def leavers(manager: ToolManager) -> list[str]:
    return [name for name in manager.get_tool_names() if name.startswith("leaver-")]


async def test_tools_of_processes_that_disconnected_cleanly_are_retired_and_live_idle_ones_stay(
    mosquitto: Mosquitto,
    prefix: str,
    topics: Topics,
    argentic_tool: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(presence, "QUIET_SECONDS", 1.0)
    monkeypatch.setattr(presence, "CHECK_SECONDS", 0.2)
    monkeypatch.setattr(presence, "ANSWER_SECONDS", 1.0)
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as manager,
        ToolService(mosquitto.url, [idle], topics=topics),
    ):
        ours = await manager.wait_for_tool("idle", timeout=15)
        await manager.wait_for_tool("argentic_upper", timeout=15)
        async with anyio.create_task_group() as group:
            for number in range(CLIENTS):
                group.start_soon(register_and_leave, mosquitto.url, topics, number)
        with anyio.fail_after(15):
            while len(leavers(manager)) < CLIENTS:
                await manager.registry_changed()
        async with spy_on_calls(mosquitto.url, topics, ours.id) as spy:
            # Bounded by QUIET_SECONDS + CHECK_SECONDS + ANSWER_SECONDS (2.2 s here).
            with anyio.fail_after(30):
                while leavers(manager):
                    await manager.registry_changed()
            # Our idle tool was asked too, answered, and is still registered.
            with anyio.fail_after(10):
                await spy.wait_for_ping()
        assert set(manager.get_tool_names()) == {"idle", "argentic_upper"}
        assert (await manager.execute_tool("idle", {"text": "still here"}, timeout=10)).ok
        result = await manager.execute_tool("argentic_upper", {"text": "still here"}, timeout=10)
        assert result.ok
