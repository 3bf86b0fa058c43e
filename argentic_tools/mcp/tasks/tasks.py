"""MCP Tasks on the gateway: the 2026-07-28 extension ``io.modelcontextprotocol/tasks`` (SEP-2663).

A ``tools/call`` may be answered with a task instead of its result; the client then
polls ``tasks/get`` (the status, and once the task ended its result or error inlined),
answers the tool's questions with ``tasks/update`` and cancels with ``tasks/cancel``.
The gateway declares the extension in ``server/discover`` and uses it only with a
client that declares it on the request (``_meta`` ``clientCapabilities.extensions``).

**Which calls become tasks.** The server decides, per call:

- a tool tagged ``long-running`` (:data:`LONG_RUNNING_TAG`) is answered with a task at
  once; a tool tagged ``task-only`` (:data:`TASK_ONLY_TAG`) too, and a client that does
  not declare the extension gets -32021 (missing client capability) for it instead of a
  call; such calls may take the gateway's ``--timeout``, or else the task's time to
  live, instead of the manager's default;
- any other call becomes a task when it is still running :data:`TASK_AFTER_SECONDS`
  after its request came with no question open (a quick call keeps its ordinary
  result; a call that asks first goes through ``input_required`` rounds, then becomes a
  task if it runs on).

Tags are the tools' own registration metadata (``@tool(tags=[...])``). Without the
extension (or in the handshake era) every call is an ordinary call.

**Questions.** A tool that asks while its call is a task (``context.elicit``,
``sample``, ``list_roots``) puts the task in ``input_required``: ``tasks/get`` lists
every open question in ``inputRequests``, keyed by the tool's own name for it
(``_meta["argentic/input_key"]``) or ``elicitation-task-N``, ``sampling-task-N``,
``roots-task-N``; each key is used once in a task's life. ``tasks/update`` answers the
keys that are open (others are ignored); a partial answer leaves the rest open.
Questions go only to a client that declared the capability on the call's request.

**Statuses.** ``working``, ``input_required``, ``completed`` (the ``CallToolResult``
inlined, also for a tool's failure, ``isError``), ``failed`` (a JSON-RPC error: the
ones an ordinary call would have raised, such as -32021 for a question the client
cannot answer), ``cancelled``. ``ttlMs`` is :data:`TTL_MS` from creation, after
which the task is forgotten (``tasks/get`` then answers -32602, "Task has expired");
``pollIntervalMs`` is :data:`POLL_INTERVAL_MS`.

**Who may see a task.** Task ids are 32 random URL-safe bytes' worth
(``secrets.token_urlsafe(24)``), bound to the client that created the task: its
authenticated principal when the HTTP server authenticates (the MCP SDK's access
token: client, issuer, subject), else the ``name`` of the ``clientInfo`` it sends with
each request. Without authentication that name keeps apart clients that name
themselves differently but proves nothing, and the id itself is the credential:
serve behind authentication when users must not reach each other's tasks. A request
for another client's task gets the same -32602 as an unknown id, so ids cannot be
probed. Over HTTP, an ``Mcp-Name`` header that differs from ``params.taskId`` is
refused with -32020 (header mismatch); a missing one is accepted.

**Durability.** Tasks are rows of a :class:`~argentic_tools.mcp.tasks.task_store.TaskStore`,
written before the client hears of a task; the bus call is labelled
(``execute_tool(task_id_override=label)``) so that the manager's call journal knows
it. A gateway restarted on the same journal (``mcp serve --journal PATH``) answers
``tasks/get`` from the rows, and waits again for the calls that had not ended
(``manager.result(label)``); without a journal such a task fails (-32603) saying so.
"""

import logging
import secrets
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.jsonrpc import HEADER_MISMATCH
from pydantic import Field

from ..._agent.manager import ToolManager
from ..._protocol.messages import TaskErrorMessage, ToolResult
from ..participation.asking import ELICIT, ROOTS, SAMPLE, input_request
from ..participation.input_required import PendingCall, missing_capability
from .task_store import TaskRecord, TaskStore

logger = logging.getLogger("argentic_tools.mcp")

EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier."""

LONG_RUNNING_TAG = "long-running"
"""A tool with this tag is answered with a task at once (to clients that declare tasks)."""

TASK_ONLY_TAG = "task-only"
"""A tool with this tag runs only as a task: -32021 for clients that do not declare tasks."""

TASK_AFTER_SECONDS = 1.0
"""How long an untagged call may run before the client gets a task instead of waiting."""

TTL_MS = 3_600_000
"""A task's time to live, from its creation (an hour)."""

POLL_INTERVAL_MS = 500
"""How often a client is asked to poll ``tasks/get``."""

PURGE_SECONDS = 60.0
"""How often expired tasks are forgotten."""

Mode = Literal["required", "optional"] | None

_KINDS = {ELICIT: "elicitation", SAMPLE: "sampling", ROOTS: "roots"}


class TaskParams(types.RequestParams):
    """The params of ``tasks/get`` and ``tasks/cancel``."""

    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    """The params of ``tasks/update``."""

    input_responses: dict[str, Any] = Field(alias="inputResponses")


def declares_tasks(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the request's client declared the tasks extension."""
    capabilities = (ctx.meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY)
    if isinstance(capabilities, Mapping):
        extensions = capabilities.get("extensions")
        return isinstance(extensions, Mapping) and EXTENSION in extensions
    declared = ctx.session.client_capabilities
    return declared is not None and EXTENSION in (declared.extensions or {})


def owner_of(ctx: ServerRequestContext[Any]) -> str:
    """Whom a task created by this request belongs to (see the module's text)."""
    principal = authenticated_principal(ctx)
    if principal is not None:
        return f"principal:{principal}"
    info = (ctx.meta or {}).get(types.CLIENT_INFO_META_KEY)
    name = info.get("name") if isinstance(info, Mapping) else None
    return f"client:{name}" if isinstance(name, str) and name else "anonymous"


def missing_tasks_capability(message: str) -> MCPError:
    """-32021 naming the tasks extension as the capability the client lacks."""
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=message,
        data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


def iso(seconds: float) -> str:
    """An epoch time as ISO 8601 in UTC (``2026-07-28T10:30:00.000Z``)."""
    stamp = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


class _Question:
    """A question of a task: its MCP request and, once given, the answer."""

    def __init__(self, request: types.InputRequest) -> None:
        self.request = request
        self.answer: dict[str, Any] | None = None
        self.answered = anyio.Event()


class TaskableCall:
    """The task side of a 2026-07-28 call that may become a task (its call's ``side``).

    The call is served in ``input_required`` rounds like any :class:`PendingCall` until
    :meth:`adopt`; from then on its questions wait in :attr:`questions` for
    ``tasks/update``, and its client is no longer expected to come back with a request.

    Args:
        call: The call (it is given this object as its ``side``).
        on_end: Told when the call ends.

    """

    def __init__(
        self, call: PendingCall, on_end: Callable[["TaskableCall", ToolResult | None], None]
    ) -> None:
        self.call = call
        call.side = self
        self.label = f"mcp-task-{secrets.token_hex(8)}"
        """The bus call's label (``task_id_override``)."""
        self.task: TaskRecord | None = None
        self.questions: dict[str, _Question] = {}
        """The task's open questions, by key."""
        self.asking = 0
        """Questions open in ``input_required`` rounds (before :meth:`adopt`)."""
        self.cancel_requested = False
        self.note: str | None = None
        """The last progress report, as a status message."""
        self.watching = anyio.CancelScope()
        """The call's watch for its client's next request, cancelled by :meth:`adopt`."""
        self._keys: set[str] = set()
        self._count = 0
        self._on_end = on_end

    @property
    def adopted(self) -> bool:
        """Whether the call has become a task."""
        return self.task is not None

    def adopt(self, record: TaskRecord) -> None:
        """The call is the task ``record`` from now on."""
        self.task = record
        self.watching.cancel()  # no request of its client is expected any more

    async def ask(self, method: str, params: Mapping[str, Any], hint: str | None) -> dict[str, Any]:
        """A question of the task: in its ``inputRequests`` until ``tasks/update`` answers."""
        self._count += 1
        key = hint or f"{_KINDS[method]}-task-{self._count}"
        if key in self._keys:
            key = f"{key}-task-{self._count}"
        self._keys.add(key)
        question = _Question(input_request(method, params))
        self.questions[key] = question
        try:
            await question.answered.wait()
        finally:
            self.questions.pop(key, None)
        assert question.answer is not None
        return question.answer

    def answer_task(self, responses: Mapping[str, Any]) -> None:
        """``tasks/update``'s ``inputResponses``: each answers the open question of its key."""
        for key, value in responses.items():
            if key in self.questions and isinstance(value, Mapping):  # else it stays open
                question = self.questions.pop(key)
                question.answer = dict(value)
                question.answered.set()

    def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        """Progress: the task's status message."""
        done = f"{progress:g}" if total is None else f"{progress:g}/{total:g}"
        self.note = f"{done}: {message}" if message else done

    def finished(self, result: ToolResult | None) -> None:
        """The bus call ended (None: cancelled)."""
        self._on_end(self, result)


Render = Callable[[str, ToolResult], types.CallToolResult]
"""How the gateway turns a tool's result into MCP's (its ``mcp_result``)."""


class McpTasks:
    """The gateway's tasks: which calls become tasks, ``tasks/*``, and their store.

    Args:
        manager: The gateway's manager (for ``cancel`` and, with a journal, ``result``).
        render: The gateway's ``mcp_result``.
        tags_of: A registered tool's tags, by registry name.
        store: Where tasks are kept; in memory when None.

    """

    def __init__(
        self,
        manager: ToolManager,
        render: Render,
        tags_of: Callable[[str], Sequence[str]],
        store: TaskStore | None = None,
        *,
        ttl_ms: int | None = TTL_MS,
        poll_interval_ms: int = POLL_INTERVAL_MS,
        task_after: float = TASK_AFTER_SECONDS,
    ) -> None:
        self.manager = manager
        self.store = store or TaskStore()
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.task_after = task_after
        self.closing = False
        """Set while the gateway stops: calls cut short then leave their tasks as they are."""
        self._render = render
        self._tags_of = tags_of
        self._live: dict[str, TaskableCall] = {}
        self._group: anyio.abc.TaskGroup | None = None

    def install(self, server: Server[Any]) -> None:
        """Declare the extension on ``server`` and serve ``tasks/get``, ``update``, ``cancel``."""
        server.extensions[EXTENSION] = {}
        server.add_request_handler("tasks/get", TaskParams, self._get)
        server.add_request_handler("tasks/update", UpdateParams, self._update)
        server.add_request_handler("tasks/cancel", TaskParams, self._cancel)

    # -- tools/call ------------------------------------------------------------------

    def mode(self, name: str) -> Mode:
        """``required`` (tag ``task-only``), ``optional`` (``long-running``) or None."""
        tags = self._tags_of(name)
        if TASK_ONLY_TAG in tags:
            return "required"
        return "optional" if LONG_RUNNING_TAG in tags else None

    def check(self, ctx: ServerRequestContext[Any], name: str) -> None:
        """Refuse a task-only tool to a client without the extension (-32021)."""
        if self.mode(name) == "required" and not declares_tasks(ctx):
            raise missing_tasks_capability(
                f"Tool {name!r} runs only as a task: declare the {EXTENSION} extension"
            )

    def call_for(
        self, ctx: ServerRequestContext[Any], can_ask: frozenset[str], advance: Mapping[str, Any]
    ) -> PendingCall:
        """The pending call of a new request: one that may become a task when the client can."""
        call = PendingCall(can_ask, advance)
        if declares_tasks(ctx):
            TaskableCall(call, self._ended)
        return call

    def timeout_for(self, name: str, timeout: float | None) -> float | None:
        """The timeout of a call of ``name``: ``timeout``, or the task's life for a tagged tool."""
        if timeout is not None or self.mode(name) is None or self.ttl_ms is None:
            return timeout
        return self.ttl_ms / 1000

    async def round(
        self, ctx: ServerRequestContext[Any], side: TaskableCall, tool: str, name: str
    ) -> ToolResult | types.InputRequiredResult | dict[str, Any]:
        """The result, the questions of a round, or the task the call became.

        ``tool`` is the MCP name, ``name`` the registry name.
        """
        call = side.call
        if side.task is None:
            wait = 0.0 if self.mode(name) else self.task_after
            with anyio.move_on_after(wait):
                return await call.next_round(ctx)
            if call.result is None and not call.over and not side.asking:
                return self._adopt(ctx, side, tool)
        return await call.next_round(ctx)

    def _adopt(
        self, ctx: ServerRequestContext[Any], call: TaskableCall, tool: str
    ) -> dict[str, Any]:
        """Make ``call`` a task, durably; its ``CreateTaskResult``."""
        now = time.time()
        record = TaskRecord(
            task_id=secrets.token_urlsafe(24),
            owner=owner_of(ctx),
            label=call.label,
            tool=tool,
            status="working",
            status_message=None,
            created_at=now,
            updated_at=now,
            ttl_ms=self.ttl_ms,
        )
        self.store.add(record)
        self._live[record.task_id] = call
        call.adopt(record)
        view = self._view(record)
        view["resultType"] = "task"
        return view

    def _ended(self, call: TaskableCall, result: ToolResult | None) -> None:
        record = call.task
        if record is None:
            return
        self._live.pop(record.task_id, None)
        if not call.cancel_requested and (self.closing or result is None):
            return  # cut short by the gateway stopping: a restarted one finds it in the journal
        try:
            self._settle(record, result, cancelled=call.cancel_requested)
        except sqlite3.Error:  # the call is over either way; its client sees it working
            logger.exception("MCP task %s: its outcome could not be stored", record.label)

    def _settle(self, record: TaskRecord, result: ToolResult | None, *, cancelled: bool) -> None:
        """Write how the task's call ended."""
        if record.terminal:
            return
        if result is None or (
            cancelled and isinstance(result, TaskErrorMessage) and result.error_code == "cancelled"
        ):
            record.status, record.outcome = "cancelled", None
            record.status_message = "The task was cancelled."
        else:
            error = _protocol_error(record.tool, result)
            if error is not None:
                record.status, record.outcome = "failed", {"error": error}
                record.status_message = str(error["message"])
            else:
                try:
                    rendered = self._render(record.tool, result)
                except Exception as exc:  # as an ordinary call's handler would fail: -32603
                    logger.exception("MCP task %s: its result cannot be sent", record.label)
                    self._fail(record, f"The tool's result cannot be sent over MCP: {exc}")
                    return
                dumped = rendered.model_dump(mode="json", by_alias=True, exclude_none=True)
                record.status, record.outcome = "completed", {"result": dumped}
                record.status_message = None
        record.updated_at = time.time()
        self.store.save(record)

    def _fail(self, record: TaskRecord, message: str) -> None:
        """End the task ``failed`` with an internal error (-32603) saying ``message``."""
        record.status = "failed"
        record.outcome = {"error": {"code": types.INTERNAL_ERROR, "message": message}}
        record.status_message, record.updated_at = message, time.time()
        self.store.save(record)

    # -- tasks/get, tasks/update, tasks/cancel -----------------------------------------

    async def _get(self, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        return self._view(self._find(ctx, params.task_id))

    async def _update(self, ctx: ServerRequestContext[Any], params: UpdateParams) -> dict[str, Any]:
        record = self._find(ctx, params.task_id)
        call = self._live.get(record.task_id)
        if call is not None:
            call.answer_task(params.input_responses)
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        record = self._find(ctx, params.task_id)
        if record.terminal:
            return {}
        call = self._live.get(record.task_id)
        if call is not None:
            call.cancel_requested = True
            call.call.scope.cancel()  # the manager sends TOOL_CANCEL to the tool
        else:  # a call this gateway waits on again after a restart
            await self.manager.cancel(record.label, "the MCP client cancelled its task")
            self._settle(record, None, cancelled=True)
        return {}

    def _find(self, ctx: ServerRequestContext[Any], task_id: str) -> TaskRecord:
        """The client's task of that id, after the checks every ``tasks/*`` request gets."""
        if not declares_tasks(ctx):
            raise missing_tasks_capability(f"{ctx.method} needs the {EXTENSION} extension")
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        if headers is not None and headers.get(MCP_NAME_HEADER) is not None:
            named = decode_header_value(headers.get(MCP_NAME_HEADER))
            if named is None or named.strip() != task_id:
                raise MCPError(
                    code=HEADER_MISMATCH,
                    message=f"{MCP_NAME_HEADER} header does not match the request's taskId",
                )
        live = self._live.get(task_id)
        record = live.task if live is not None else self.store.get(task_id)
        if record is None or record.owner != owner_of(ctx):
            raise MCPError(
                code=types.INVALID_PARAMS, message="Failed to retrieve task: Task not found"
            )
        if record.expired(time.time()):
            self._forget(record)
            raise MCPError(
                code=types.INVALID_PARAMS, message="Failed to retrieve task: Task has expired"
            )
        return record

    def _view(self, record: TaskRecord) -> dict[str, Any]:
        """The task as ``tasks/get`` shows it (a ``DetailedTask``)."""
        status, message = record.status, record.status_message
        call = self._live.get(record.task_id)
        requests: dict[str, Any] = {}
        if call is not None and not record.terminal:
            requests = {
                key: question.request.model_dump(mode="json", by_alias=True, exclude_none=True)
                for key, question in list(call.questions.items())
            }
            status = "input_required" if requests else "working"
            message = call.note
            if status != record.status:
                record.status, record.updated_at = status, time.time()
                self.store.save(record)
        view: dict[str, Any] = {
            "taskId": record.task_id,
            "status": status,
            "createdAt": iso(record.created_at),
            "lastUpdatedAt": iso(record.updated_at),
            "ttlMs": record.ttl_ms,
            "pollIntervalMs": self.poll_interval_ms,
        }
        if message:
            view["statusMessage"] = message
        if requests:
            view["inputRequests"] = requests
        if record.terminal and record.outcome is not None:
            view.update(record.outcome)
        return view

    def _forget(self, record: TaskRecord) -> None:
        call = self._live.pop(record.task_id, None)
        if call is not None and not call.call.over:
            call.cancel_requested = True
            call.call.scope.cancel()
        self.store.delete(record.task_id)

    async def stop(self) -> None:
        """The gateway stops: leave the calls of unfinished tasks running, when it can.

        With a call journal, the manager is closed before the gateway's calls are cut
        short: its calls then go on at their tools, and the gateway restarted on the
        journal waits for them again. Without one they are cancelled at their tools.
        """
        self.closing = True
        if self._live and self.manager.journal is not None:
            await self.manager.aclose()

    # -- the tasks a restarted gateway finds -------------------------------------------

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Wait again for the calls of unfinished stored tasks, and purge; until cancelled."""
        async with anyio.create_task_group() as group:
            self._group = group
            self.store.purge(time.time())
            for record in self.store.unfinished():
                if record.task_id not in self._live:
                    group.start_soon(self._reattach, record)
            task_status.started()
            while True:
                await anyio.sleep(PURGE_SECONDS)
                now = time.time()
                for call in list(self._live.values()):
                    if call.task is not None and call.task.expired(now):
                        self._forget(call.task)
                self.store.purge(now)

    async def _reattach(self, record: TaskRecord) -> None:
        """The outcome of a task whose call began before this gateway started."""
        journal = self.manager.journal
        if journal is None:
            self._fail(
                record,
                "The gateway restarted, and without a call journal (mcp serve --journal) "
                "it cannot tell how this task's call ended",
            )
            return
        try:
            result = await self.manager.result(record.label)
        except KeyError as exc:
            self._fail(
                record, f"The gateway restarted and its journal does not know the call: {exc}"
            )
            return
        if not self.closing:
            self._settle(record, result, cancelled=False)


def _protocol_error(tool: str, result: ToolResult) -> dict[str, Any] | None:
    """The JSON-RPC error an ordinary call would have answered with, or None."""
    if isinstance(result, TaskErrorMessage) and result.error_code == "not_found":
        return {"code": types.INVALID_PARAMS, "message": f"Unknown tool: {tool}"}
    missing = missing_capability(result)
    if missing is None:
        return None
    return missing.error.model_dump(mode="json", by_alias=True, exclude_none=True)
