"""The settings one call carries: :class:`CallKeywords` in, :class:`CallOptions` out.

``execute_tool`` and ``stream_tool`` take their settings as :class:`CallKeywords`,
``execute_tools`` and ``get_tool_results`` as :class:`BatchKeywords` (the settings every
call of the batch shares); :meth:`CallOptions.read` is the one place that reads them,
and a keyword it does not know is refused there, as a misspelt parameter would be. The
options become the call's :class:`~..pending.pending.CallSpec`: every setting is read, and a bad
one refused, before anything is sent. A new setting is one key here, one field of
:class:`CallOptions` and one line of :meth:`CallOptions.read`: every front door takes
it from there.

The deadline has one name on the caller's side, ``timeout`` (seconds the caller
waits in all), from the method's parameter to the pending call; on the wire the task
carries it as ``timeout_seconds`` and as an absolute ``deadline`` (see
``docs/protocol.md``).
"""

from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from ...._protocol.messages import CallContext, ToolCallRequest
from ..participation.handlers import CallerHandlers, HandlerKeywords, handlers_of
from ..pending.pending import Batch, CallSpec
from ..pending.progress import (
    BatchProgressCallback,
    ChunkSink,
    ProgressCallback,
    for_call,
    long_call,
)


class SharedKeywords(TypedDict, total=False):
    """The settings a single call, a batch and an adapter take alike, besides the handlers.

    Each front door's keywords combine these with :class:`HandlerKeywords` (the handlers
    one by one): :class:`CallKeywords`, :class:`BatchKeywords`, the adapters'
    ``SettingsKeywords``.
    """

    idle_timeout: float | None
    """For long work: the call times out after this many seconds without a progress
    report (each report starts it again) instead of after ``timeout``. Only for tools
    that report progress."""
    max_duration: float | None
    """With ``idle_timeout``: the absolute limit that no report extends (``timeout`` is
    used when this is None; neither: no limit)."""
    user_id: str | None
    """The user, put in the call's ``context``."""
    handlers: CallerHandlers | None
    """The call's handlers for its tool's questions and log records, as one value; each
    one the manager has stands in for one this lacks, and each given on its own
    (``on_elicit=``, ...) wins over this one's."""


class CallKeywords(SharedKeywords, HandlerKeywords, total=False):
    """The keyword settings of one call: ``execute_tool(name, arguments, **keywords)``.

    ``execute_tool`` and ``stream_tool`` take these after their positional parameters
    (``task_id_override`` and ``timeout``, as document 004 has them); type checkers and
    IDEs see each key. Every key is optional. The handlers (``on_elicit``,
    ``on_sample``, ``on_log``, ``on_roots``) may be given one by one or together as
    ``handlers``.
    """

    call_id: str | None
    """The caller's id for the call (an LLM's tool-call id), returned unchanged on the
    result and handed to the tool."""
    context: CallContext | None
    """Thread, trace and user ids, delivered to the tool."""
    on_progress: ProgressCallback | None
    """Called as ``on_progress(progress, total, message)`` for each progress report of
    the tool, in order, before the call returns; a plain function or a coroutine
    function."""
    thread_id: str | None
    """The conversation thread, put in ``context``; also what the policy checks."""
    trace_id: str | None
    """The trace, put in ``context``."""


class BatchKeywords(SharedKeywords, HandlerKeywords, total=False):
    """The settings every call of a batch shares: ``execute_tools(calls, **keywords)``.

    ``execute_tools`` takes ``thread_id`` and ``trace_id`` by position too;
    ``get_tool_results`` takes these beside its requests (a request's own ``timeout``
    wins).
    """

    timeout: float | None
    """Seconds each call waits; the manager's ``default_timeout`` when None."""
    on_progress: BatchProgressCallback | None
    """Called as ``on_progress(call_id, progress, total, message)`` for every call's
    reports."""


_CALL_KEYS = frozenset(CallKeywords.__optional_keys__)
_BATCH_KEYS = frozenset(BatchKeywords.__optional_keys__)


def refuse_unknown(keywords: Mapping[str, Any], known: frozenset[str]) -> None:
    """Refuse keywords that are not settings, as Python refuses a misspelt parameter.

    Raises:
        TypeError: Naming each unknown keyword.

    """
    if not keywords.keys() <= known:
        unknown = ", ".join(repr(key) for key in sorted(keywords.keys() - known))
        raise TypeError(f"unexpected keyword argument(s): {unknown}")


