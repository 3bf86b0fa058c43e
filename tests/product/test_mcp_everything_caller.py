"""The reference MCP server, ``@modelcontextprotocol/server-everything`` (npm), bridged onto
the bus, asks the caller of a call: its elicitation, sampling and roots tools appear, its
questions reach the caller's handlers and the answers come back, its log records reach the
caller's ``on_log``, and a question that cannot be tied to one call is refused, never given
to another caller.

The loop: a ``ToolManager`` with handlers -> mosquitto -> ``McpBridge`` -> server-everything
under Node (stdio, and streamable HTTP where the server ties each message to its request);
and the whole MCP loop: the official MCP Python client with its callbacks -> ``argentic-tools
mcp serve`` (stdio) -> mosquitto -> ``McpBridge`` -> server-everything.
"""

import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext

from argentic_tools import (
    CallRef,
    ElicitRequest,
    ElicitResult,
    LogRecord,
    SampleRequest,
    SampleResult,
    ToolManager,
    Topics,
)
from argentic_tools.mcp.bridge import McpBridge
from argentic_tools.mcp.bridge.server_requests import root_from
from tests.support.brokers import Mosquitto
from tests.support.cli import cli_process, connection
from tests.support.clients import manager_for, messager_for
from tests.support.gateways import bridged, stdio_gateway
from tests.support.npm_servers import everything_command, everything_http

pytestmark = pytest.mark.anyio

ASKING_TOOLS = {"get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"}
"""The tools server-everything offers only to a client that declares roots, elicitation
and sampling."""

NOT_OFFERED = {
    "trigger-url-elicitation",  # URL-mode elicitation: a caller on the bus answers forms only
    "trigger-elicitation-request-async",  # these two need the client to run tasks
    "trigger-sampling-request-async",
}

LONG_ENOUGH = {"duration": 7, "steps": 7}
"""A call that outlasts server-everything's 5 s between simulated log records."""

FORM = "Please provide inputs for the following fields:"
"""The question server-everything's elicitation tool asks."""


@contextlib.asynccontextmanager
async def everything_on_the_bus(
    mosquitto: Mosquitto, prefix: str, **options: Any
) -> AsyncIterator[tuple[McpBridge, ToolManager]]:
    """server-everything bridged (stdio unless ``url=``), and a manager that sees its tools."""
    command = None if "url" in options else everything_command()
    topics = Topics.with_prefix(prefix)
    async with (
        bridged(mosquitto.url, prefix, command, **options) as bridge,
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as manager,
    ):
        for name in ASKING_TOOLS - {"get-roots-list"}:
            await manager.wait_for_tool(name, timeout=30)
        yield bridge, manager


def texts(value: Any) -> str:
    """A bridged result's text (server-everything answers with text blocks)."""
    return value if isinstance(value, str) else str(value)


