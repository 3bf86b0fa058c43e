"""Which call a message of server-everything belongs to, as the bridge's MCP client sees it.

The bridge's client, built as the bridge builds it (its transport ``declaring`` what the bridge
forwards; over stdio, :class:`ServerProcess` ordering the messages), talks to the real
``@modelcontextprotocol/server-everything``; each call sets :data:`ORIGIN` as a bridged call
does, and the callbacks record the origin they run with. Over streamable HTTP the SDK hands a
request's messages to the callbacks in the context of the task that sent the request; over
stdio :class:`WireOrder` decides.
"""

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from argentic_tools._tools.call.context import ToolContext
from argentic_tools.mcp.bridge.origins import ORIGIN, Origin
from argentic_tools.mcp.bridge.server_process import ServerProcess
from argentic_tools.mcp.bridge.server_requests import declaring
from tests.support.npm_servers import everything_command, everything_http

pytestmark = pytest.mark.anyio

LONG_ENOUGH = {"duration": 7, "steps": 7}
"""A call that outlasts server-everything's 5 s between simulated log records."""


class Seen:
    """The callbacks of a client: each records the origin it ran with."""

    def __init__(self, hold: int = 1) -> None:
        self.elicited: list[Origin] = []
        self.logged: list[tuple[Origin, Any]] = []
        self.all_asked = anyio.Event()
        self.a_log = anyio.Event()
        self.hold = hold

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        origin = ORIGIN.get()
        self.elicited.append(origin)
        if len(self.elicited) >= self.hold:
            self.all_asked.set()
        with anyio.fail_after(30):
            await self.all_asked.wait()  # every question is open at once
        name = origin.call.tool_name if origin.call else "nobody"
        return types.ElicitResult(action="accept", content={"name": name})

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi"), model="m"
        )

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logged.append((ORIGIN.get(), params.data))
        self.a_log.set()

    def client(self, transport: AbstractAsyncContextManager[Any]) -> Client:
        return Client(
            declaring(transport),
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            logging_callback=self.log,
        )


def call(name: str) -> ToolContext:
    return ToolContext(task_id=f"task-{name}", tool_id="tool", tool_name=name)


async def call_as(
    client: Client, who: ToolContext, tool: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    """``tool`` called as the bridge calls it for the call ``who``."""
    token = ORIGIN.set(Origin(who))
    try:
        with anyio.fail_after(60):
            return await client.call_tool(tool, arguments)
    finally:
        ORIGIN.reset(token)


@asynccontextmanager
async def over_stdio() -> AsyncIterator[AbstractAsyncContextManager[Any]]:
    yield ServerProcess(everything_command()).connect()


@asynccontextmanager
async def over_http() -> AsyncIterator[AbstractAsyncContextManager[Any]]:
    async with everything_http() as url:
        yield streamable_http_client(url)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("transport", [over_stdio, over_http], ids=["stdio", "http"])
async def test_the_bridge_declares_form_elicitation_and_sampling_only(transport: Any) -> None:
    async with transport() as connection, Seen().client(connection) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"trigger-elicitation-request", "trigger-sampling-request"} <= names
    assert "trigger-url-elicitation" not in names
    assert "get-roots-list" not in names  # no roots callback, no roots declared


@pytest.mark.parametrize("transport", [over_stdio, over_http], ids=["stdio", "http"])
async def test_a_question_during_one_call_belongs_to_that_call(transport: Any) -> None:
    seen = Seen()
    async with transport() as connection, seen.client(connection) as client:
        result = await call_as(client, call("a"), "trigger-elicitation-request", {})
    assert "- Name: a" in text_of(result)
    (origin,) = seen.elicited
    assert origin.call is not None and origin.call.tool_name == "a"


async def test_over_http_concurrent_questions_each_belong_to_their_call() -> None:
    seen = Seen(hold=2)
    async with over_http() as connection, seen.client(connection) as client:
        results: dict[str, types.CallToolResult] = {}

        async def one(name: str) -> None:
            results[name] = await call_as(client, call(name), "trigger-elicitation-request", {})

        async with anyio.create_task_group() as group:
            group.start_soon(one, "a")
            group.start_soon(one, "b")
    assert "- Name: a" in text_of(results["a"])
    assert "- Name: b" in text_of(results["b"])
    assert sorted(o.call.tool_name for o in seen.elicited if o.call) == ["a", "b"]


async def test_over_stdio_a_question_during_two_calls_belongs_to_none() -> None:
    seen = Seen()
    async with over_stdio() as connection, seen.client(connection) as client:
        progressed = anyio.Event()

        async def long_call() -> None:
            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                progressed.set()

            token = ORIGIN.set(Origin(call("long")))
            try:
                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 60, "steps": 60},
                    progress_callback=on_progress,
                )
            finally:
                ORIGIN.reset(token)

        async with anyio.create_task_group() as group:
            group.start_soon(long_call)
            with anyio.fail_after(30):
                await progressed.wait()
            result = await call_as(client, call("asking"), "trigger-elicitation-request", {})
            group.cancel_scope.cancel()
    (origin,) = seen.elicited
    assert origin.call is None
    assert "2 requests of the bridge were in flight" in origin.why
    assert "- Name: nobody" in text_of(result)


async def test_over_stdio_a_log_record_during_one_call_belongs_to_it() -> None:
    seen = Seen()
    async with over_stdio() as connection, seen.client(connection) as client:
        await call_as(client, call("toggle"), "toggle-simulated-logging", {})
        # A simulated record every 5 s from now on; a call of 7 s sees at least one.
        seen.logged.clear()
        await call_as(client, call("long"), "trigger-long-running-operation", LONG_ENOUGH)
    during = [origin.call.tool_name for origin, _data in seen.logged if origin.call]
    assert "long" in during
    assert set(during) <= {"long"}
