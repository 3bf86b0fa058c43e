"""The dashboard's server: one page, a JSON API and an event stream, on Starlette and uvicorn.

:class:`Dashboard` holds a :class:`~argentic_tools.ToolManager` (the registry, the
processes' stats every second, the page's call form) and a second connection that
only observes: it subscribes to every call topic and every response topic, so calls
made by any manager on the bus appear as they happen (see :mod:`.calls`). Neither
connection is the dashboard's: whoever made them closes them after :meth:`serve`.

Routes:

- ``GET /``: the page (``static/``: one HTML file, its script and its style sheet);
- ``GET /api/events``: server-sent events (see :mod:`.events`);
- ``GET /api/state``: the snapshot the event stream starts with, as JSON;
- ``GET /api/calls/{task_id}``: one call's arguments, result or error, trace id, and its
  exchange with its caller (questions, answers, log records);
- ``POST /api/call``: ``{"tool", "arguments", "timeout", "thread_id"}``; runs the call
  and answers with its result;
- ``GET /api/history?tool=&thread=&outcome=&before=&limit=``: older calls, newest
  first, from the file of a :class:`~argentic_tools.SqliteRecorder` (with ``history``).
- ``GET /healthz`` (``/livez``) and ``GET /readyz``: the probes, answered outside the
  access rules (see :mod:`argentic_tools._probes`).

Access rules (loopback, token, same origin) are :class:`~.access.AccessGuard`'s.
"""

import contextlib
import functools
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from .._agent.manager import ToolManager
from .._agent.records.history import SqliteRecorder
from .._errors import BrokerError, ProtocolError
from .._probes import Probes, manager_not_ready
from .._protocol.messages import (
    CallContext,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    ToolCancelMessage,
)
from .._protocol.parsing import parse_message
from .._protocol.participation import ToolAnswerMessage, ToolAskMessage, ToolLogMessage
from .._transport import IncomingMessage, Messager
from .access import AccessGuard
from .calls import BUCKET_SECONDS, WINDOW_SECONDS, CallLog, CallRecord, kept_content
from .events import EventHub, EventStream
from .fleet import FleetView

logger = logging.getLogger("argentic_tools.dashboard")

STATIC = Path(__file__).resolve().parent / "static"
"""The page, its script and its style sheet."""

CALLS_SHOWN = 200
"""Calls the page lists (the snapshot sends this many; the page keeps as many)."""
TICK_SECONDS = 1.0
"""How often counters and latency buckets are pushed."""
MAX_CALL_TIMEOUT = 3600.0
"""The longest timeout the call form accepts, in seconds."""
MAX_BODY_BYTES = 1024 * 1024
"""Largest request body accepted (a call's arguments), counted as it arrives: a longer
one, whatever its headers say, is answered 413 and its connection closed."""
SHUTDOWN_SECONDS = 5
"""How long a stopping server waits for requests in progress (calls of the form)."""
HISTORY_LIMIT = 50
"""Older calls listed at once by default."""
MAX_HISTORY_LIMIT = 500
"""Older calls listed at once at most."""


