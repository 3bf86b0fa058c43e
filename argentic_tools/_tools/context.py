"""The call a tool is serving: :class:`ToolContext`, and where the running call finds it."""

import contextvars
import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
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


_current_context: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar(
    "argentic_tools_context", default=None
)


def current_context() -> ToolContext | None:
    """Context of the call being served by the current task (None outside a call)."""
    return _current_context.get()


def set_current_context(context: ToolContext | None) -> contextvars.Token[ToolContext | None]:
    """Make ``context`` the context of the running call (used by the serving loop)."""
    return _current_context.set(context)
