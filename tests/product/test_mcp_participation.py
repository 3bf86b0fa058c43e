"""A tool takes part in its call through ``argentic-tools mcp serve``: it asks the MCP
client's user (``elicitation``), borrows its model (``sampling``), lists its roots and
logs to it, with the official MCP Python client's callbacks answering, over stdio and
streamable HTTP, in both protocol eras (handshake: requests to the client on the call's
stream; 2026-07-28: ``input_required`` results answered by calling again)."""

import functools
import pathlib
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.context import ClientRequestContext  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from argentic_tools import AskNotSupportedError, ToolManager, Topics  # noqa: E402
from argentic_tools.mcp.gateway import McpGateway  # noqa: E402
from tests.support.brokers import Mosquitto  # noqa: E402
from tests.support.clients import manager_for, messager_for  # noqa: E402
from tests.support.gateways import http_gateway, stdio_gateway  # noqa: E402
from tests.support.participation_tools import TOOL_NAMES  # noqa: E402
from tests.support.processes import ToolProcess  # noqa: E402

pytestmark = pytest.mark.anyio

ROOT_URI = "file:///work/project"
SUMMARY = "a short summary"
MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def part_prefix() -> str:
    return f"p{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def participating_tools(mosquitto: Mosquitto, part_prefix: str) -> Iterator[ToolProcess]:
    """The participating tools in their own process, for the whole module."""
    with ToolProcess("tests.support.participation_tools", mosquitto.url, part_prefix) as process:
        process.wait_registered(mosquitto.url, part_prefix, TOOL_NAMES)
        yield process


class Caller:
    """The MCP client's side: its user's scripted answers, its model, its roots, its log."""

    def __init__(self) -> None:
        self.answers: list[types.ElicitResult] = []
        self.questions: list[str] = []
        self.samples: list[types.CreateMessageRequestParams] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self._logged = anyio.Event()

    def will(self, action: str, **content: Any) -> None:
        """The user's next answer: ``accept`` with ``content``, ``decline`` or ``cancel``."""
        answer = types.ElicitResult(action=cast(Any, action), content=content or None)
        self.answers.append(answer)

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self.questions.append(params.message)
        if not self.answers:
            return types.ErrorData(code=types.INTERNAL_ERROR, message="no answer scripted")
        return self.answers.pop(0)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.samples.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SUMMARY),
            model="test-model",
            stop_reason="endTurn",
        )

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name="project")])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._logged.set()
        self._logged = anyio.Event()

    async def logged(self, message: str) -> list[str]:
        """The levels logged until the record ``message`` arrived (records come in order)."""
        with anyio.fail_after(15):
            while not any(_message(log) == message for log in self.logs):
                await self._logged.wait()
        levels: list[str] = [log.level for log in self.logs]
        self.logs.clear()
        return levels

    def client(self, server: Any, mode: str, **options: Any) -> Client:
        """An MCP client declaring elicitation, sampling and roots, answering from here."""
        return Client(
            server,
            mode=cast(Any, mode),
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            list_roots_callback=self.roots,
            logging_callback=self.log,
            **options,
        )


def _message(log: types.LoggingMessageNotificationParams) -> str:
    data = log.data
    return str(data.get("message") if isinstance(data, dict) else data)


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def check_participation(client: Client, caller: Caller) -> None:
    """What a client with every callback sees, in either era, over either transport."""
    with anyio.fail_after(60):
        caller.will("accept", name="Ana")
        assert text_of(await client.call_tool("ask_name", {})) == "hello Ana"
        caller.will("decline")
        assert text_of(await client.call_tool("ask_name", {})) == "no name (decline)"
        caller.will("cancel")
        assert text_of(await client.call_tool("ask_name", {})) == "no name (cancel)"
        # Progress before and after a question (2026-07-28: on each round's request).
        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        caller.will("accept", name="Al")
        reported = await client.call_tool(
            "progress_and_question", {}, progress_callback=on_progress
        )
        assert text_of(reported) == "thanks Al"
        assert seen[0] == 1 and seen[-1] == 2
        # Several questions, one after the other (2026-07-28: several rounds).
        caller.will("accept", name="Bo")
        caller.will("accept", colour="green")
        assert text_of(await client.call_tool("two_questions", {})) == "Bo likes green"
        assert caller.questions[-1] == "Which colour, Bo?"
        # An answer that violates the schema fails the question: the tool says so.
        caller.will("accept", colour="purple")
        caller.will("accept", name="Cy")
        refused = await client.call_tool("two_questions", {})
        assert refused.is_error and "two_questions" in text_of(refused)
        caller.answers.clear()
        # Two questions at once (2026-07-28: one input_required result with both).
        caller.will("accept", name="Di")
        both = await client.call_tool("name_and_summary", {"text": "long"})
        assert text_of(both) == f"{{'name': 'Di'}} / {SUMMARY}"
        # The caller's model.
        summary = await client.call_tool("summarise", {"text": "a long text"})
        assert text_of(summary) == f"summary: {SUMMARY} (by test-model)"
        asked = caller.samples[-1]
        assert asked.system_prompt == "Be brief." and asked.max_tokens == 50
        assert asked.temperature == 0.2
        # The caller's roots.
        assert text_of(await client.call_tool("my_roots", {})) == ROOT_URI
        # A sync tool asking for approval.
        caller.will("accept", confirm=True)
        assert text_of(await client.call_tool("confirm_delete", {"what": "x"})) == "deleted x"
        caller.will("decline")
        assert text_of(await client.call_tool("confirm_delete", {"what": "y"})) == "kept y"


