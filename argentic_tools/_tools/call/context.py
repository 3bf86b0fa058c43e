"""The call a tool is serving: :class:`ToolContext`, and where the running call finds it."""

import contextvars
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack, overload

from pydantic import BaseModel

from ..._errors import AskNotSupportedError
from ..._protocol.participation import (
    MCP_LOG_LEVELS,
    CallerAbility,
    ElicitRequest,
    ElicitResult,
    LogRecord,
    McpLogLevel,
    Root,
    SampleRequest,
    SampleResult,
    SamplingMessage,
)
from .asking import CallerLine
from .control import REPORTED, CallControl, Reported
from .questions import (
    SampleOptions,
    confirm_request,
    confirmed,
    elicit_request,
    elicit_result,
    roots_result,
    sample_request,
    sample_result,
)


@dataclasses.dataclass(frozen=True)
class ToolContext:
    """What a tool knows about the call it is serving.

    A ``@tool`` function receives it through a parameter annotated
    ``ToolContext`` (or named ``context``); a ``BaseTool`` reads ``self.context``.
    """

    task_id: str
    """Id of this task (unique per call)."""
    tool_id: str
    """Id under which this tool is registered."""
    tool_name: str
    """Name of this tool."""
    call_id: str | None = None
    """The caller's id for the call (e.g. the LLM's tool-call id)."""
    thread_id: str | None = None
    """Conversation thread of the caller."""
    trace_id: str | None = None
    """Trace id for correlating logs."""
    user_id: str | None = None
    """User on whose behalf the call is made."""
    deadline: float | None = None
    """Unix time after which the caller stops waiting."""
    source: str | None = None
    """MQTT client id of the caller."""
    # The call's controls are an attribute, not a field: ``dataclasses.asdict(context)``
    # stays plain data, as tools that log or return their context expect.
    _control: ClassVar[CallControl | None] = None

    def bound_to(self, control: CallControl) -> "ToolContext":
        """Wire the context to a running call's controls; returns it (for the serving loop)."""
        object.__setattr__(self, "_control", control)
        return self

    @property
    def cancelled(self) -> bool:
        """True once the caller cancelled the call (or the tool is shutting down).

        An async tool is cancelled at its next ``await``; a sync tool runs in a
        thread that cannot be interrupted, so a long one should check this (or
        call :meth:`raise_if_cancelled`) now and then. Its result is dropped
        either way, and it keeps its concurrency slot until it returns.
        """
        return self._control is not None and self._control.cancelled

    def raise_if_cancelled(self) -> None:
        """Raise :class:`asyncio.CancelledError` if the call was cancelled."""
        if self._control is not None:
            self._control.raise_if_cancelled()

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Reported:
        """Tell the caller how far the call has got (sync and async tools alike).

        Cheap enough for a tight loop: at most about ten reports a second reach
        the wire, each the latest. Each report resets a caller's ``idle_timeout``.
        Sent only when the caller asked for progress; a no-op otherwise. Async
        tools may ``await`` the returned value; there is no need to.

        Args:
            progress: Work done so far (any unit, e.g. items or bytes).
            total: Work in all, when known.
            message: What the tool is doing, for people.

        Raises:
            ValueError: ``progress`` or ``total`` is not a finite number.

        """
        control = self._control
        if control is None:
            return REPORTED
        return control.report_progress(progress, total, message)

    def send_partial(self, chunk: Any) -> Reported:
        """Send one chunk of the result now, to a caller that streams (``stream_tool``).

        Chunks arrive in order, once each, before the final result. A caller
        that does not stream gets only the final result. Async tools should
        ``await`` the returned value: it waits when the broker falls behind.

        Raises:
            ValueError: The chunk is not JSON-serialisable, or too large for one message.

        """
        if self._control is None:
            return REPORTED
        return self._control.send_partial(chunk)

    # -- the caller takes part -----------------------------------------------------------

    def caller_can(self, kind: CallerAbility) -> bool:
        """Whether the caller takes part in ``kind`` (it said so in the task).

        ``kind`` is ``"elicit"``, ``"sample"``, ``"roots"`` or ``"log"``. A tool that can
        do without an answer checks this first; asking a caller that cannot answer
        raises :class:`~argentic_tools.AskNotSupportedError` at once.
        """
        return self._control is not None and self._control.caller.can(kind)

    @overload
    async def ask(self, request: ElicitRequest) -> ElicitResult: ...
    @overload
    async def ask(self, request: SampleRequest) -> SampleResult: ...
    async def ask(self, request: ElicitRequest | SampleRequest) -> ElicitResult | SampleResult:
        """Ask the caller a question given whole, in MCP's shape (an MCP bridge forwards so).

        Raises:
            AskNotSupportedError: The caller cannot answer this kind.
            AskError: The caller did not answer, or answered malformed.

        """
        line = self._line()
        if isinstance(request, ElicitRequest):
            answer = await line.ask("elicit", _wire(request))
            return elicit_result(request, answer)
        return sample_result(await line.ask("sample", _wire(request)))

    @overload
    def ask_blocking(self, request: ElicitRequest) -> ElicitResult: ...
    @overload
    def ask_blocking(self, request: SampleRequest) -> SampleResult: ...
    def ask_blocking(self, request: ElicitRequest | SampleRequest) -> ElicitResult | SampleResult:
        """:meth:`ask` for a sync tool: blocks its thread until the answer comes."""
        line = self._line()
        if isinstance(request, ElicitRequest):
            answer = line.ask_blocking("elicit", _wire(request))
            return elicit_result(request, answer)
        return sample_result(line.ask_blocking("sample", _wire(request)))

    async def elicit(
        self, message: str, schema: "Mapping[str, Any] | type[BaseModel]"
    ) -> ElicitResult:
        """Ask the caller (a person, usually) a question, and wait for the answer.

        Args:
            message: The question, for people.
            schema: The answer's shape: a flat JSON Schema object (strings, numbers,
                booleans, enums) or a pydantic model of such fields.

        Returns:
            ``accept`` with ``content`` (checked against ``schema``), ``decline`` or
            ``cancel``: read ``result.accepted`` and ``result.data``.

        Raises:
            AskNotSupportedError: The caller cannot answer questions (at once).
            AskError: The caller's handler failed, or its answer does not match ``schema``.
            ValueError: ``schema`` is not a JSON Schema object.

        """
        return await self.ask(elicit_request(message, schema))

    def elicit_blocking(
        self, message: str, schema: "Mapping[str, Any] | type[BaseModel]"
    ) -> ElicitResult:
        """:meth:`elicit` for a sync tool: blocks its thread until the answer comes."""
        return self.ask_blocking(elicit_request(message, schema))

    async def confirm(self, question: str) -> bool:
        """Ask a person a yes/no question: True only when they accept and say yes.

        The way to ask before doing something that cannot be undone: a tool that
        gets False (declined, cancelled, or "no") does not act.

        Raises:
            AskNotSupportedError: The caller cannot answer questions (at once).
            AskError: The caller's handler failed.

        """
        return confirmed(await self.ask(confirm_request(question)))

    def confirm_blocking(self, question: str) -> bool:
        """:meth:`confirm` for a sync tool: blocks its thread until the answer comes."""
        return confirmed(self.ask_blocking(confirm_request(question)))

    async def sample(
        self,
        messages: "str | Sequence[SamplingMessage | Mapping[str, Any] | str]",
        *,
        max_tokens: int,
        system: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: Mapping[str, Any] | None = None,
        include_context: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SampleResult:
        """Ask the caller's model for a completion (the tool needs no model of its own).

        Args:
            messages: The conversation: a string (one user message), or messages as
                :class:`~argentic_tools.SamplingMessage`, MCP mappings or strings.
            max_tokens: Most tokens the completion may have.
            system: A system prompt.
            temperature: Sampling temperature.
            stop_sequences: Where the completion should stop.
            model_preferences: MCP's model preferences (hints, priorities).
            include_context: ``none``, ``thisServer`` or ``allServers``.
            metadata: Provider-specific metadata, passed through.

        Returns:
            The completion: ``result.text``, ``result.model``, ``result.content``.

        Raises:
            AskNotSupportedError: The caller lends no model (at once).
            AskError: The caller's handler failed, or its completion is malformed.

        """
        return await self.ask(
            sample_request(
                messages,
                max_tokens=max_tokens,
                system=system,
                temperature=temperature,
                stop_sequences=stop_sequences,
                model_preferences=model_preferences,
                include_context=include_context,
                metadata=metadata,
            )
        )

    def sample_blocking(
        self,
        messages: "str | Sequence[SamplingMessage | Mapping[str, Any] | str]",
        **options: Unpack[SampleOptions],
    ) -> SampleResult:
        """:meth:`sample` for a sync tool: blocks its thread until the completion comes."""
        return self.ask_blocking(sample_request(messages, **options))

    async def list_roots(self) -> list[Root]:
        """The directories (or other roots) the caller lets this tool work in.

        Raises:
            AskNotSupportedError: The caller names no roots (at once).
            AskError: The caller's handler failed, or its answer is malformed.

        """
        return roots_result(await self._line().ask("roots", {}))

    def list_roots_blocking(self) -> list[Root]:
        """:meth:`list_roots` for a sync tool: blocks its thread until the answer comes."""
        return roots_result(self._line().ask_blocking("roots", {}))

    def log(
        self,
        level: McpLogLevel | str,
        message: str,
        data: Any = None,
        *,
        logger: str | None = None,
    ) -> Reported:
        """Send the caller a log record (sync and async tools alike; nothing to await).

        Sent only when the caller reads log records (``on_log``; an MCP client's
        log level), rate-limited: at most about 20 a second after a burst of 100,
        the next record saying how many were left out.

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``, ``critical``,
                ``alert`` or ``emergency`` (``warn`` and Python's names are accepted).
            message: What happened, for people.
            data: Structured details, any JSON value.
            logger: Which part of the tool logs it.

        Raises:
            ValueError: ``level`` is not a log level, or ``data`` is not JSON.

        """
        control = self._control
        if control is None or control.finished or not control.caller.can("log"):
            return REPORTED
        control.caller.log(
            LogRecord(level=_level(level), message=str(message), data=data, logger=logger)
        )
        return REPORTED

    def _line(self) -> CallerLine:
        control = self._control
        if control is None:
            raise AskNotSupportedError("this context is not serving a call; nobody can answer")
        return control.caller


def _wire(request: ElicitRequest | SampleRequest) -> dict[str, Any]:
    return request.model_dump(mode="json", by_alias=True, exclude_none=True)


_LEVEL_NAMES: dict[str, McpLogLevel] = {
    **{level: level for level in MCP_LOG_LEVELS},
    "warn": "warning",
    "fatal": "critical",
}


def _level(level: str) -> McpLogLevel:
    name = str(level).strip().lower()
    found = _LEVEL_NAMES.get(name)
    if found is None:
        raise ValueError(f"unknown log level {level!r}; use one of {', '.join(MCP_LOG_LEVELS)}")
    return found


_current_context: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar(
    "argentic_tools_context", default=None
)


def current_context() -> ToolContext | None:
    """Context of the call being served by the current task (None outside a call)."""
    return _current_context.get()


def set_current_context(context: ToolContext | None) -> contextvars.Token[ToolContext | None]:
    """Make ``context`` the context of the running call (used by the serving loop)."""
    return _current_context.set(context)
