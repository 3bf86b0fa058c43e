"""The fleet served to MCP clients: ``argentic-tools mcp serve``.

:class:`McpGateway` puts a :class:`~argentic_tools.ToolManager` behind the MCP
SDK's low-level server, which suits tools that come and go:

- ``tools/list`` is the live registry in name order, with MCP-valid names (see
  :mod:`argentic_tools.mcp.gateway.names`), schemas and annotations; clients hear
  ``notifications/tools/list_changed`` when the fleet changes (handshake-era
  clients on their connection, 2026-07-28 clients on ``subscriptions/listen``),
  so its caching hints tell them not to cache it (``ttlMs`` 0, ``cacheScope`` private);
- ``tools/call`` goes through ``execute_tool``: invalid arguments and tool
  failures are ``isError`` results the model can read; progress becomes
  ``notifications/progress``; a client's cancellation cancels the handler, which
  sends ``TOOL_CANCEL`` to the tool; ``_meta.traceparent`` becomes the call's trace id;
- a tool's questions and log records reach the client: in the handshake era as
  ``elicitation/create``, ``sampling/createMessage``, ``roots/list`` and
  ``notifications/message`` on the call's stream, filtered by ``logging/setLevel``
  (:mod:`argentic_tools.mcp.participation.asking`); in 2026-07-28 as ``input_required`` results the
  client answers by calling again (:mod:`argentic_tools.mcp.participation.input_required`);
- 2026-07-28 clients that declare the tasks extension get a task for a long call
  (``tasks/get``, ``tasks/update``, ``tasks/cancel``: :mod:`argentic_tools.mcp.tasks`);
- a thread, chosen by the ``X-Argentic-Thread`` header or the
  ``argentic/thread`` ``_meta`` key, filters both through the manager's policy.

One server answers both protocol eras: the stateless 2026-07-28 revision and
the handshake era (2025-11-25, 2025-06-18 and older).
"""

import dataclasses
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..._agent.calls.participation.handlers import CallerHandlers
from ..._agent.calls.pending.progress import ProgressCallback
from ..._agent.fleet.info import ToolInfo
from ..._agent.manager import ToolManager
from ..._probes import Probes, manager_not_ready
from ..._protocol.messages import CallContext, TaskErrorMessage, ToolResult
from ..._version import __version__
from .. import _internals
from ..access.limits import LimitExceededError
from ..access.team import Admission, TeamAccess, refused
from ..participation.asking import HandshakeAsker, LogLevels, declared
from ..participation.input_required import INPUT_WAIT_SECONDS, InputRounds, missing_capability
from ..tasks.task_store import TaskStore
from ..tasks.tasks import McpTasks, TaskableCall
from . import http_stack
from .conversion import mcp_result, mcp_tool, thread_of, trace_id_of
from .listing_memo import ListingMemo
from .names import McpNames
from .stdin import cancellable_stdin
from .stopping import StopGuard
from .uvicorn_server import bound_port, uvicorn_server

logger = logging.getLogger("argentic_tools.mcp")

STARTUP_SECONDS = 10.0
"""How long the HTTP server may take to listen."""

DRAIN_SECONDS = 8.0
"""How long a stopping gateway lets in-flight calls finish (``--drain-timeout``); the
calls still running then are cancelled, their tools told. Under Docker's 10 s ``stop``."""

SHUTDOWN_SECONDS = 1
"""How long the HTTP server, once drained, waits for its connections to close."""

CANCELLED_SECONDS = 1.0
"""How long a stopping gateway waits for the calls it cancelled to answer their clients."""

QUIET_SECONDS = 0.5
"""How long a stopping gateway waits, after the last call finished, for a client's
follow-up requests."""

LIST_TTL_MS = 0
"""How long a client may cache ``tools/list`` (its ``ttlMs``): not at all, the list
follows the fleet (clients hear ``notifications/tools/list_changed`` when it changes)."""

LIST_CACHE_SCOPE = "private"
"""Who may share a cached ``tools/list`` (its ``cacheScope``): only the client that asked,
since a thread's policy (``X-Argentic-Thread``) filters it."""