async def set_level(client: Client, level: types.LoggingLevel) -> None:
    """``logging/setLevel`` (sent as a plain request: the SDK marks its helper deprecated)."""
    request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
    await client.session.send_request(request, types.EmptyResult)


async def check_handshake_logging(client: Client, caller: Caller) -> None:
    """Every level until the client chooses one with ``logging/setLevel``; then that and up."""
    with anyio.fail_after(30):
        assert text_of(await client.call_tool("chatty", {})) == "logged"
        assert await caller.logged("almost done") == ["debug", "info", "warning"]
        await set_level(client, "info")
        await client.call_tool("chatty", {})
        assert await caller.logged("almost done") == ["info", "warning"]
        await set_level(client, "warning")
        await client.call_tool("chatty", {})
        assert await caller.logged("almost done") == ["warning"]
        await set_level(client, "debug")


async def check_modern_logging(client: Client, caller: Caller) -> None:
    """The request's ``_meta`` log level (the client's ``log_level``: info), or none."""
    with anyio.fail_after(30):
        assert text_of(await client.call_tool("chatty", {})) == "logged"
        assert await caller.logged("almost done") == ["info", "warning"]
        warning_only = cast(types.RequestParamsMeta, {types.LOG_LEVEL_META_KEY: "warning"})
        await client.call_tool("chatty", {}, meta=warning_only)
        assert await caller.logged("almost done") == ["warning"]


async def check_logging(client: Client, caller: Caller, mode: str) -> None:
    if mode == "legacy":
        await check_handshake_logging(client, caller)
    else:
        await check_modern_logging(client, caller)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_asks_samples_lists_roots_and_logs_through_the_stdio_gateway(
    mosquitto: Mosquitto, part_prefix: str, participating_tools: ToolProcess, mode: str
) -> None:
    caller = Caller()
    server = stdio_gateway(mosquitto.url, part_prefix)
    async with caller.client(server, mode, log_level="info") as client:
        assert client.protocol_version == (MODERN if mode == "auto" else "2025-11-25")
        await check_participation(client, caller)
        await check_logging(client, caller, mode)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_asks_samples_lists_roots_and_logs_through_the_http_gateway(
    mosquitto: Mosquitto, part_prefix: str, participating_tools: ToolProcess, mode: str
) -> None:
    caller = Caller()
    async with (
        http_gateway(mosquitto.url, part_prefix) as (url, _),
        caller.client(url, mode, log_level="info") as client,
    ):
        await check_participation(client, caller)
        await check_logging(client, caller, mode)


def reports_the_missing_kind() -> bool:
    """Whether the core says which question a caller could not answer (-32021 needs it)."""
    return hasattr(AskNotSupportedError("x"), "kind")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_without_capabilities_gives_the_tool_a_clear_error_at_once(
    mosquitto: Mosquitto, part_prefix: str, participating_tools: ToolProcess, mode: str
) -> None:
    async with (
        http_gateway(mosquitto.url, part_prefix) as (url, _),
        Client(url, mode=cast(Any, mode)) as client,
    ):
        with anyio.fail_after(30):
            for tool, capability in (("needs_model", "sampling"), ("ask_name", "elicitation")):
                if mode == "auto" and reports_the_missing_kind():
                    # 2026-07-28: the spec's error for a capability the client did not declare.
                    with pytest.raises(MCPError) as missing:
                        await client.call_tool(tool, {})
                    error = missing.value.error
                    assert error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
                    assert error.data == {"requiredCapabilities": {capability: {}}}
                else:
                    # The tool's own error, as the call's one result (in 2026-07-28 too
                    # while the core does not say which question could not be asked).
                    result = await client.call_tool(tool, {})
                    assert result.is_error
                    assert f"Tool '{tool}'" in text_of(result)
                    assert "cannot" in text_of(result)
            # The session goes on: the next call gets its own result.
            assert text_of(await client.call_tool("chatty", {})) == "logged"


@asynccontextmanager
async def fleet_manager(mosquitto: Mosquitto, prefix: str) -> AsyncIterator[ToolManager]:
    """A manager in this process that sees the participating tools."""
    topics = Topics.with_prefix(prefix)
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as manager,
    ):
        await manager.wait_for_tool("ask_name", timeout=15)
        yield manager