async def test_server_everything_offers_its_asking_tools_to_the_bus_with_roots_given(
    mosquitto: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    async with everything_on_the_bus(mosquitto, prefix, roots=[root_from(str(tmp_path))]) as (
        bridge,
        manager,
    ):
        await manager.wait_for_tool("get-roots-list", timeout=30)
        served = set(bridge.tool_names)
        assert served >= ASKING_TOOLS
        assert not served & NOT_OFFERED
        assert len(served) == 16  # 13 before the bridge declared what callers can answer

        result = await manager.execute_tool("get-roots-list", {}, timeout=30)
        assert result.ok, result
        assert tmp_path.as_uri() in texts(result.result)
        assert f"1. {tmp_path.name}" in texts(result.result)


async def test_the_cli_bridge_answers_roots_list_from_its_root_options(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager, tmp_path: Path
) -> None:
    options = ["--root", str(tmp_path), "--root", "file:///srv/shared"]
    bridge = ["mcp", "bridge", *connection(mosquitto.url, prefix), *options]
    async with cli_process(*bridge, "--", *everything_command()):
        await manager.wait_for_tool("get-roots-list", timeout=30)
        result = await manager.execute_tool("get-roots-list", {}, timeout=30)
    assert result.ok, result
    assert "Current MCP Roots (2 total)" in texts(result.result)
    assert tmp_path.as_uri() in texts(result.result)
    assert "file:///srv/shared" in texts(result.result)


async def test_without_roots_the_bridge_declares_none_and_the_roots_tool_stays_away(
    mosquitto: Mosquitto, prefix: str
) -> None:
    async with everything_on_the_bus(mosquitto, prefix) as (bridge, _manager):
        assert "get-roots-list" not in bridge.tool_names
        assert set(bridge.tool_names) >= ASKING_TOOLS - {"get-roots-list"}


async def test_server_everythings_question_reaches_on_elicit_and_the_answer_returns(
    mosquitto: Mosquitto, prefix: str
) -> None:
    asked: list[tuple[ElicitRequest, CallRef]] = []

    def answer(action: str) -> Any:
        def on_elicit(request: ElicitRequest, call: CallRef) -> ElicitResult:
            asked.append((request, call))
            if action == "accept":
                return ElicitResult(action="accept", content={"name": "Ada Lovelace"})
            return ElicitResult(action=action)

        return on_elicit

    async with everything_on_the_bus(mosquitto, prefix) as (_bridge, manager):
        name = "trigger-elicitation-request"
        accepted = await manager.execute_tool(name, {}, on_elicit=answer("accept"), timeout=30)
        assert accepted.ok, accepted
        assert "- Name: Ada Lovelace" in texts(accepted.result)
        declined = await manager.execute_tool(name, {}, on_elicit=answer("decline"), timeout=30)
        assert declined.ok, declined
        assert "declined" in texts(declined.result)
        cancelled = await manager.execute_tool(name, {}, on_elicit=answer("cancel"), timeout=30)
        assert "cancelled" in texts(cancelled.result)

    assert len(asked) == 3
    request, call = asked[0]
    assert request.message == FORM  # the server's params, unchanged
    assert request.requested_schema["required"] == ["name"]
    assert request.requested_schema["properties"]["integer"]["default"] == 42
    assert call.tool_name == "trigger-elicitation-request"


async def test_server_everythings_sampling_borrows_the_callers_model(
    mosquitto: Mosquitto, prefix: str
) -> None:
    asked: list[SampleRequest] = []

    async def on_sample(request: SampleRequest, call: CallRef) -> SampleResult:
        asked.append(request)
        return SampleResult(content="the caller's model says hi", model="caller-model")

    async with everything_on_the_bus(mosquitto, prefix) as (_bridge, manager):
        result = await manager.execute_tool(
            "trigger-sampling-request",
            {"prompt": "say hi", "maxTokens": 7},
            on_sample=on_sample,
            timeout=30,
        )
    assert result.ok, result
    assert "the caller's model says hi" in texts(result.result)
    assert "caller-model" in texts(result.result)
    (request,) = asked
    assert request.max_tokens == 7
    assert request.system_prompt == "You are a helpful test server."
    assert request.temperature == 0.7
    assert request.messages[0].role == "user"
    assert "say hi" in getattr(request.messages[0].content, "text", "")


async def test_a_caller_without_a_handler_gets_the_servers_refusal_at_once(
    mosquitto: Mosquitto, prefix: str
) -> None:
    async with everything_on_the_bus(mosquitto, prefix) as (_bridge, manager):
        result = await manager.execute_tool("trigger-elicitation-request", {}, timeout=30)
    assert not result.ok
    assert "cannot answer elicitation requests" in str(result.error)


async def test_server_everythings_log_records_reach_the_caller_of_the_call_in_flight(
    mosquitto: Mosquitto, prefix: str
) -> None:
    records: list[tuple[LogRecord, CallRef]] = []
    arrived = anyio.Event()

    def on_log(record: LogRecord, call: CallRef) -> None:
        records.append((record, call))
        arrived.set()

    async with everything_on_the_bus(mosquitto, prefix, server_log_level="debug") as (
        _bridge,
        manager,
    ):
        # A simulated record every 5 s from now on; a call of 7 s sees at least one.
        toggled = await manager.execute_tool("toggle-simulated-logging", {}, timeout=30)
        assert toggled.ok, toggled
        result = await manager.execute_tool(
            "trigger-long-running-operation", LONG_ENOUGH, on_log=on_log, timeout=60
        )
        assert result.ok, result
        with anyio.fail_after(30):
            await arrived.wait()
    record, _call = records[0]
    assert "evel" in record.message and "message" in record.message, record
    assert record.data is None
    assert {call.tool_name for _record, call in records} == {"trigger-long-running-operation"}


async def test_a_question_during_another_call_over_stdio_is_refused_not_crossed(
    mosquitto: Mosquitto, prefix: str
) -> None:
    crossed: list[str] = []
    running = anyio.Event()

    def on_elicit(request: ElicitRequest, call: CallRef) -> ElicitResult:
        crossed.append(call.tool_name)
        return ElicitResult(action="accept", content={"name": "wrong"})

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    async with everything_on_the_bus(mosquitto, prefix) as (_bridge, manager):
        topics = Topics.with_prefix(prefix)
        async with (
            messager_for(mosquitto.url, topics) as other_messager,
            manager_for(other_messager, topics) as other,
            anyio.create_task_group() as group,
        ):
            await other.wait_for_tool("trigger-long-running-operation", timeout=30)
            # Another caller's call is in flight at the server ...
            group.start_soon(
                functools.partial(
                    other.execute_tool,
                    "trigger-long-running-operation",
                    {"duration": 60, "steps": 60},
                    on_elicit=on_elicit,
                    on_progress=on_progress,
                    timeout=90,
                )
            )
            with anyio.fail_after(30):
                await running.wait()
            # ... so over stdio nothing says which call this question belongs to.
            result = await manager.execute_tool(
                "trigger-elicitation-request", {}, on_elicit=on_elicit, timeout=30
            )
            group.cancel_scope.cancel()
    assert not result.ok
    assert "cannot tell which call" in str(result.error)
    assert crossed == []


async def test_concurrent_questions_over_http_each_reach_their_own_caller(
    mosquitto: Mosquitto, prefix: str
) -> None:
    both_asked = anyio.Event()
    asked: dict[str, str] = {}

    def answering(who: str) -> Any:
        async def on_elicit(request: ElicitRequest, call: CallRef) -> ElicitResult:
            asked[who] = call.task_id
            if len(asked) == 2:
                both_asked.set()
            with anyio.fail_after(30):
                await both_asked.wait()  # both questions are open at once
            return ElicitResult(action="accept", content={"name": who})

        return on_elicit

    results: dict[str, Any] = {}
    async with (
        everything_http() as url,
        everything_on_the_bus(mosquitto, prefix, url=url) as (
            _bridge,
            manager,
        ),
    ):
        topics = Topics.with_prefix(prefix)
        async with (
            messager_for(mosquitto.url, topics) as other_messager,
            manager_for(other_messager, topics) as other,
        ):
            await other.wait_for_tool("trigger-elicitation-request", timeout=30)

            async def call(who: str, caller: ToolManager) -> None:
                results[who] = await caller.execute_tool(
                    "trigger-elicitation-request", {}, on_elicit=answering(who), timeout=60
                )

            async with anyio.create_task_group() as group:
                group.start_soon(call, "Grace Hopper", manager)
                group.start_soon(call, "Alan Turing", other)
    for who, result in results.items():
        assert result.ok, result
        assert f"- Name: {who}" in texts(result.result)
    assert set(asked) == {"Grace Hopper", "Alan Turing"}


@pytest.mark.parametrize(("mode", "era"), [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")])
async def test_server_everything_asks_an_mcp_client_through_gateway_bus_and_bridge(
    mosquitto: Mosquitto, prefix: str, mode: str, era: str
) -> None:
    asked: list[str] = []
    logged = anyio.Event()

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Katherine Johnson"})

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        asked.append(str(params.system_prompt))
        text = types.TextContent(type="text", text="sampled by the MCP client")
        return types.CreateMessageResult(role="assistant", content=text, model="client-model")

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        logged.set()

    async with (
        everything_on_the_bus(mosquitto, prefix, server_log_level="debug"),
        Client(
            stdio_gateway(mosquitto.url, prefix),
            elicitation_callback=elicit,
            sampling_callback=sample,
            logging_callback=log,
            log_level="debug",  # records come to a 2026-07-28 client that asks for them
            mode=mode,
        ) as client,
    ):
        assert client.protocol_version == era
        with anyio.fail_after(60):
            elicited = await client.call_tool("trigger-elicitation-request", {})
            sampled = await client.call_tool(
                "trigger-sampling-request", {"prompt": "hi", "maxTokens": 5}
            )
            await client.call_tool("toggle-simulated-logging", {})
            await client.call_tool("trigger-long-running-operation", LONG_ENOUGH)
            await logged.wait()
    assert not elicited.is_error, elicited
    assert "- Name: Katherine Johnson" in mcp_text(elicited)
    assert not sampled.is_error, sampled
    assert "sampled by the MCP client" in mcp_text(sampled)
    assert asked == [FORM, "You are a helpful test server."]


def mcp_text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
