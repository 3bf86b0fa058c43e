"""Interoperability with the peer implementation, argentic 0.16, in both directions."""

import anyio
import pytest

from argentic_tools import (
    TaskErrorMessage,
    ToolContext,
    ToolManager,
    ToolPartialMessage,
    ToolProgressMessage,
    ToolService,
    Topics,
    tool,
)
from tests.support.brokers import Mosquitto
from tests.support.clients import messager_for

argentic = pytest.importorskip("argentic", reason="argentic 0.16 is installed by `make test`")

pytestmark = [pytest.mark.anyio, pytest.mark.argentic]


@tool
def shout(text: str, context: ToolContext) -> str:
    """Upper-case the text and add an exclamation mark."""
    for done, _ in enumerate(text, 1):
        context.report_progress(done, len(text))  # sent only to callers that ask
    return text.upper() + "!"


async def test_unmodified_argentic_tool_registers_with_our_manager_and_serves_calls(
    manager: ToolManager, argentic_tool: None
) -> None:
    info = await manager.wait_for_tool("argentic_upper", timeout=20)
    assert info.description == "Return the text in upper case."
    # The very first call after registration is not lost.
    first = await manager.execute_tool("argentic_upper", {"text": "first"}, timeout=10)
    assert first.ok, first
    assert first.result == "FIRST"
    # Asking an argentic tool for progress is harmless: it sends none, the call succeeds.
    reports: list[float] = []
    watched = await manager.execute_tool(
        "argentic_upper", {"text": "p"}, on_progress=lambda p, t, m: reports.append(p)
    )
    assert watched.ok and watched.result == "P" and reports == []
    bad = await manager.execute_tool("argentic_upper", {"text": 5})
    assert isinstance(bad, TaskErrorMessage)
    assert bad.error_code == "invalid_arguments"


async def test_our_tool_registers_with_an_unmodified_argentic_manager_and_serves_calls(
    mosquitto: Mosquitto, topics: Topics
) -> None:
    from argentic.core.protocol.task import TaskStatus as ArgenticStatus

    from tests.support.argentic_peer import argentic_manager

    async with (
        argentic_manager(mosquitto.port, topics) as their_manager,
        ToolService(mosquitto.url, [shout], topics=topics),
    ):
        with anyio.fail_after(10):
            while "shout" not in their_manager.tools_by_name:
                await anyio.sleep(0.01)
        # Progress reports travel on the response topic argentic's manager reads:
        # it must ignore them (our tools send them only to callers that ask).
        their_id = their_manager.tools_by_name["shout"]["id"]
        progress = ToolProgressMessage(task_id="t", tool_id=their_id, progress=1)
        partial = ToolPartialMessage(task_id="t", tool_id=their_id, seq=0, chunk="x")
        async with messager_for(mosquitto.url, topics) as messager:
            for message in (progress, partial):
                await messager.publish(topics.response(their_id), message)
        result = await their_manager.execute_tool("shout", {"text": "hi"})
        assert result.status == ArgenticStatus.SUCCESS
        assert result.result == "HI!"
        failed = await their_manager.execute_tool("shout", {"text": 1, "extra": 2})
        assert failed.status in (ArgenticStatus.FAILED, ArgenticStatus.ERROR)
        assert "shout" in failed.error


async def test_our_tool_asking_an_argentic_manager_fails_at_once_with_one_result(
    mosquitto: Mosquitto, topics: Topics
) -> None:
    from argentic.core.protocol.task import TaskStatus as ArgenticStatus

    from tests.support.argentic_peer import argentic_manager
    from tests.support.asking_proc import ask_name

    async with (
        argentic_manager(mosquitto.port, topics) as their_manager,
        ToolService(mosquitto.url, [ask_name], topics=topics),
    ):
        with anyio.fail_after(10):
            while "ask_name" not in their_manager.tools_by_name:
                await anyio.sleep(0.01)
        # argentic knows no questions: its task names nothing the caller handles, so the
        # tool's question fails at once (well within the call's 60 s), in one result.
        with anyio.fail_after(30):
            result = await their_manager.execute_tool(
                "ask_name", {"label": "a"}, timeout_seconds=60
            )
        assert result.status in (ArgenticStatus.FAILED, ArgenticStatus.ERROR)
        assert "ask_name" in result.error and "cannot answer questions" in result.error
