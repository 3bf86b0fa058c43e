"""An MCP server's tools on the bus: ``argentic-tools mcp bridge``.

:class:`McpBridge` connects to an MCP server as a client (a command it starts
over stdio, or a streamable HTTP URL), and serves each of the server's tools on
the broker with a :class:`~argentic_tools.ToolService`: name, description,
schemas and annotations as the server declares them. Calls are forwarded, with
their progress and their cancellation; results come back with the server's content
blocks unchanged (types, annotations, ``_meta``) and its structured content as the
value. The bridge watches the server: when it dies, its tools leave the registry at
once (callers get ``tool_offline``, not a timeout), and it is started again with a
bounded backoff. When its tool list
changes, the tools on the bus follow. A tool a manager refuses (its name served with
another schema, a schema too large, one tool more than the manager's
``max_tools_per_client``) is logged with the reason and left out; the server's other
tools are served, and a refusal never restarts the server.

The caller takes part as it would with a tool of its own: the bridge declares
elicitation, sampling and (given ``roots``) roots to the server, and a question the
server asks during a call reaches that call's caller (``on_elicit``, ``on_sample``),
as does a log record it sends during the call (``on_log``); ``roots/list`` is
answered from ``roots``. How a server's message is tied to its call, and what the
server is answered when it cannot be, is in :mod:`argentic_tools.mcp.bridge.origins` and
:mod:`argentic_tools.mcp.bridge.server_requests`.

A server started as a command gets only the bridge's ``HOME``, ``PATH``, ``SHELL``
and ``TERM`` (the MCP SDK's rule) plus the variables given as ``env``. A command that
cannot be run fails at once; a server that exits is logged with its exit status and
its last stderr lines. A server that declares ``tools.listChanged`` is listed again
when it says its tools changed; others are polled every :data:`POLL_SECONDS`.
"""

import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict

from ..._errors import RegistrationError, ToolError
from ..._protocol.content import parse_blocks
from ..._protocol.topics import Topics
from ..._tools.call.output import ToolOutput
from ..._tools.definition.definition import BaseTool
from ..._tools.hosting.service import ToolService
from .http_connection import HttpConnection
from .origins import ORIGIN, Origin
from .server_process import (
    INHERITED,
    ServerProcess,
    failure_text,
    not_found_in,
)
from .server_requests import ServerRequests, declaring

logger = logging.getLogger("argentic_tools.mcp")

POLL_SECONDS = 1.0
"""How often the bridge lists the tools of a server that sends no list-changed notifications.

A listing also tells that a server reached by URL is alive; the exit of a server
started as a command is seen at once.
"""

LIVENESS_SECONDS = 10.0
"""How often a server reached by URL that sends notifications is checked (with a ping)."""

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

        # The server's questions and log records during this call come back with this
        # origin (see origins.py): they go to this call's caller, and to no other.
        token = ORIGIN.set(Origin(context))
        try:
            result = await self.client.call_tool(self.name, kwargs, progress_callback=forward)
        except MCPError as exc:
            raise ToolError(f"the MCP server refused the call: {exc.error.message}") from None
        finally:
            ORIGIN.reset(token)
        text = "\n".join(
            block.text for block in result.content if isinstance(block, types.TextContent)
        )
        if result.is_error:
            raise ToolError(text or "the MCP server reported an error without a message")
        # The server's blocks go on the bus as they came: types, annotations, _meta.
        shapes = [
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        ]
        content = parse_blocks(shapes) or []
        value = result.structured_content
        if value is None and all(isinstance(b, types.TextContent) for b in result.content):
            value = text  # texts alone: one string, as before blocks were forwarded
        return ToolOutput(content=content, value=value)


