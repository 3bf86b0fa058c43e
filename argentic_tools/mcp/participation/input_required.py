"""2026-07-28 calls that need their caller's input: ``input_required`` rounds (SEP-2322).

In the stateless revision a server sends its client no requests; a ``tools/call``
whose tool asks a question answers with an ``input_required`` result instead, and the
client calls again with the answers. The bus call keeps running meanwhile:

1. The first ``tools/call`` starts the call on the bus in a task owned by the gateway
   (:class:`InputRounds`), and waits for its result or its first question.
2. A question (``context.elicit``, ``sample``, ``list_roots``) ends that MCP request
   with ``resultType: "input_required"``: its ``inputRequests`` (every question the
   tool has open, gathered for :data:`SETTLE_SECONDS` so that questions asked together
   go together) and a ``requestState`` naming the pending call and the round, which
   the SDK's :class:`~mcp.server.request_state.RequestStateBoundary` seals (AES-GCM,
   bound to the tool, its arguments, the authenticated principal when there is one,
   and a time limit): a tampered or foreign state is refused with -32602.
3. The client's repeated ``tools/call`` carries ``inputResponses`` and that state; each
   response whose key is an open question answers it (other keys are ignored), and the
   request waits, like the first, for the next questions or the result. A question
   left unanswered is asked again in the next round.

A key is the tool's own name for its question when it gives one
(``_meta["argentic/input_key"]`` of the request), else ``elicitation-N``,
``sampling-N`` or ``roots-N`` (N counts the call's questions). A ``tools/call`` with
``inputResponses`` but no ``requestState`` starts a new call whose questions are
first looked up among those responses (answers given in advance).

Questions go only to a client that declared the capability in the request's
``_meta`` (``elicitation``, ``sampling``, ``roots``); otherwise the tool gets
:class:`~argentic_tools.AskNotSupportedError` at once, and when it lets that error end
the call (error code ``ask_not_supported``), the request fails with the spec's -32021
(``MissingRequiredClientCapability``, the capability in ``requiredCapabilities``); a
tool that checks ``context.caller_can(...)`` first goes on. Log records ride the stream of
the call's current request, at or above the ``io.modelcontextprotocol/logLevel`` of
that request (none without it); records logged between two requests are sent with the
next one (the last :data:`LOG_BACKLOG`).

A call whose client does not come back within :data:`INPUT_WAIT_SECONDS` (the
gateway's ``input_wait``) is abandoned: it is cancelled at the tool (``TOOL_CANCEL``),
and its state is refused from then on. A call that ends while its client is away (its
timeout) keeps its result for the client's next request, as long. A client that
cancels a round's request cancels the call.
"""

import collections
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..._agent.calls.participation.handlers import CallerHandlers, CallRef
from ..._protocol.messages import TaskErrorMessage, ToolResult
from ..._protocol.participation import ElicitRequest, LogRecord, McpLogLevel, SampleRequest
from .asking import ELICIT, ROOTS, SAMPLE, at_least, input_request, key_hint, log_params, wire

logger = logging.getLogger("argentic_tools.mcp")

INPUT_WAIT_SECONDS = 600.0
"""How long a call waits for its client to come back with answers before it is
cancelled (also the life of its sealed ``requestState``)."""

SETTLE_SECONDS = 0.05
"""How long a round waits, after a question, for more questions of the same call."""

SETTLE_LIMIT_SECONDS = 0.5
"""The longest a round gathers questions before it answers."""

LOG_BACKLOG = 100
"""Log records kept for the next request while none of the call's is open."""

_DEFAULT_KEYS = {ELICIT: "elicitation", SAMPLE: "sampling", ROOTS: "roots"}


class _Question:
    """One open question of a call: its key, its MCP request, and the answer once given."""

    def __init__(self, key: str, request: types.InputRequest) -> None:
        self.key = key
        self.request = request
        self.answer: dict[str, Any] | None = None
        self.answered = anyio.Event()


class TaskSide(Protocol):
    """What a call may become besides its rounds: an MCP task (see :mod:`.tasks`).

    Once :attr:`adopted`, the call's questions go to it (the client answers them with
    ``tasks/update``, not with a request); until then it counts the questions open in
    rounds (:attr:`asking`). It hears of progress and of the call's end, and cancels
    :attr:`watching` once no request of the client is expected any more.
    """

    asking: int
    watching: anyio.CancelScope

    @property
    def adopted(self) -> bool:
        """Whether the call has become a task."""

    async def ask(self, method: str, params: Mapping[str, Any], hint: str | None) -> dict[str, Any]:
        """A question of the task: its answer, once ``tasks/update`` gives it."""

    def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        """A progress report of the call."""

    def finished(self, result: ToolResult | None) -> None:
        """The bus call ended (None: cancelled)."""


