"""The settings one call carries: :class:`CallOptions`.

``execute_tool``, ``stream_tool``, ``get_tool_results`` (from each
:class:`~argentic_tools.ToolCallRequest`) and ``execute_tools`` all turn what they are
given into one :class:`CallOptions`, and the options into the call's
:class:`~.pending.CallSpec`: every setting is read, and a bad one refused, before
anything is sent.

The deadline has one name on the caller's side, ``timeout`` (seconds the caller
waits in all), from the method's parameter to the pending call; on the wire the task
carries it as ``timeout_seconds`` and as an absolute ``deadline`` (see
``docs/protocol.md``).
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..._protocol.messages import CallContext, ToolCallRequest
from .handlers import CallerHandlers
from .pending import Batch, CallSpec
from .progress import BatchProgressCallback, ChunkSink, ProgressCallback, for_call, long_call


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
    def of_request(cls, request: ToolCallRequest) -> "CallOptions":
        """The options of one request of a ``get_tool_results`` batch."""
        return cls(
            timeout=request.timeout,
            call_id=request.call_id,
            context=request.context,
            on_progress=request.on_progress,
            idle_timeout=request.idle_timeout,
            max_duration=request.max_duration,
            handlers=CallerHandlers(
                request.on_elicit, request.on_sample, request.on_log, request.on_roots
            ),
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


def call_field(call: Any, name: str, alias: str) -> Any:
    """``name`` (or its ART spelling ``alias``) of a parsed tool call, object or mapping."""
    if isinstance(call, Mapping):
        return call.get(name, call.get(alias))
    return getattr(call, name, getattr(call, alias, None))