class Dashboard:
    """A live view of the fleet and its calls, served over HTTP.

    Args:
        manager: A started :class:`~argentic_tools.ToolManager` with its own inbox
            (the default): the registry, the processes' stats, the form's calls.
        observer: A connected :class:`~argentic_tools.Messager` used for nothing
            else: it subscribes to every call and response topic under the manager's
            topics. (One connection for both would receive each result twice: MQTT
            delivers a message once per matching subscription.)
        token: The token every request must carry; None on loopback without one.
        stats_interval: Seconds between two stats requests to the fleet.
        call_timeout: Timeout of the form's calls when the page gives none.
        history: The file of a :class:`~argentic_tools.SqliteRecorder` (kept by the
            managers that make the calls): the page lists its calls, older than those
            seen since the dashboard started, with filters. Read only.

    Example:
        >>> async with Messager(url) as messager, Messager(url) as observer:  # doctest: +SKIP
        ...     async with ToolManager(messager) as manager:
        ...         async with Dashboard(manager, observer).serving("127.0.0.1", 8080):
        ...             await anyio.sleep_forever()

    """

    def __init__(
        self,
        manager: ToolManager,
        observer: Messager,
        *,
        token: str | None = None,
        stats_interval: float = 1.0,
        call_timeout: float = 30.0,
        history: str | Path | None = None,
        verifier: Any = None,
    ) -> None:
        self.manager = manager
        self.verifier = verifier
        """Also admits the bearer tokens it verifies (an MCP gateway's: JWTs, API keys)."""
        self.observer = observer
        self.token = token
        self.stats_interval = stats_interval
        self.call_timeout = call_timeout
        self.history = SqliteRecorder(history) if history is not None else None
        self.calls = CallLog()
        self.fleet = FleetView()
        self.hub = EventHub()
        self._tools: list[dict[str, Any]] = []
        self._tools_seen: object = None
        self._topics = [f"{manager.topics.call_base}/#", f"{manager.topics.response_base}/#"]

    # -- serving -----------------------------------------------------------------

    async def serve(
        self,
        host: str,
        port: int,
        *,
        stop: Callable[[], Awaitable[Any]] | None = None,
        task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve on ``http://host:port/`` until ``stop`` returns (or until cancelled).

        ``task_status.started`` gets the port (useful with port 0) once the socket
        listens, the observer is subscribed and the registry is on view. The host is
        not checked here: see :func:`~.access.bind_problem`. A dashboard serves once.

        Raises:
            OSError: The address cannot be bound (in use, not local).

        """
        listener = socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
        bound = int(listener.getsockname()[1])
        config = uvicorn.Config(
            Probes(  # ahead of the access rules: see _probes
                AccessGuard(self.app(), self.token, bound, verifier=self.verifier),
                self._not_ready,
            ),
            log_level="warning",
            log_config=None,
            lifespan="off",
            access_log=False,
            http="h11",
            ws="none",
            server_header=False,
            timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        )
        server = _Server(config)
        with listener:
            for topic in self._topics:
                await self.observer.subscribe(topic, self._on_message)
            self.calls.observing()
            try:
                self._follow(time.time())
                async with anyio.create_task_group() as group:
                    group.start_soon(self.hub.run, name="dashboard:events")
                    group.start_soon(self._follow_registry, name="dashboard:registry")
                    group.start_soon(self._poll_stats, name="dashboard:stats")
                    group.start_soon(self._tick, name="dashboard:tick")
                    group.start_soon(_run_until_exit, server, listener, name="dashboard:http")
                    try:
                        task_status.started(bound)
                        await (stop() if stop is not None else anyio.sleep_forever())
                    finally:
                        # Pages' streams end, then uvicorn stops by itself (see _run_until_exit).
                        self.hub.close()
                        server.should_exit = True
                    group.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True), contextlib.suppress(BrokerError):
                    for topic in self._topics:
                        await self.observer.unsubscribe(topic, self._on_message)

    @contextlib.asynccontextmanager
    async def serving(self, host: str, port: int) -> AsyncIterator[int]:
        """Serve while the block runs; yields the port. Leaving the block stops the server.

        An exception from the block comes out as it is, not wrapped in an exception
        group by the task group that runs the server.

        Raises:
            OSError: The address cannot be bound.

        """
        stopping = anyio.Event()
        failure: BaseException | None = None
        serve = functools.partial(self.serve, host, port, stop=stopping.wait)
        async with anyio.create_task_group() as group:
            try:
                bound = await group.start(serve)
            except OSError as exc:  # raised by start(), not by the group: nothing runs
                failure = exc
            else:
                try:
                    yield bound
                except anyio.get_cancelled_exc_class():
                    raise
                except BaseException as exc:  # noqa: BLE001 - held, and raised again below
                    failure = exc
                finally:
                    stopping.set()
        if failure is not None:
            raise failure

    def app(self) -> ASGIApp:
        """The Starlette application (without the access rules, which :meth:`serve` adds)."""
        return Starlette(
            routes=[
                Route("/", self._page, methods=["GET", "HEAD"]),
                Route("/api/state", self._state, methods=["GET"]),
                Route("/api/events", EventStream(self.hub, self.snapshot), methods=["GET"]),
                Route("/api/calls/{task_id}", self._call_detail, methods=["GET"]),
                Route("/api/call", self._call, methods=["POST"]),
                Route("/api/history", self._history, methods=["GET"]),
                Mount("/static", StaticFiles(directory=STATIC)),
            ]
        )

    def _not_ready(self) -> str | None:
        """Why ``/readyz`` answers 503: the manager's state, or the observer's connection."""
        reason = manager_not_ready(self.manager)
        if reason is None and not self.observer.is_connected():
            return "broker connection down"
        return reason

    def snapshot(self) -> dict[str, Any]:
        """Everything the page shows, as JSON-ready data."""
        now = time.time()
        return {
            "server_time": now,
            "broker": self.manager.messager.url,
            "register_topic": self.manager.topics.register,
            "counters": self.calls.counters(),
            "calls": [record.summary() for record in self.calls.recent(CALLS_SHOWN)],
            "calls_shown": CALLS_SHOWN,
            "fleet": self.fleet.view(now),
            "tools": self._tools,
            "latency": self.calls.latency(),
            "bucket_seconds": BUCKET_SECONDS,
            "window_seconds": WINDOW_SECONDS,
            "history": str(self.history.path) if self.history is not None else None,
        }

    # -- what the observer sees --------------------------------------------------

    def _on_message(self, message: IncomingMessage) -> None:
        try:
            parsed = parse_message(message.payload, self.observer.max_payload_bytes)
        except ProtocolError:
            return  # malformed messages are the managers' and tools' to report
        size = len(message.payload)
        record: CallRecord | None = None
        if isinstance(parsed, TaskResultMessage | TaskErrorMessage):
            record = self.calls.result(parsed, size)
        elif isinstance(parsed, TaskMessage):
            record = self.calls.task(parsed, size)
        elif isinstance(parsed, ToolCancelMessage):
            self.calls.cancel(parsed)
        elif isinstance(parsed, ToolAskMessage | ToolAnswerMessage | ToolLogMessage):
            record = self.calls.exchange(parsed, size)
        if record is not None:
            self._publish_call(record)

    # -- background work ---------------------------------------------------------

    def _follow(self, now: float) -> None:
        """Bring the fleet and the form's tools in line with the manager's registry."""
        for tool_id in self.fleet.sync(self.manager.tools_by_id, now):
            for record in self.calls.tool_gone(tool_id):
                self._publish_call(record)
        seen = sorted(
            (entry["id"], entry["name"], entry["parameters"])
            for entry in self.manager.tools_by_id.values()
        )
        if seen != self._tools_seen:
            self._tools_seen = seen
            self._tools = [
                {
                    "name": info.name,
                    "description": info.description,
                    "input_schema": info.input_schema,
                }
                for info in sorted(self.manager.get_available_tools(), key=lambda i: i.name)
            ]
            self.hub.publish("tools", self._tools)

    async def _follow_registry(self) -> None:
        while True:
            await self.manager.registry_changed()
            now = time.time()
            self._follow(now)
            self._publish_fleet(now)

    async def _poll_stats(self) -> None:
        while True:
            started = anyio.current_time()
            try:
                answers = await self.manager.fleet_stats(wait=self.stats_interval)
            except RuntimeError as exc:  # a manager without its own inbox
                logger.warning("the dashboard shows no stats: %s", exc)
                return
            except BrokerError:
                answers = []  # the connection is back soon; the registry says the rest
            now = time.time()
            self.fleet.answered(answers, now)
            self._publish_fleet(now)
            await anyio.sleep(max(0.0, started + self.stats_interval - anyio.current_time()))

    def _publish_call(self, record: CallRecord) -> None:
        self.hub.publish_latest("call", record.task_id, record.summary)

    def _publish_fleet(self, now: float) -> None:
        if self.hub.listening:
            self.hub.publish("fleet", {"server_time": now, "fleet": self.fleet.view(now)})

    async def _tick(self) -> None:
        while True:
            await anyio.sleep(TICK_SECONDS)
            for record in self.calls.sweep():
                self._publish_call(record)
            now = time.time()
            self.hub.publish(
                "tick",
                {
                    "server_time": now,
                    "counters": self.calls.counters(),
                    "latency": self.calls.latency(since=now - 2 * BUCKET_SECONDS),
                },
            )

    # -- routes ------------------------------------------------------------------

    async def _page(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    async def _state(self, request: Request) -> Response:
        return _json(self.snapshot())

    async def _call_detail(self, request: Request) -> Response:
        record = self.calls.get(request.path_params["task_id"])
        if record is None:
            return _json({"error": "This call is no longer kept."}, 404)
        return _json(record.detail())

    async def _call(self, request: Request) -> Response:
        data = await _body_within(request, MAX_BODY_BYTES)
        if data is None:
            # Closing the connection stops the upload: kept open, the server would read
            # and discard the rest of the body, however long the client goes on.
            return _json(
                {"error": f"The body exceeds {MAX_BODY_BYTES} bytes."},
                413,
                headers={"Connection": "close"},
            )
        try:
            body = json.loads(data)
            tool, arguments, timeout, thread_id = self._call_fields(body)
        except (ValueError, TypeError) as exc:
            return _json({"error": str(exc)}, 400)
        result = await self.manager.execute_tool(
            tool,
            arguments,
            timeout=timeout,
            context=CallContext(thread_id=thread_id) if thread_id else None,
        )
        record = self.calls.local_result(result, arguments, thread_id)
        if record is not None:
            self._publish_call(record)
        return _json(
            {
                "task_id": result.task_id,
                "tool": result.tool_name,
                "status": result.status.value,
                "ok": result.ok,
                "result": result.result,
                "content": kept_content(result.content),
                "error": getattr(result, "error", None),
                "error_code": getattr(result, "error_code", None),
                "details": getattr(result, "details", None),
                "duration_ms": result.duration_ms,
            }
        )

    async def _history(self, request: Request) -> Response:
        if self.history is None:
            return _json({"error": "This dashboard was started without --history."}, 404)
        params = request.query_params
        try:
            limit = int(params.get("limit") or HISTORY_LIMIT)
            before = float(params["before"]) if params.get("before") else None
        except ValueError:
            return _json({"error": "'limit' and 'before' must be numbers."}, 400)
        query = functools.partial(
            self.history.query,
            tool=params.get("tool") or None,
            thread=params.get("thread") or None,
            outcome=params.get("outcome") or None,
            until=before,
            limit=max(1, min(limit, MAX_HISTORY_LIMIT)),
        )
        try:
            calls = await anyio.to_thread.run_sync(query)
        except FileNotFoundError:
            calls = []  # no manager has written it yet
        except ValueError as exc:
            return _json({"error": str(exc)}, 500)
        return _json({"calls": [call.to_dict() for call in calls]})

    def _call_fields(self, body: Any) -> tuple[str, dict[str, Any], float, str | None]:
        """The form's ``tool``, ``arguments``, ``timeout`` and ``thread_id``, checked."""
        if not isinstance(body, dict):
            raise TypeError("Send a JSON object.")
        tool = body.get("tool")
        if not isinstance(tool, str) or not tool:
            raise TypeError("'tool' must name a tool.")
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            raise TypeError("'arguments' must be a JSON object.")
        timeout = body.get("timeout") or self.call_timeout
        if not isinstance(timeout, int | float) or not 0 < timeout <= MAX_CALL_TIMEOUT:
            raise ValueError(f"'timeout' must be a number of seconds in (0, {MAX_CALL_TIMEOUT:g}].")
        thread_id = body.get("thread_id") or None
        if thread_id is not None and not isinstance(thread_id, str):
            raise TypeError("'thread_id' must be a string.")
        return tool, arguments, float(timeout), thread_id


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers.

    uvicorn replaces SIGINT/SIGTERM handlers while it serves and raises the signal
    again when it stops; the program that runs the dashboard (the command line, the
    demo, a test) handles signals itself and stops the server by ``should_exit``.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _run_until_exit(server: uvicorn.Server, listener: socket.socket) -> None:
    # Shielded: uvicorn stops by should_exit and then waits for its connections, whose
    # tasks are its own; cancelling it instead would leave them behind.
    with anyio.CancelScope(shield=True):
        await server.serve(sockets=[listener])


async def _body_within(request: Request, limit: int) -> bytes | None:
    """The request's body, or None as soon as it is longer than ``limit`` bytes.

    The limit holds on the bytes received, whatever ``Content-Length`` says (a chunked
    body declares no length): reading stops at the first chunk past the limit, so
    the rest of an oversized body is never read, let alone kept.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None  # refused before a byte of it is read
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return Response(text, status_code=status, headers=headers, media_type="application/json")