class _Server(Server[Any]):
    """The SDK's server, advertising list-changed notifications on every transport.

    The streamable-HTTP transport builds its initialisation options without
    arguments, so the default is set here.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: Any = None,
    ) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class McpGateway:
    """Serves the tools a :class:`~argentic_tools.ToolManager` sees to MCP clients.

    Args:
        manager: An initialised manager (the gateway does not own it).
        timeout: Seconds a call may take; the manager's default when None.
        name: Server name shown to clients.
        drain_timeout: Seconds a stopping gateway lets the calls in flight finish
            before it cancels them.

    Example:
        >>> gateway = McpGateway(manager)  # doctest: +SKIP
        >>> await gateway.serve_stdio()  # doctest: +SKIP

    """

    def __init__(
        self,
        manager: ToolManager,
        *,
        timeout: float | None = None,
        name: str = "argentic-tools",
        input_wait: float = INPUT_WAIT_SECONDS,
        tasks: TaskStore | None = None,
        access: TeamAccess | None = None,
        drain_timeout: float = DRAIN_SECONDS,
    ) -> None:
        self.manager = manager
        self.access = access or TeamAccess()
        """Who may call, what each caller sees, how much (:mod:`~argentic_tools.mcp.access`)."""
        self.access.facts = self._facts
        self.timeout = timeout
        self._rounds = InputRounds(input_wait)
        self._levels = LogLevels()
        self.drain_timeout = drain_timeout
        self.stopping = False
        """Whether the gateway is stopping: it refuses new calls over HTTP."""
        self._calls: set[anyio.CancelScope] = set()
        self._bus = InMemorySubscriptionBus()
        self._sessions: set[ServerSession] = set()
        self._names = McpNames([])
        self._listed: dict[str, types.Tool] = {}
        self._built: dict[str, _Built] = {}
        self._fingerprint: list[str] = []
        self._version = -1
        self._idle = anyio.Event()
        self._idle.set()
        self._activity = anyio.Event()
        self.server = _Server(
            name,
            version=__version__,
            instructions="Tools served over MQTT by argentic-tools; the list follows the fleet.",
            on_list_tools=self._list_tools,
            on_subscriptions_listen=self.access.listen_handler(
                self._bus, lambda: list(self._listed)
            ),
            get_tool_input_schema=self._input_schema,
        )
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._on_initialized
        )
        self.server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, self._set_level
        )
        # MCP Tasks: tools/call may answer with a task (see tasks); tasks/* requests.
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)
        self.tasks = McpTasks(manager, self.mcp_result, self._tags_of, tasks)
        self.tasks.install(self.server)
        self._memo = ListingMemo(self._listing_key)
        self.server.middleware.append(self._memo)
        # Seals and verifies the requestState of input_required results (see input_required).
        security = RequestStateSecurity.ephemeral(ttl=input_wait)
        self.server.middleware.append(RequestStateBoundary(security, default_audience=name))
        self._refresh()

    # -- the list ------------------------------------------------------------------

    def _refresh(self) -> bool:
        """Rebuild the names and the full listing; True when what clients see changed.

        Rebuilt only when the registry changed since the last time (listing a
        thousand tools would otherwise rebuild a thousand MCP tools per request),
        and then only the tools that changed: a tool registering again as it was
        keeps its MCP tool (a fleet of a thousand registers in bursts).
        """
        version = self.manager.registry_version
        if version == self._version:
            return False
        self._version = version
        self._memo.clear()
        tools = self.manager.get_available_tools()
        self._names = McpNames(info.name for info in tools)
        built = {info.name: self._built_tool(info) for info in tools}
        self._built = built
        listed = sorted(built.values(), key=lambda kept: kept.tool.name)
        self._listed = {kept.tool.name: kept.tool for kept in listed}
        fingerprint = [kept.fingerprint for kept in listed]
        changed = fingerprint != self._fingerprint
        self._fingerprint = fingerprint
        return changed

    def _built_tool(self, info: ToolInfo) -> "_Built":
        """The MCP tool of ``info``: the one built before when nothing it shows changed."""
        name = self._names.to_mcp[info.name]
        kept = self._built.get(info.name)
        if kept is not None and kept.tool.name == name and _same_but_time(kept.info, info):
            return kept
        tool = mcp_tool(info, self._names)
        fingerprint = json.dumps(tool.model_dump(mode="json", by_alias=True), sort_keys=True)
        return _Built(info, tool, fingerprint)

    def _view(self, thread_id: str | None) -> list[types.Tool]:
        if thread_id is None:
            return list(self._listed.values())
        allowed = self._allowed(thread_id)
        return [
            tool
            for name, tool in self._listed.items()
            if self._names.registry_name(name) in allowed
        ]

    def _facts(self, mcp_name: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """A listed tool's names (fleet, MCP) and tags, for views and limits."""
        self._refresh()
        kept = self._built.get(self._names.registry_name(mcp_name))
        return None if kept is None else ((kept.info.name, mcp_name), kept.info.tags)

    def _allowed(self, thread_id: str) -> frozenset[str]:
        return frozenset(info.name for info in self.manager.get_available_tools(thread_id))

    def _listing_key(self, ctx: ServerRequestContext[Any]) -> Hashable | None:
        """What a ``tools/list`` answer depends on (see :class:`ListingMemo`); None: a page."""
        self._active()
        if (ctx.params or {}).get("cursor") is not None:
            return None
        self._refresh()
        thread = thread_of(ctx)
        return (
            self._version,
            ctx.protocol_version,
            None if thread is None else self._allowed(thread),
            self.access.view_key(ctx),
        )

    def _active(self) -> None:
        self._activity.set()
        self._activity = anyio.Event()

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._active()
        self._refresh()
        return types.ListToolsResult(
            tools=self.access.visible(ctx, self._view(thread_of(ctx))),
            ttl_ms=LIST_TTL_MS,
            cache_scope=LIST_CACHE_SCOPE,
        )

    def _tags_of(self, name: str) -> tuple[str, ...]:
        kept = self._built.get(name)
        return () if kept is None else kept.info.tags

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._listed.get(name)
        return None if tool is None else tool.input_schema

    async def follow(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Tell clients when the fleet changes, until cancelled."""
        task_status.started()
        while True:
            await self.manager.registry_changed()
            # Tools re-register in bursts (a manager joins, a broker restarts): one
            # notification for the burst.
            await anyio.sleep(0.05)
            if self._refresh():
                await self.notify_tools_changed()

    async def run_input_rounds(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the 2026-07-28 calls waiting for their clients' input, until cancelled.

        :meth:`serve_stdio` and :meth:`serve_http` run it; a gateway served another way
        (the SDK's in-process client on :attr:`server`) runs it beside, or its
        2026-07-28 clients' tools cannot ask them anything.
        """
        await self._rounds.run(task_status=task_status)

    async def notify_tools_changed(self) -> None:
        """Send ``notifications/tools/list_changed`` to every client that can receive it."""
        await self._bus.publish(ToolsListChanged())
        for session in list(self._sessions):
            if not self.access.view_changed(session, list(self._listed)):
                continue  # its caller's view is as it was
            try:
                await session.send_tool_list_changed()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._sessions.discard(session)

    async def _on_initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        # A handshake-era connection: list changes go out on it, for as long as it lasts.
        _internals.follow_session(ctx, self._sessions)
        self.access.follow(ctx, list(self._listed))

    # -- calls ---------------------------------------------------------------------

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        # Handshake era: the level of the log records this connection gets from now on.
        self._levels.set(ctx, params.level)
        return types.EmptyResult()

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        name = self._names.registry_name(params.name)
        admission = self.access.admit(ctx, params.name)  # the caller, its view, the rate limits
        if not isinstance(admission, Admission):
            return admission
        context = CallContext(
            thread_id=thread_of(ctx),
            trace_id=trace_id_of(dict(ctx.meta or {})),
            user_id=self.access.user_id(admission.caller),
        )
        call = _BusCall(name, dict(params.arguments or {}), str(ctx.request_id), context)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if modern:
            self.tasks.check(ctx, name)
        try:
            held = self.access.hold(admission)  # concurrency limits, the span
        except LimitExceededError as exc:
            return refused(exc)
        self._active()
        if not self._calls:
            # A new event only when the gateway stops being idle: one replaced while calls
            # were in flight would never be set, and a drain waiting on it would time out.
            self._idle = anyio.Event()
        scope = anyio.CancelScope()
        self._calls.add(scope)
        try:
            with scope:
                result = await self._serve_call(ctx, params, call, modern)
        finally:
            self._calls.discard(scope)
            held.close()
            if not self._calls:
                self._idle.set()
            self._active()
        if scope.cancelled_caught:  # cancelled by the drain (see drain)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=_STOPPED)], is_error=True
            )
        if not isinstance(result, ToolResult):  # questions, or a task
            return result
        if isinstance(result, TaskErrorMessage) and result.error_code == "not_found":
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        if modern:
            missing = missing_capability(result)
            if missing is not None:
                raise missing
        return self.mcp_result(params.name, result)

    async def _serve_call(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        call: "_BusCall",
        modern: bool,
    ) -> ToolResult | types.InputRequiredResult | dict[str, Any]:
        """A call served over the bus, in this request or in rounds (2026-07-28)."""
        if modern and self._rounds.running:
            return await self._round(ctx, params, call)
        # One call served within one request (the handshake era's questions go out on it).
        asker = None if modern else HandshakeAsker(ctx, self._levels).handlers()
        return await self._on_bus(call, asker, _progress_to(ctx), self.timeout)

    async def _on_bus(
        self,
        call: "_BusCall",
        handlers: CallerHandlers | None,
        on_progress: ProgressCallback | None,
        timeout: float | None,
        label: str | None = None,
    ) -> ToolResult:
        """The one place the gateway calls the bus: ``call``, with the caller's handlers."""
        return await self.manager.execute_tool(
            call.name,
            call.arguments,
            task_id_override=label,
            timeout=timeout,
            call_id=call.call_id,
            context=call.context,
            on_progress=on_progress,
            handlers=handlers,
        )

    async def _round(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        bus_call: "_BusCall",
    ) -> ToolResult | types.InputRequiredResult | dict[str, Any]:
        """One request of a 2026-07-28 call that may need its client's input.

        See :mod:`argentic_tools.mcp.participation.input_required`; a call may become a task
        (:mod:`argentic_tools.mcp.tasks`).
        """
        responses = (ctx.params or {}).get("inputResponses") or {}
        if not isinstance(responses, Mapping):
            raise MCPError(code=types.INVALID_PARAMS, message="inputResponses must be an object")
        if params.request_state is not None:
            found = self._rounds.find(params.request_state)
            if found is None:
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message="Invalid or expired requestState: its call is over",
                    data={"reason": "call_over"},
                )
            call = found
            call.answer(responses)
        else:
            call = self.tasks.call_for(ctx, declared(ctx.session.client_capabilities), responses)
            handlers = call.handlers(ctx)
            taskable = isinstance(call.side, TaskableCall)
            if not handlers.any and not taskable:  # nothing to ask or log: one request
                return await self._on_bus(bus_call, None, _progress_to(ctx), self.timeout)
            label = call.side.label if isinstance(call.side, TaskableCall) else None
            timeout = (
                self.tasks.timeout_for(bus_call.name, self.timeout) if taskable else self.timeout
            )
            work = functools.partial(
                self._on_bus, bus_call, handlers, call.progress, timeout, label
            )
            self._rounds.start(call, work)
        try:
            if isinstance(call.side, TaskableCall):
                return await self.tasks.round(ctx, call.side, params.name, bus_call.name)
            return await call.next_round(ctx)
        except anyio.get_cancelled_exc_class():
            call.scope.cancel()  # the client gave up the call
            raise

    def mcp_result(self, name: str, result: ToolResult) -> types.CallToolResult:
        """A call's result as MCP carries it, for the tool listed as ``name``.

        See :func:`~argentic_tools.mcp.gateway.conversion.mcp_result`.
        """
        return mcp_result(result, self._listed.get(name))

    @property
    def in_flight(self) -> int:
        """Calls being served right now."""
        return len(self._calls)

    def _not_ready(self) -> str | None:
        """Why ``/readyz`` turns a load balancer away (None: ready): stopping, or the bus."""
        if self.stopping:
            return "stopping"
        return manager_not_ready(self.manager)

    async def drained(self) -> None:
        """Return once no call is in flight."""
        while self.in_flight:
            await self._idle.wait()

    async def drain(self) -> None:
        """Stop: let the calls in flight finish, then cancel those left.

        New calls are refused from now on (over HTTP: 503, see
        :mod:`~argentic_tools.mcp.gateway.stopping`). Waits :attr:`drain_timeout` seconds at
        most for the calls to finish and the clients to go quiet (see :meth:`settled`);
        the calls still running then are cancelled (their tools are sent ``TOOL_CANCEL``)
        and answer their clients with an error result.
        """
        self.stopping = True
        with anyio.move_on_after(self.drain_timeout):
            await self.settled()
        if self.in_flight:
            logger.warning(
                "stopping: cancelling %d call(s) still running after %g s",
                self.in_flight,
                self.drain_timeout,
            )
            for scope in list(self._calls):
                scope.cancel()
            with anyio.move_on_after(CANCELLED_SECONDS):
                await self.drained()

    # -- transports ------------------------------------------------------------------

    async def serve_stdio(self, stop: Callable[[], Awaitable[None]] | None = None) -> None:
        """Serve one client on stdin/stdout until it disconnects or ``stop`` returns.

        After ``stop``, requests are still served until the calls in flight have
        finished and the client has been quiet for a moment (see :meth:`settled`).
        """
        from mcp.server.stdio import stdio_server

        async with anyio.create_task_group() as group:
            await group.start(self.follow)
            await group.start(self.run_input_rounds)
            await group.start(self.tasks.run)
            if stop is not None:
                group.start_soon(self._stop_when_settled, stop, group.cancel_scope)
            stdin = await cancellable_stdin()
            async with stdio_server(stdin=stdin) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
            await self.tasks.stop()
            group.cancel_scope.cancel()

    async def _stop_when_settled(
        self, stop: Callable[[], Awaitable[None]], scope: anyio.CancelScope
    ) -> None:
        await stop()
        await self.drain()
        await self.tasks.stop()
        scope.cancel()

    async def settled(self) -> None:
        """Return once no call is in flight and no request came for ``QUIET_SECONDS``.

        A client may follow a result with requests of its own (the MCP SDK's client
        lists the tools again to check a result against its output schema), so a
        stopping gateway keeps answering until the client is quiet.
        """
        while True:
            await self.drained()
            with anyio.move_on_after(QUIET_SECONDS) as quiet:
                await self._activity.wait()
            if quiet.cancelled_caught and not self.in_flight:
                return

    async def serve_http(
        self,
        host: str,
        port: int,
        *,
        path: str = "/mcp",
        stop: Callable[[], Awaitable[None]] | None = None,
        task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve streamable HTTP on ``http://host:port{path}`` until ``stop`` returns.

        ``task_status.started`` gets the port once it listens (useful with port 0).
        After ``stop``, new calls are refused with 503 and the calls in flight finish
        (see :meth:`drain`) before the server stops. ``/healthz`` (``/livez``) and
        ``/readyz`` answer without authentication (see :mod:`argentic_tools._probes`);
        ``/readyz`` is 503 ``stopping`` from ``stop`` on.
        """
        import uvicorn

        app = self.server.streamable_http_app(
            streamable_http_path=path,
            stateless_http=False,
            host=host,  # DNS-rebinding protection on loopback; a team's gateway names its host
            **self.access.app_options(),
        )
        self.access.guard(app, path)
        config = uvicorn.Config(
            # The probes ahead of everything (auth too: see _probes), then the stop guard.
            Probes(StopGuard(app, path, lambda: self.stopping), self._not_ready),
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            # After the drain only idle streams are left: they do not hold the exit up.
            timeout_graceful_shutdown=SHUTDOWN_SECONDS,
            log_config=None,
            **http_stack.uvicorn_options(),
        )
        server = uvicorn_server(config)
        async with anyio.create_task_group() as group:
            await group.start(self.follow)
            await group.start(self.run_input_rounds)
            await group.start(self.tasks.run)
            async with anyio.create_task_group() as http:
                http.start_soon(server.serve)
                with anyio.fail_after(STARTUP_SECONDS):
                    while not server.started:  # noqa: ASYNC110 - uvicorn has no event for it
                        await anyio.sleep(0.02)
                task_status.started(bound_port(server, port))
                if stop is None:
                    await anyio.sleep_forever()
                else:
                    await stop()
                await self.drain()
                server.should_exit = True
            await self.tasks.stop()
            group.cancel_scope.cancel()


_STOPPED = "The gateway stopped before the call finished; the tool was told to stop. Call again."


@dataclasses.dataclass(frozen=True, slots=True)
class _Built:
    """A registered tool's MCP tool, with what it was built from and its JSON."""

    info: ToolInfo
    tool: types.Tool
    fingerprint: str


@dataclasses.dataclass(frozen=True, slots=True)
class _BusCall:
    """What a ``tools/call`` asks of the bus: the tool, its arguments, the call's id and context."""

    name: str
    arguments: dict[str, Any]
    call_id: str
    context: CallContext


def _progress_to(ctx: ServerRequestContext[Any]) -> ProgressCallback | None:
    """Progress reported on the request's stream, when the client asked for it."""
    if (ctx.meta or {}).get("progress_token") is None:
        return None

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(progress, total, message)

    return on_progress


def _same_but_time(kept: ToolInfo, info: ToolInfo) -> bool:
    """Whether ``info`` is ``kept`` registered again: equal except for the time."""
    return kept is info or dataclasses.replace(kept, registered_at=info.registered_at) == info
