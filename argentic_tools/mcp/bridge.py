"""An MCP server's tools on the bus: ``argentic-tools mcp bridge``.

:class:`McpBridge` connects to an MCP server as a client (a command it starts
over stdio, or a streamable HTTP URL), and serves each of the server's tools on
the broker with a :class:`~argentic_tools.ToolService`: name, description,
schemas and annotations as the server declares them. Calls are forwarded, with
their progress and their cancellation. The bridge watches the server: when it
dies, its tools leave the registry at once (callers get ``tool_offline``, not a
timeout), and it is started again with a bounded backoff. When its tool list
changes, the tools on the bus follow. A tool a manager refuses (its name served with
another schema, a schema too large, one tool more than the manager's
``max_tools_per_client``) is logged with the reason and left out; the server's other
tools are served, and a refusal never restarts the server.
"""

import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict

from .._errors import RegistrationError, ToolError
from .._protocol.topics import Topics
from .._tools.definition import BaseTool
from .._tools.service import ToolService

logger = logging.getLogger("argentic_tools.mcp")

WATCH_SECONDS = 0.25
"""How often the bridge checks that the MCP server is alive (and lists its tools)."""

BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Waits before each restart of a server that keeps dying; the last one repeats."""

HEALTHY_SECONDS = 30.0
"""A server that ran this long starts its backoff from the beginning again."""

_HINTS = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


class AnyArguments(BaseModel):
    """Arguments as they come: the manager has checked them against the server's schema."""

    model_config = ConfigDict(extra="allow")


class BridgedTool(BaseTool):
    """One tool of an MCP server, served on the bus; its calls go to the server."""

    def __init__(self, tool: types.Tool, client: Client) -> None:
        annotations: dict[str, Any] = {}
        if tool.annotations is not None:
            hints = tool.annotations.model_dump(exclude_none=True)
            annotations = {_HINTS[key]: value for key, value in hints.items() if key in _HINTS}
        title = tool.title or (tool.annotations.title if tool.annotations else None)
        if title:
            annotations["title"] = title
        super().__init__(
            tool.name,
            tool.description or "",
            json.dumps(tool.input_schema),
            AnyArguments,
            output_schema=dict(tool.output_schema) if tool.output_schema else None,
            annotations=annotations,
        )
        self.client = client

    async def _execute(self, **kwargs: Any) -> Any:
        context = self.context

        async def forward(progress: float, total: float | None, message: str | None) -> None:
            if context is not None:
                context.report_progress(progress, total, message)

        try:
            result = await self.client.call_tool(self.name, kwargs, progress_callback=forward)
        except MCPError as exc:
            raise ToolError(f"the MCP server refused the call: {exc.error.message}") from None
        text = "\n".join(
            block.text for block in result.content if isinstance(block, types.TextContent)
        )
        if result.is_error:
            raise ToolError(text or "the MCP server reported an error without a message")
        if result.structured_content is not None:
            return result.structured_content
        if all(isinstance(block, types.TextContent) for block in result.content):
            return text
        return [block.model_dump(mode="json", by_alias=True) for block in result.content]


class McpBridge:
    """Serves an MCP server's tools on the broker, restarting the server when it dies.

    Args:
        broker: Broker URL.
        command: The command that starts the MCP server over stdio, or
        url: its streamable HTTP URL.
        topic_prefix: Prefix of the protocol topics.
        messager_options: More keyword arguments for the bridge's :class:`Messager`.

    """

    def __init__(
        self,
        broker: str,
        *,
        command: Sequence[str] | None = None,
        url: str | None = None,
        topic_prefix: str | None = None,
        **messager_options: Any,
    ) -> None:
        if (command is None) == (url is None):
            raise ValueError("give the MCP server as a command or as a URL, not both")
        self.broker = broker
        self.command = list(command) if command is not None else None
        self.url = url
        self.topics = Topics.with_prefix(topic_prefix)
        self.messager_options = messager_options
        self.restarts = 0
        """How many times the server was started again after it died."""
        self.tool_names: list[str] = []
        """The tools served right now (empty while the server is down; refused ones left out)."""

    @property
    def server(self) -> str | StdioServerParameters:
        """What the MCP client connects to."""
        if self.url is not None:
            return self.url
        assert self.command
        return StdioServerParameters(command=self.command[0], args=self.command[1:])

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until cancelled; ``task_status.started`` once the first tools are offered.

        Offered means served, except the tools a manager refused (logged, each with
        its reason); when it refused them all, none is served until the list changes.
        """
        failures = 0
        started = False
        while True:
            began = anyio.current_time()

            def serving() -> None:
                nonlocal started
                if not started:
                    started = True
                    task_status.started()

            try:
                await self._serve_once(serving)
            except Exception as exc:  # noqa: BLE001 - a dead server is restarted, whatever killed it
                logger.warning("MCP server %s stopped: %s", self.description, exc)
            else:
                logger.warning("MCP server %s closed the connection", self.description)
            self.tool_names = []
            if anyio.current_time() - began > HEALTHY_SECONDS:
                failures = 0
            delay = BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS) - 1)]
            failures += 1
            self.restarts += 1
            logger.info("starting %s again in %.1f s", self.description, delay)
            await anyio.sleep(delay)

    @property
    def description(self) -> str:
        """The server, for log lines."""
        return self.url or " ".join(self.command or ())

    async def _serve_once(self, serving: Callable[[], None]) -> None:
        """Connect, serve the tools, and follow the server until it dies.

        ``serving`` is called each time the tools on the bus were (re)registered.
        """
        async with Client(self.server) as client:
            listed = await _tools_of(client)
            while True:
                tools = [BridgedTool(tool, client) for tool in listed]
                async with contextlib.AsyncExitStack() as serving_now:
                    try:
                        service = await serving_now.enter_async_context(
                            ToolService(
                                self.broker, tools, topics=self.topics, **self.messager_options
                            )
                        )
                    except RegistrationError as exc:
                        # Every tool was refused (the service logs one refused among others
                        # and serves the rest). The server is healthy: restarting it would
                        # offer the same tools again, so watch it until its tools change.
                        logger.warning("serving none of the tools of %s: %s", self.description, exc)
                        self.tool_names = []
                    else:
                        self.tool_names = [endpoint.tool_name for endpoint in service.endpoints]
                        logger.info(
                            "serving %d tool(s) of %s: %s",
                            len(self.tool_names),
                            self.description,
                            ", ".join(self.tool_names),
                        )
                    serving()
                    while True:
                        await anyio.sleep(WATCH_SECONDS)
                        current = await _tools_of(client)  # raises once the server is gone
                        if _signature(current) != _signature(listed):
                            listed = current
                            break


async def _tools_of(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _signature(tools: list[types.Tool]) -> str:
    return json.dumps([tool.model_dump(mode="json") for tool in tools], sort_keys=True)