class PendingCall:
    """A bus call served over several ``tools/call`` requests (rounds).

    Args:
        can_ask: The questions the client can answer, by method.
        advance: ``inputResponses`` given with the first request (answers in advance).

    """

    def __init__(self, can_ask: frozenset[str], advance: Mapping[str, Any]) -> None:
        self.id = secrets.token_urlsafe(18)
        """The call's name in its ``requestState``: unguessable."""
        self.can_ask = can_ask
        self.round = 0
        self.result: ToolResult | None = None
        self.over = False
        self.delivered = anyio.Event()
        """Set once a request of the client got the result."""
        self.scope = anyio.CancelScope()
        self._advance = {key: dict(value) for key, value in advance.items() if _is_map(value)}
        self._open: dict[str, _Question] = {}
        self._asked = 0
        self._changed = anyio.Event()
        self._attached: list[ServerRequestContext[Any]] = []
        self._attach_changed = anyio.Event()
        self._backlog: collections.deque[LogRecord] = collections.deque(maxlen=LOG_BACKLOG)
        self.side: TaskSide | None = None
        """The MCP task the call may become (a client that declared the tasks extension)."""

    # -- the tool's side: handlers for execute_tool ------------------------------------

    def handlers(self, ctx: ServerRequestContext[Any]) -> CallerHandlers:
        """The call's handlers.

        One for each question the client can answer, and ``on_log`` when the first
        request asked for log records.
        """
        can = self.can_ask
        return CallerHandlers(
            on_elicit=self.on_elicit if ELICIT in can else None,
            on_sample=self.on_sample if SAMPLE in can else None,
            on_log=self.on_log if _log_levels(ctx) else None,
            on_roots=self.on_roots if ROOTS in can else None,
        )

    async def on_elicit(self, request: ElicitRequest, call: CallRef) -> dict[str, Any]:
        """A question for the client's user."""
        return await self.ask(ELICIT, wire(request), key_hint(request))

    async def on_sample(self, request: SampleRequest, call: CallRef) -> dict[str, Any]:
        """A completion of the client's model."""
        return await self.ask(SAMPLE, wire(request), key_hint(request))

    async def on_roots(self, call: CallRef) -> dict[str, Any]:
        """The client's roots."""
        return await self.ask(ROOTS, {}, None)

    async def ask(self, method: str, params: Mapping[str, Any], hint: str | None) -> dict[str, Any]:
        """Put a question in the next ``input_required`` result; return the client's answer.

        A call that became a task asks its task instead.
        """
        side = self.side
        if side is None:
            return await self._ask_in_rounds(method, params, hint)
        if side.adopted:
            return await side.ask(method, params, hint)
        side.asking += 1
        try:
            return await self._ask_in_rounds(method, params, hint)
        finally:
            side.asking -= 1

    async def _ask_in_rounds(
        self, method: str, params: Mapping[str, Any], hint: str | None
    ) -> dict[str, Any]:
        self._asked += 1
        key = hint or f"{_DEFAULT_KEYS[method]}-{self._asked}"
        if key in self._open:
            key = f"{key}-{self._asked}"
        given = self._advance.pop(key, None)
        if given is not None:
            return given
        question = _Question(key, input_request(method, params))
        self._open[key] = question
        self._touch()
        try:
            await question.answered.wait()
        finally:
            self._open.pop(key, None)
        assert question.answer is not None
        return question.answer

    async def on_log(self, record: LogRecord, call: CallRef) -> None:
        """A log record: on the current request's stream, or kept for the next one."""
        if not self._attached:
            self._backlog.append(record)
            return
        await _send_log(self._attached[-1], record)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Progress, on the current request's stream when it asked for progress."""
        for ctx in self._attached[-1:]:
            if (ctx.meta or {}).get("progress_token") is not None:
                await ctx.session.report_progress(progress, total, message)
        if self.side is not None:
            self.side.progressed(progress, total, message)

    # -- the client's side: rounds ------------------------------------------------------

    def answer(self, responses: Mapping[str, Any]) -> None:
        """The client's ``inputResponses``: each answers the open question of its key."""
        for key, value in responses.items():
            if key in self._open and _is_map(value):  # a malformed one leaves it open
                question = self._open.pop(key)
                question.answer = dict(value)
                question.answered.set()

    async def next_round(
        self, ctx: ServerRequestContext[Any]
    ) -> ToolResult | types.InputRequiredResult:
        """The call's result, or the questions the client must answer now."""
        self._attached.append(ctx)
        self._attach_changed.set()
        self._attach_changed = anyio.Event()
        try:
            while self._backlog:
                await _send_log(ctx, self._backlog.popleft())
            while True:
                if self.result is not None:
                    self.delivered.set()
                    return self.result
                if self.over:
                    raise MCPError(code=types.INTERNAL_ERROR, message="the call was cancelled")
                if self._open:
                    await self._settle()
                    if self.result is None and self._open:
                        self.round += 1
                        return types.InputRequiredResult(
                            input_requests={k: q.request for k, q in self._open.items()},
                            request_state=f"{self.id}.{self.round}",
                        )
                    continue
                await self._changed.wait()
        finally:
            self._attached = [kept for kept in self._attached if kept is not ctx]
            self._attach_changed.set()
            self._attach_changed = anyio.Event()

    async def _settle(self) -> None:
        """Gather the questions asked together (a tool asking several at once)."""
        with anyio.move_on_after(SETTLE_LIMIT_SECONDS):
            while self.result is None:
                changed = self._changed
                with anyio.move_on_after(SETTLE_SECONDS) as quiet:
                    await changed.wait()
                if quiet.cancelled_caught:
                    return

    def finish(self, result: ToolResult | None) -> None:
        """The bus call ended (None: cancelled)."""
        self.result = result
        self.over = True
        self._touch()
        if self.side is not None:
            self.side.finished(result)

    async def watch(self, wait: float) -> None:
        """Cancel the call once no request of its client was open for ``wait`` seconds.

        Not once it became a task: its client then polls the task instead.
        """
        if self.side is None:
            await self._watch(wait)
        else:
            with self.side.watching:
                await self._watch(wait)

    async def _watch(self, wait: float) -> None:
        while True:
            while self._attached:
                await self._attach_changed.wait()
            with anyio.move_on_after(wait) as idle:
                while not self._attached:
                    await self._attach_changed.wait()
            if idle.cancelled_caught:
                logger.info(
                    "an MCP client did not come back within %.0f s with the input its call "
                    "needs: the call is cancelled",
                    wait,
                )
                self.scope.cancel()
                return

    def _touch(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


class InputRounds:
    """The calls waiting for their clients' input, and the task group they run in.

    Args:
        wait: Seconds a call waits for its client between two requests.

    """

    def __init__(self, wait: float = INPUT_WAIT_SECONDS) -> None:
        if not (math.isfinite(wait) and wait > 0):
            raise ValueError(f"input_wait must be a positive number of seconds, got {wait!r}")
        self.wait = wait
        self._calls: dict[str, PendingCall] = {}
        self._group: anyio.abc.TaskGroup | None = None

    @property
    def running(self) -> bool:
        """Whether calls can be started (:meth:`run` is running)."""
        return self._group is not None

    @property
    def pending(self) -> int:
        """Calls in progress."""
        return len(self._calls)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the calls' tasks until cancelled (which cancels the calls)."""
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._group = None

    def start(self, call: PendingCall, work: Callable[[], Awaitable[ToolResult]]) -> None:
        """Run ``work`` (the bus call) for ``call`` in the background."""
        assert self._group is not None, "InputRounds.run is not running"
        self._calls[call.id] = call
        self._group.start_soon(self._serve, call, work, name=f"mcp-input-call:{call.id[:6]}")

    def find(self, state: str) -> PendingCall | None:
        """The call a (verified) ``requestState`` names (while it runs, or its result waits)."""
        return self._calls.get(state.rsplit(".", 1)[0])

    async def _serve(self, call: PendingCall, work: Callable[[], Awaitable[ToolResult]]) -> None:
        result: ToolResult | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(call.watch, self.wait)
                with call.scope:
                    result = await work()
                group.cancel_scope.cancel()
            call.finish(result)
            if result is not None:
                # It ended while its client was away (its timeout, say): the result
                # waits for the client's next request, as long as a question would.
                with anyio.move_on_after(self.wait):
                    await call.delivered.wait()
        finally:
            self._calls.pop(call.id, None)
            call.finish(result)


ASK_NOT_SUPPORTED = "ask_not_supported"
"""The error code of a call whose tool asked what its caller cannot answer."""

_CAPABILITY_OF_KIND = {"elicit": "elicitation", "sample": "sampling", "roots": "roots"}


def missing_capability(result: ToolResult) -> MCPError | None:
    """The -32021 error of a 2026-07-28 call that needed an undeclared capability, or None.

    Its tool asked a question the client cannot answer (it did not declare the
    capability) and did not recover: on 2026-07-28 the spec wants that error rather
    than the tool's.
    """
    if not isinstance(result, TaskErrorMessage) or result.error_code != ASK_NOT_SUPPORTED:
        return None
    details = result.details if isinstance(result.details, Mapping) else {}
    capability = _CAPABILITY_OF_KIND.get(str(details.get("kind")))
    required: dict[str, Any] = {capability: {}} if capability else {}
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=result.error,
        data={"requiredCapabilities": required},
    )


async def _send_log(ctx: ServerRequestContext[Any], record: LogRecord) -> None:
    if record.level in _log_levels(ctx):
        notification = types.LoggingMessageNotification(params=log_params(record))
        await ctx.session.send_notification(notification, related_request_id=ctx.request_id)


def _log_levels(ctx: ServerRequestContext[Any]) -> frozenset[McpLogLevel]:
    """The levels a 2026-07-28 request asked for (``_meta`` logLevel; none without it)."""
    level = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
    if level not in at_least(None):
        return frozenset()
    found: McpLogLevel = level
    return at_least(found)


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)
