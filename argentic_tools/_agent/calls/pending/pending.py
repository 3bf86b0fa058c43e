"""One call on the caller side: what was asked (CallSpec) and what waits (Pending)."""

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from ...._protocol.messages import CallContext, ToolResult
from ...._protocol.participation import ToolAskMessage, ToolLogMessage
from ...fleet.info import Entry
from ..participation.handlers import CallerHandlers
from .flow import Window
from .progress import CallWatch


class Taking(Protocol):
    """The caller's part in a pending call.

    Its :class:`~..participation.participation.Participation`.
    """

    def asked(self, message: ToolAskMessage) -> None:
        """A question of the tool came in."""

    def logged(self, message: ToolLogMessage) -> None:
        """A log record of the tool came in."""

    def abilities(self) -> list[str]:
        """What the task tells the tool its caller takes part in."""

    @property
    def heard(self) -> bool:
        """Whether the tool asked or logged anything yet."""

    async def flush(self) -> None:
        """Let the log records that came before the result reach the handler first."""

    def close(self) -> None:
        """The call is over."""

    def kept(self) -> list[dict[str, Any]] | None:
        """What was said, for the observation."""


class ToolGoneError(Exception):
    """The tool left the registry while a call waited for it."""


class UnsendableTaskError(Exception):
    """A call's task could not be encoded as JSON when its turn to be sent came."""


class Batch:
    """What the calls of one batch share: whether the batch is being cancelled.

    Cancelled, a batch's call only posts its TOOL_CANCEL and does not wait until it is
    out (a batch of 20,000 waited 20,000 times), and a call of the batch not sent yet
    is not sent any more, even before its own turn to end comes.
    """

    __slots__ = ("cancelling",)

    def __init__(self) -> None:
        self.cancelling = False


@dataclass(slots=True)
class CallSpec:
    """What the caller asked for: one call, before it is checked."""

    name: str
    """Tool name or id."""
    arguments: Any
    label: str | None
    """The caller's ``task_id_override``."""
    timeout: float | None
    """Seconds the caller waits in all (its ``timeout``, the manager's default, or a
    long call's ``max_duration``); None: no limit but the idle timeout."""
    call_id: str | None = None
    context: CallContext | None = None
    watch: CallWatch | None = None
    """Progress, idle timeout and streaming, for a long call."""
    traceparent: str | None = None
    """The caller's span, as W3C trace context for the task."""
    tracestate: str | None = None
    batch: "Batch | None" = None
    """The batch that runs the call, if any (one object that all its calls share)."""
    handlers: CallerHandlers | None = None
    """The caller's handlers for the tool's questions and log records (None: none)."""


@dataclass(slots=True)
class Pending:
    """A call from its check until its result: all a waiting call holds."""

    future: "asyncio.Future[ToolResult]"
    entry: Entry
    task_id: str
    arguments: Any
    """The arguments as checked (nulls for skipped optional parameters left out)."""
    spec: CallSpec
    """The call as the caller made it (its ids, context and trace context go in the task)."""
    timestamp: float
    """When the task was built (``time.time()``): its ``timestamp``, and with ``timeout``
    its ``deadline``."""
    window: Window | None = None
    """The tool instance's window while this call holds a slot in it."""
    published: bool = False
    """True from the moment the task may reach the tool (its publish has begun)."""
    sent_on: int = 0
    """Connection (``messager.connections``) the task was last published on; 0: not yet."""
    participation: Taking | None = None
    """The caller's handlers at work, for a call made with some."""
    journaled: bool = False
    """The call is in the manager's journal."""
    reattached: bool = False
    """The call was picked up from the journal after its caller's restart."""

    @property
    def timeout(self) -> float | None:
        """Seconds the caller waits in all (None: only an idle timeout applies)."""
        return self.spec.timeout

    @property
    def label(self) -> str | None:
        """The caller's ``task_id_override``: shown as the result's task id, never sent."""
        return self.spec.label

    @property
    def watch(self) -> CallWatch | None:
        """Progress, idle timeout and chunks of a long call."""
        return self.spec.watch

    @property
    def tool_id(self) -> str:
        """Id of the tool instance the task went to."""
        return self.entry.info.id

    @property
    def tool_name(self) -> str:
        """Name of the tool."""
        return self.entry.info.name

    @property
    def source(self) -> str | None:
        """Client id of the process serving the tool."""
        return self.entry.info.source
