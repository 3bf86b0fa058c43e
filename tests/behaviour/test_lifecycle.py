"""Objects that own connections and tasks: what they change, what they leave behind."""

import asyncio
import logging
from typing import Any

import anyio
import pytest

from argentic_tools import (
    BaseTool,
    BrokerError,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools._agent import manager as manager_module
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for

pytestmark = pytest.mark.anyio


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


class Counter(BaseTool):
    """Counts its calls."""

    def __init__(self) -> None:
        from pydantic import BaseModel

        class Arguments(BaseModel):
            step: int = 1

        super().__init__("counter", "Count calls.", "", Arguments)
        self.calls = 0

    async def _execute(self, **kwargs: Any) -> int:
        self.calls += kwargs["step"]
        return self.calls


def settings(item: BaseTool) -> tuple[Any, ...]:
    return (item.id, item.pinned_id, item.max_concurrency, item.debug, item.messager)


async def test_one_tool_object_served_by_two_services_is_never_changed(
    mosquitto: Mosquitto, manager: ToolManager, topics: Topics
) -> None:
    counter = Counter()
    before = settings(counter)
    first = ToolService(
        mosquitto.url,
        [counter, shout],
        topics=topics,
        tool_ids={"counter": "counter-a", "shout": "shout-a"},
        max_concurrency=2,
        debug=True,
    )
    second = ToolService(
        mosquitto.url,
        [counter, shout],
        topics=topics,
        tool_ids={"counter": "counter-b", "shout": "shout-b"},
        max_concurrency=5,
    )
    async with first, second:
        with anyio.fail_after(10):
            for tool_id in ("counter-a", "counter-b", "shout-a", "shout-b"):
                await manager.wait_for_tool(tool_id)
        a = await manager.execute_tool("counter-a", {"step": 1})
        b = await manager.execute_tool("counter-b", {"step": 10})
        assert (a.status.value, b.status.value) == ("success", "success")
        # One object behind both ids: its state is shared, its settings untouched.
        assert counter.calls == 11
        assert settings(counter) == before
        # Each service registered the tool under its own id and its own limit.
        assert {"counter-a", "counter-b", "shout-a", "shout-b"} <= set(manager.tools_by_id)
    assert settings(counter) == before


async def test_a_failed_async_init_leaves_nothing_attached(
    mosquitto: Mosquitto, topics: Topics, caplog: pytest.LogCaptureFixture
) -> None:
    messager = messager_for(mosquitto.url, topics)
    manager = manager_for(messager, topics)
    # Not connected: the announcement cannot be published, so the start fails.
    with pytest.raises(BrokerError):
        await manager.async_init()
    caplog.set_level(logging.INFO, logger="argentic_tools.manager")
    async with messager:
        # The same manager starts cleanly afterwards, with one handler per topic.
        await manager.async_init()
        try:
            # Served after the manager is up, which confirms the registration at once.
            async with ToolService(mosquitto.url, [shout], topics=topics):
                with anyio.fail_after(10):
                    await manager.wait_for_tool("shout")
                result = await manager.execute_tool("shout", {"text": "hi"})
                assert result.ok
                assert result.result == "HI"
        finally:
            await manager.aclose()
    registered = [r for r in caplog.records if r.getMessage().startswith("registered tool 'shout'")]
    assert len(registered) == 1, [r.getMessage() for r in registered]


async def test_closing_a_manager_with_nothing_left_to_send_waits_for_no_grace(
    mosquitto: Mosquitto, topics: Topics, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The grace a cancellation still being published gets, made an hour: the presence
    # check (a task that never ends on its own) must be cancelled at once, not waited for.
    monkeypatch.setattr(manager_module, "CANCEL_SEND_SECONDS", 3600.0)
    async with messager_for(mosquitto.url, topics) as messager:
        manager = manager_for(messager, topics)
        await manager.async_init()
        async with ToolService(mosquitto.url, [shout], topics=topics):
            await manager.wait_for_tool("shout", timeout=10)
            result = await manager.execute_tool("shout", {"text": "hi"})
            assert result.result == "HI"
            with anyio.fail_after(30):
                await manager.aclose()  # while the tool is still there to answer
    owned = [t for t in asyncio.all_tasks() if t.get_name().startswith("manager:")]
    assert owned == []


async def test_entering_a_manager_twice_is_an_error(mosquitto: Mosquitto, topics: Topics) -> None:
    async with messager_for(mosquitto.url, topics) as messager, manager_for(messager, topics) as m:
        with pytest.raises(RuntimeError, match="already initialised"):
            await m.async_init()


async def test_two_managers_keep_their_own_log_levels(mosquitto: Mosquitto, topics: Topics) -> None:
    async with messager_for(mosquitto.url, topics) as messager:
        quiet = manager_for(messager, topics, log_level="ERROR")
        chatty = manager_for(messager, topics, log_level="DEBUG")
        assert not quiet.logger.isEnabledFor(logging.INFO)
        assert chatty.logger.isEnabledFor(logging.DEBUG)
        # Neither changed the process's logging configuration.
        assert logging.getLogger("argentic_tools.manager").level == logging.NOTSET