@asynccontextmanager
async def modern_client(
    mosquitto: Mosquitto, prefix: str, caller: Caller, **options: Any
) -> AsyncIterator[Client]:
    """A 2026-07-28 client of a gateway served over HTTP from this process."""
    async with fleet_manager(mosquitto, prefix) as manager, anyio.create_task_group() as group:
        stop = anyio.Event()
        gateway = McpGateway(manager, **options)
        port = await group.start(
            functools.partial(gateway.serve_http, "127.0.0.1", 0, stop=stop.wait)
        )
        async with caller.client(f"http://127.0.0.1:{port}/mcp", "auto") as client:
            yield client
        stop.set()


async def first_round(
    client: Client, name: str, arguments: dict[str, Any]
) -> types.InputRequiredResult:
    """A call's first request, whose tool asks: its ``input_required`` result."""
    result = await client.session.call_tool(name, arguments, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult), result
    return result


async def test_request_state_is_refused_when_tampered_or_reused_elsewhere(
    mosquitto: Mosquitto, part_prefix: str, participating_tools: ToolProcess
) -> None:
    caller = Caller()
    async with modern_client(mosquitto, part_prefix, caller) as client:
        with anyio.fail_after(60):
            pending = await first_round(client, "ask_name", {})
            assert pending.input_requests is not None
            (key,) = pending.input_requests
            assert pending.input_requests[key].method == "elicitation/create"
            state = pending.request_state
            assert state is not None
            answer: types.InputResponses = {
                key: types.ElicitResult(action="accept", content={"name": "Ed"})
            }
            tampered = state[:20] + ("A" if state[20] != "A" else "B") + state[21:]
            # Tampered, or sent with another tool or other arguments: refused (-32602).
            for name, arguments, sent in (
                ("ask_name", {}, tampered),
                ("my_roots", {}, state),
                ("ask_name", {"label": "other"}, state),
            ):
                with pytest.raises(MCPError) as refused:
                    await client.session.call_tool(
                        name, arguments, input_responses=answer, request_state=sent
                    )
                assert refused.value.error.code == types.INVALID_PARAMS
            # The genuine state still answers the question.
            done = await client.session.call_tool(
                "ask_name", {}, input_responses=answer, request_state=state
            )
            assert text_of(done) == "hello Ed"


async def test_a_call_whose_client_does_not_come_back_is_cancelled_at_the_tool(
    mosquitto: Mosquitto,
    part_prefix: str,
    participating_tools: ToolProcess,
    tmp_path: pathlib.Path,
) -> None:
    caller = Caller()
    async with modern_client(mosquitto, part_prefix, caller, input_wait=0.5) as client:
        with anyio.fail_after(60):
            arguments = {"label": "left", "directory": str(tmp_path)}
            left = await first_round(client, "ask_name", arguments)
            assert left.request_state is not None
            while not (tmp_path / "left.stopped").exists():
                await anyio.sleep(0.05)
            answer: types.InputResponses = {
                key: types.ElicitResult(action="accept", content={"name": "Ed"})
                for key in left.input_requests or {}
            }
            with pytest.raises(MCPError) as over:
                await client.session.call_tool(
                    "ask_name", arguments, input_responses=answer, request_state=left.request_state
                )
            assert over.value.error.code == types.INVALID_PARAMS


async def test_a_client_that_cancels_its_call_cancels_it_at_the_tool(
    mosquitto: Mosquitto,
    part_prefix: str,
    participating_tools: ToolProcess,
    tmp_path: pathlib.Path,
) -> None:
    caller = Caller()  # it declares every capability: the call may ask, so it runs in rounds
    async with modern_client(mosquitto, part_prefix, caller) as client:
        started = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            started.set()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    arguments = {"label": "gone", "directory": str(tmp_path)}
                    await client.call_tool("slow", arguments, progress_callback=on_progress)

                group.start_soon(call)
                await started.wait()
                group.cancel_scope.cancel()
            while not (tmp_path / "gone.stopped").exists():
                await anyio.sleep(0.05)


async def test_an_answer_given_in_advance_is_used_without_a_round(
    mosquitto: Mosquitto, part_prefix: str, participating_tools: ToolProcess
) -> None:
    caller = Caller()
    async with modern_client(mosquitto, part_prefix, caller) as client:
        with anyio.fail_after(30):
            given: types.InputResponses = {
                "elicitation-1": types.ElicitResult(action="accept", content={"name": "Fa"}),
                "unknown": types.ElicitResult(action="decline"),
            }
            result = await client.session.call_tool(
                "ask_name", {}, input_responses=given, allow_input_required=True
            )
            assert isinstance(result, types.CallToolResult)
            assert text_of(result) == "hello Fa"
            assert caller.questions == []


async def test_a_gateway_served_in_process_asks_once_it_runs_its_input_rounds(
    mosquitto: Mosquitto, part_prefix: str, participating_tools: ToolProcess
) -> None:
    caller = Caller()
    async with (
        fleet_manager(mosquitto, part_prefix) as manager,
        anyio.create_task_group() as group,
    ):
        gateway = McpGateway(manager)
        await group.start(gateway.run_input_rounds)
        async with caller.client(gateway.server, "auto") as client:
            with anyio.fail_after(30):
                caller.will("accept", name="Gus")
                assert text_of(await client.call_tool("ask_name", {})) == "hello Gus"
        group.cancel_scope.cancel()
