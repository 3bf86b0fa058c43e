"""How a caller takes part in its calls: the handlers for a tool's questions and log records.

A :class:`CallerHandlers` holds them as one value, given once to the ``ToolManager``
(for every call) or to one call (``handlers=``, which wins handler by handler); each
may also be given on its own under its name (:class:`HandlerKeywords`), by the same
front doors. The four handlers:

- ``on_elicit(request, call)``: a tool asks a question (:class:`ElicitRequest`);
  return an :class:`ElicitResult` (``accept`` with the answer, ``decline`` or
  ``cancel``), or the same as a mapping in MCP's shape.
- ``on_sample(request, call)``: a tool asks for a completion of the caller's model
  (:class:`SampleRequest`); return a :class:`SampleResult` (or its MCP mapping).
- ``on_roots(call)``: a tool asks which directories it may work in; return the
  caller's :class:`Root` list (or MCP's ``{"roots": [...]}``).
- ``on_log(record, call)``: a tool logged something (:class:`LogRecord`).

Each may be a plain function or a coroutine function; ``call`` says which call it is
about (:class:`CallRef`). A handler that raises answers the tool with an error (its
message, not its traceback); the tool gets :class:`~argentic_tools.AskError`. A call
given no handler for a kind tells the tool so in its task, and a tool that asks anyway
gets :class:`~argentic_tools.AskNotSupportedError` at once.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

from ...._protocol.messages import CallContext
from ...._protocol.participation import (
    CallerAbility,
    ElicitRequest,
    ElicitResult,
    LogRecord,
    Root,
    RootsResult,
    SampleRequest,
    SampleResult,
)


class CallRef(NamedTuple):
    """Which call a question or log record comes from."""

    tool_name: str
    """Name of the tool asking."""
    tool_id: str
    """Id of the tool instance serving the call."""
    task_id: str
    """The call's task id as the caller sees it (its ``task_id_override`` when given)."""
    call_id: str | None
    """The caller's id for the call (e.g. the LLM's tool-call id)."""
    context: CallContext | None
    """Thread, trace and user ids of the call."""


ElicitHandler = Callable[
    [ElicitRequest, CallRef],
    ElicitResult | Mapping[str, Any] | Awaitable[ElicitResult | Mapping[str, Any]],
]
"""``on_elicit(request, call)``: the caller's answer to a tool's question."""

SampleHandler = Callable[
    [SampleRequest, CallRef],
    SampleResult | Mapping[str, Any] | Awaitable[SampleResult | Mapping[str, Any]],
]
"""``on_sample(request, call)``: a completion of the caller's model for a tool."""

RootsHandler = Callable[
    [CallRef],
    Sequence[Root]
    | RootsResult
    | Mapping[str, Any]
    | Awaitable[Sequence[Root] | RootsResult | Mapping[str, Any]],
]
"""``on_roots(call)``: the directories the caller lets a tool work in."""

LogHandler = Callable[[LogRecord, CallRef], Awaitable[None] | None]
"""``on_log(record, call)``: a log record a tool sent during a call."""


class CallerHandlers(NamedTuple):
    """The handlers of one call (each None when the caller has none)."""

    on_elicit: ElicitHandler | None = None
    on_sample: SampleHandler | None = None
    on_log: LogHandler | None = None
    on_roots: RootsHandler | None = None

    def abilities(self) -> list[CallerAbility]:
        """What these handlers let the caller take part in, for the task's ``caller_handles``."""
        abilities: list[CallerAbility] = []
        if self.on_elicit is not None:
            abilities.append("elicit")
        if self.on_sample is not None:
            abilities.append("sample")
        if self.on_roots is not None:
            abilities.append("roots")
        if self.on_log is not None:
            abilities.append("log")
        return abilities

    def over(self, defaults: "CallerHandlers") -> "CallerHandlers":
        """These handlers, each falling back to ``defaults``' (the manager's) when None."""
        return CallerHandlers(
            self.on_elicit if self.on_elicit is not None else defaults.on_elicit,
            self.on_sample if self.on_sample is not None else defaults.on_sample,
            self.on_log if self.on_log is not None else defaults.on_log,
            self.on_roots if self.on_roots is not None else defaults.on_roots,
        )

    @property
    def any(self) -> bool:
        """True when there is at least one handler."""
        return (
            self.on_elicit is not None
            or self.on_sample is not None
            or self.on_log is not None
            or self.on_roots is not None
        )


NO_HANDLERS = CallerHandlers()
"""No handler at all (immutable, so one serves every default)."""


class HandlerKeywords(TypedDict, total=False):
    """The handlers as keywords, one by one: what ``handlers=`` takes as one value.

    Every front door that takes handlers (``ToolManager``, ``execute_tool``,
    ``stream_tool``, the batches, the framework adapters) accepts these keywords; each
    given one wins over the same handler of a ``handlers=`` given beside it.
    """

    on_elicit: ElicitHandler | None
    """Answers the tool's questions (``on_elicit(request, call)`` -> :class:`ElicitResult`);
    without one, a tool that asks fails at once."""
    on_sample: SampleHandler | None
    """Lends the caller's model (``on_sample(request, call)`` -> :class:`SampleResult`)."""
    on_log: LogHandler | None
    """Receives the tool's log records (``on_log(record, call)``)."""
    on_roots: RootsHandler | None
    """Names the caller's roots (``on_roots(call)``)."""


HANDLER_KEYS = frozenset(HandlerKeywords.__optional_keys__)
"""The handlers' keywords: ``on_elicit``, ``on_sample``, ``on_log``, ``on_roots``."""


def handlers_of(
    keywords: "HandlerKeywords | Mapping[str, Any]", handlers: CallerHandlers | None = None
) -> CallerHandlers | None:
    """``handlers`` with the handlers given one by one in ``keywords`` over it.

    None when there is none at all (the common case: no tuple is built).
    """
    on_elicit = keywords.get("on_elicit")
    on_sample = keywords.get("on_sample")
    on_log = keywords.get("on_log")
    on_roots = keywords.get("on_roots")
    if on_elicit is None and on_sample is None and on_log is None and on_roots is None:
        return handlers if handlers is not None and handlers.any else None
    own = CallerHandlers(on_elicit, on_sample, on_log, on_roots)
    return own if handlers is None else own.over(handlers)