class McpBridge:
    """Serves an MCP server's tools on the broker, restarting the server when it dies.

    Args:
        broker: Broker URL.
        command: The command that starts the MCP server over stdio, or
        url: its streamable HTTP URL.
        env: Variables for a server started as a command. It gets only
            ``HOME``, ``PATH``, ``SHELL`` and ``TERM`` from the bridge's environment;
            a token it reads from its environment must be given here.
        headers: HTTP headers for every request to a server reached by URL: the
            credentials it asks for (``{"Authorization": "Bearer ..."}``).
        topic_prefix: Prefix of the protocol topics.
        roots: The roots the bridge answers the server's ``roots/list`` with (``file://``
            URIs, each with an optional name); without them the bridge declares no roots.
        server_log_level: The least severe of the server's log records that the bridge
            asks for (``logging/setLevel``), for the callers' ``on_log``.
        messager_options: More keyword arguments for the bridge's :class:`Messager`.

    Raises:
        ValueError: Neither or both of ``command`` and ``url``, ``env`` with a URL, or
            ``headers`` with a command.

    """

    def __init__(
        self,
        broker: str,
        *,
        command: Sequence[str] | None = None,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        topic_prefix: str | None = None,
        roots: Sequence[types.Root] = (),
        server_log_level: types.LoggingLevel = "info",
        **messager_options: Any,
    ) -> None:
        if (command is None) == (url is None):
            raise ValueError("give the MCP server as a command or as a URL, not both")
        if env and url is not None:
            raise ValueError("env is for a server started as a command, not for a URL")
        if headers and url is None:
            raise ValueError("headers are for a server reached by URL, not for a command")
        self.broker = broker
        self.command = list(command) if command is not None else None
        self.url = url
        self.env = dict(env or {})
        self.topics = Topics.with_prefix(topic_prefix)
        self.messager_options = messager_options
        self.restarts = 0
        """How many times the server was started again after it died."""
        self.tool_names: list[str] = []
        """The tools served right now (empty while the server is down; refused ones left out)."""
        self.listings = 0
        """How many times the bridge asked the server for its tools."""
        self.process = ServerProcess(self.command, self.env) if self.command else None
        """The server's process, when it is started as a command."""
        self.http = HttpConnection(url, headers) if url is not None else None
        """The server's HTTP connection, when it is reached by URL."""
        self.requests = ServerRequests(self.description, roots)
        """What answers the server's requests and takes its log records."""
        self.server_log_level: types.LoggingLevel = server_log_level

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until cancelled; ``task_status.started`` once the first tools are offered.

        Offered means served, except the tools a manager refused (logged, each with
        its reason); when it refused them all, none is served until the list changes.

        Raises:
            ServerNotFoundError: The server's command cannot be run (it is not retried).

        """
        failures = 0
        started = False
        while True:
            began = anyio.current_time()
            served = False

            def serving() -> None:
                nonlocal started, served
                served = True
                if not started:
                    started = True
                    task_status.started()

            try:
                await self._serve_once(serving)
            except Exception as exc:  # noqa: BLE001 - a dead server is restarted, whatever killed it
                missing = not_found_in(exc)
                if missing is not None:
                    raise missing from None
                why = self._why(exc, served)
                logger.warning("MCP server %s stopped: %s", self.description, why)
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

    def _why(self, exc: BaseException, served: bool) -> str:
        """Why the server stopped, for a log line."""
        refusal = self.http.refusal() if self.http is not None else None
        if refusal is not None:
            return refusal
        if self.process is None or self.process.returncode is None:
            return failure_text(exc)
        why = f"it {self.process.ending()}"
        if not served:
            why += (
                f" (before serving its tools; it gets only {INHERITED} from the bridge's"
                " environment: give the variables it needs with -e KEY=VALUE)"
            )
        return why

    def _transport(self) -> Any:
        """What the MCP client connects to: the server's process, or its URL."""
        if self.process is not None:
            return declaring(self.process.connect())
        assert self.http is not None
        return declaring(self.http.streams())

    def _client(self, changes: "_Changes") -> Client:
        """An MCP client of the server that declares what the bridge forwards to callers."""
        requests = self.requests
        return Client(
            self._transport(),
            message_handler=changes.on_message,
            elicitation_callback=requests.elicit,
            sampling_callback=requests.sample,
            list_roots_callback=requests.list_roots if requests.roots else None,
            logging_callback=requests.log,
            log_level=self.server_log_level,
        )

    async def _set_log_level(self, client: Client) -> None:
        """Ask a handshake-era server that logs for records at the bridge's level."""
        if client.server_capabilities.logging is None:
            return
        if client.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return  # later eras ask with each request (the client's log_level)
        try:
            await client.session.send_request(
                types.SetLevelRequest(
                    params=types.SetLevelRequestParams(level=self.server_log_level)
                ),
                types.EmptyResult,
            )
        except MCPError as exc:
            logger.info("%s refused logging/setLevel: %s", self.description, exc.error.message)

    async def _serve_once(self, serving: Callable[[], None]) -> None:
        """Connect, serve the tools, and follow the server until it dies.

        ``serving`` is called each time the tools on the bus were (re)registered.
        """
        changes = _Changes()
        async with self._client(changes) as client, anyio.create_task_group() as group:
            await self._set_log_level(client)
            tools_capability = client.server_capabilities.tools
            notifies = bool(tools_capability and tools_capability.list_changed)
            if notifies:
                await group.start(_listen, client, changes)
            listed = await self._tools_of(client)
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
                        await self._until_worth_listing(client, changes, notifies)
                        current = await self._tools_of(client)  # raises once the server is gone
                        if _signature(current) != _signature(listed):
                            listed = current
                            break

    async def _until_worth_listing(
        self, client: Client, changes: "_Changes", notifies: bool
    ) -> None:
        """Return when the tools may have changed; raise once the server has exited."""
        exited = self.process.exited if self.process is not None else None
        notifies = notifies and not changes.polled
        wait = LIVENESS_SECONDS if notifies else POLL_SECONDS
        while True:
            with anyio.move_on_after(wait):
                async with anyio.create_task_group() as group:
                    if exited is not None:
                        group.start_soon(_set_when, exited, group.cancel_scope)
                    group.start_soon(_set_when, changes.event, group.cancel_scope)
            if exited is not None and exited.is_set():
                raise ServerExitedError("the server exited")
            if changes.take() or not notifies:
                return
            if exited is None:
                await client.send_ping()  # a server reached by URL: is it still there?

    async def _tools_of(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor = None
        self.listings += 1
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools


class ServerExitedError(ConnectionError):
    """The MCP server's process exited while the bridge served its tools."""


class _Changes:
    """List-changed notifications from the server, however they come."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.polled = False
        """True when the server declares notifications but refused to send them."""

    async def on_message(self, message: Any) -> None:
        """The client's message handler: notifications on the connection (handshake era)."""
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.event.set()

    def take(self) -> bool:
        """Whether a change came since the last call."""
        if not self.event.is_set():
            return False
        self.event = anyio.Event()
        return True


async def _listen(
    client: Client,
    changes: _Changes,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Subscribe to tool list changes (2026-07-28 era); earlier eras notify on the connection."""
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            task_status.started()
            async for _event in subscription:
                changes.event.set()
    except ListenNotSupportedError:  # before 2026-07-28 they come on the connection
        task_status.started()
    except MCPError as exc:
        logger.info("the MCP server refused to send tool list changes (%s): polling it", exc)
        changes.polled = True
        task_status.started()


async def _set_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _signature(tools: list[types.Tool]) -> str:
    return json.dumps([tool.model_dump(mode="json") for tool in tools], sort_keys=True)