class CallOptions(NamedTuple):
    """How one call is made, as its caller asked: the parameters of ``execute_tool``.

    Immutable, and a named tuple rather than a frozen dataclass: one is built for every
    call, and a tuple is built in less than half the time. Pass the fields by name.
    """

    task_id_override: str | None = None
    """The caller's label for the call, returned as the result's ``task_id`` (never sent)."""
    timeout: float | None = None
    """Seconds to wait in all; the manager's ``default_timeout`` when None (and no
    ``idle_timeout``)."""
    call_id: str | None = None
    """The caller's id for the call, returned unchanged."""
    context: CallContext | None = None
    """Thread, trace and user ids, delivered to the tool."""
    on_progress: ProgressCallback | None = None
    """Called with each progress report, in order."""
    idle_timeout: float | None = None
    """Seconds without a progress report after which the call times out."""
    max_duration: float | None = None
    """With ``idle_timeout``: the absolute limit that no report extends."""
    handlers: CallerHandlers | None = None
    """The call's own handlers for its tool's questions and log records (None: the
    manager's)."""

    @classmethod
    def read(
        cls,
        keywords: CallKeywords,
        task_id_override: str | None = None,
        timeout: float | None = None,
    ) -> "CallOptions":
        """The options the keywords of one call ask for: the one place that reads them.

        Raises:
            TypeError: A keyword that is not a setting of a call (misspelt, say).

        """
        if not keywords:
            return cls(task_id_override, timeout)  # the usual case: nothing else to read
        refuse_unknown(keywords, _CALL_KEYS)
        return cls(
            task_id_override,
            timeout,
            keywords.get("call_id"),
            context_with(
                keywords.get("context"),
                keywords.get("thread_id"),
                keywords.get("trace_id"),
                keywords.get("user_id"),
            ),
            keywords.get("on_progress"),
            keywords.get("idle_timeout"),
            keywords.get("max_duration"),
            handlers_of(keywords, keywords.get("handlers")),
        )

    @classmethod
    def read_batch(
        cls, keywords: BatchKeywords, thread_id: str | None = None, trace_id: str | None = None
    ) -> "tuple[CallOptions, BatchProgressCallback | None]":
        """The options every call of a batch shares, and the batch's progress callback.

        :meth:`for_batch_call` (or :meth:`for_request`) makes each call's options of them.

        Raises:
            TypeError: A keyword that is not a setting of a batch.

        """
        refuse_unknown(keywords, _BATCH_KEYS)
        shared = cls(
            timeout=keywords.get("timeout"),
            context=context_with(None, thread_id, trace_id, keywords.get("user_id")),
            idle_timeout=keywords.get("idle_timeout"),
            max_duration=keywords.get("max_duration"),
            handlers=handlers_of(keywords, keywords.get("handlers")),
        )
        return shared, keywords.get("on_progress")

    def for_request(
        self, request: ToolCallRequest, on_progress: BatchProgressCallback | None
    ) -> "CallOptions":
        """These (a batch's) options for one request of ``get_tool_results``.

        The request's own ``timeout``, ``idle_timeout``, ``max_duration`` and
        ``context`` win over the batch's.
        """
        return self.for_batch_call(request.call_id, on_progress)._replace(
            timeout=_first(request.timeout, self.timeout),
            idle_timeout=_first(request.idle_timeout, self.idle_timeout),
            max_duration=_first(request.max_duration, self.max_duration),
            context=_first(request.context, self.context),
        )

    def for_batch_call(
        self, call_id: str | None, on_progress: BatchProgressCallback | None
    ) -> "CallOptions":
        """These options for one call of an ``execute_tools`` batch, with its id."""
        return self._replace(call_id=call_id, on_progress=for_call(on_progress, call_id))

    def keywords(self) -> dict[str, Any]:
        """The options after the label and timeout, as ``execute_tool``'s keyword arguments.

        ``execute_tool`` takes ``task_id_override`` and ``timeout`` by position (a
        subclass may name them otherwise): pass those two by position.
        """
        keywords: dict[str, Any] = {
            "call_id": self.call_id,
            "context": self.context,
            "on_progress": self.on_progress,
            "idle_timeout": self.idle_timeout,
            "max_duration": self.max_duration,
        }
        if self.handlers is not None:  # only then: an older override need not take them
            keywords.update(
                (name, handler)
                for name, handler in self.handlers._asdict().items()
                if handler is not None
            )
        return keywords

    def spec(
        self,
        name: str,
        arguments: Any,
        default_timeout: float | None,
        on_chunk: ChunkSink | None = None,
        batch: Batch | None = None,
        default_handlers: CallerHandlers | None = None,
    ) -> CallSpec:
        """One call of ``name`` with these options, before it is checked (``batch``: run by it).

        ``default_handlers`` (the manager's) stand in for each handler the call has not.

        Raises:
            ValueError: ``idle_timeout`` or ``max_duration`` is not a positive number.

        """
        watch = None
        timeout = default_timeout if self.timeout is None else self.timeout
        if (
            self.on_progress is not None
            or on_chunk is not None
            or self.idle_timeout is not None
            or self.max_duration is not None
        ):
            watch, timeout = long_call(
                self.on_progress,
                on_chunk,
                self.timeout,
                self.idle_timeout,
                self.max_duration,
                timeout,
            )
        handlers = self.handlers
        if default_handlers is not None and default_handlers.any:
            handlers = default_handlers if handlers is None else handlers.over(default_handlers)
        return CallSpec(
            name,
            arguments,
            self.task_id_override,
            timeout,
            self.call_id,
            self.context,
            watch,
            batch=batch,
            handlers=handlers if handlers is not None and handlers.any else None,
        )


def context_with(
    context: CallContext | None,
    thread_id: str | None,
    trace_id: str | None,
    user_id: str | None,
) -> CallContext | None:
    """``context`` with the ids given beside it (those win); None when there is nothing."""
    if thread_id is None and trace_id is None and user_id is None:
        return context  # the usual case, on every call: nothing to build
    ids = {
        key: value
        for key, value in (("thread_id", thread_id), ("trace_id", trace_id), ("user_id", user_id))
        if value is not None
    }
    if not ids:
        return context
    if context is None:
        return CallContext(**ids)
    return context.model_copy(update=ids)


def _first(own: Any, shared: Any) -> Any:
    return shared if own is None else own


def call_field(call: Any, name: str, alias: str) -> Any:
    """``name`` (or its ART spelling ``alias``) of a parsed tool call, object or mapping."""
    if isinstance(call, Mapping):
        return call.get(name, call.get(alias))
    return getattr(call, name, getattr(call, alias, None))
