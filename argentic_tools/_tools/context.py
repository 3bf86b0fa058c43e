"""The call a tool is serving: :class:`ToolContext`, and where the running call finds it."""

import contextvars
import dataclasses
from typing import Any, ClassVar

from .control import REPORTED, CallControl, Reported


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


_current_context: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar(
    "argentic_tools_context", default=None
)


def current_context() -> ToolContext | None:
    """Context of the call being served by the current task (None outside a call)."""
    return _current_context.get()


def set_current_context(context: ToolContext | None) -> contextvars.Token[ToolContext | None]:
    """Make ``context`` the context of the running call (used by the serving loop)."""
    return _current_context.set(context)
