"""Wire messages: pydantic v2 models, JSON only. Here: the base, and one call's messages.

The messages are those of Argentic's ToolManager protocol (a ``type`` string
discriminates them; tasks, results and errors all carry ``"TASK"``), extended
with optional fields that older peers ignore: a proposed ``tool_id`` on
registration, an absolute ``deadline`` and an execution ``context`` on tasks, a
``duration_ms`` and a structured ``error_code``/``details`` on results.

Receiving is tolerant of unknown extra fields (newer peers) and strict about
required ones; sending always produces complete messages. This module holds what every
message shares and the messages of one call (task, progress, chunks, cancellation,
result, error); :mod:`.fleet_messages` holds registration, presence, stats and
liveness, and :mod:`.parsing` the one entry point for received payloads.
"""

import time
import uuid
from enum import Enum
from typing import Any, Literal, NoReturn

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from .._errors import (
    ERROR_CODES,
    ToolCallError,
    ToolExecutionError,
)
from .content import ContentBlock, parse_blocks

PROTOCOL_VERSION = 4
"""Version of the extensions this package adds to the Argentic messages.

2 added reply topics (``reply_to``), registrations answered to one manager
(``MANAGER_ONLINE.inbox``), the tool's connection count on registrations, and
``TOOL_PING``/``TOOL_PONG``. 3 added streams paced by their reader: a task's
``stream_window`` and the caller's ``TOOL_CREDIT``. 4 added the caller taking part:
a task's ``caller_handles``, ``TOOL_ASK``/``TOOL_ANSWER`` and ``TOOL_LOG``."""

STREAM_CREDIT_PROTOCOL = 3
"""The first protocol version whose tools pace a stream by its reader (``stream_window``,
``TOOL_CREDIT``): a caller sends neither to older tools."""

DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024
"""Default limit for one MQTT payload, enforced on receive and on send (1 MiB)."""


def _new_id() -> str:
    return str(uuid.uuid4())


class TaskStatus(str, Enum):
    """Outcome of a task, as carried in the ``status`` field (lower case on the wire)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    ERROR = "error"
    SUCCESS = "success"
    TIMEOUT = "timeout"

    @classmethod
    def _missing_(cls, value: object) -> "TaskStatus | None":
        # Some peers and documents write statuses in upper case ("SUCCESS").
        if isinstance(value, str):
            lowered = value.lower()
            for member in cls:
                if member.value == lowered:
                    return member
        return None


SUCCESS_STATUSES = frozenset({TaskStatus.SUCCESS, TaskStatus.COMPLETED})


class WireModel(BaseModel):
    """Base of all wire models: unknown fields are ignored, enums serialise as values."""

    model_config = ConfigDict(extra="ignore", use_enum_values=False, populate_by_name=True)


class BaseMessage(WireModel):
    """Fields every message carries."""

    type: str
    """Message type; selects the model on receive."""
    source: str | None = None
    """MQTT client id of the sender."""
    timestamp: float = Field(default_factory=time.time)
    """Unix time at which the message was created."""
    message_id: str = Field(default_factory=_new_id)
    """Unique id of this message."""
    data: Any = None
    """Free-form payload some peers attach."""


class CallContext(WireModel):
    """Execution context that travels with a task and reaches the tool."""

    thread_id: str | None = None
    """Conversation thread the call belongs to."""
    trace_id: str | None = None
    """Trace id for correlating logs across processes."""
    user_id: str | None = None
    """User on whose behalf the agent calls the tool."""


class ToolCancelMessage(BaseMessage):
    """The caller gave up on a task (published on the tool's call topic)."""

    type: Literal["TOOL_CANCEL"] = "TOOL_CANCEL"
    task_id: str
    """Task to stop."""
    tool_id: str | None = None
    """Tool the task went to."""
    reason: str | None = None
    """Why, e.g. ``"timed out after 5 s"``."""


class ToolCreditMessage(BaseMessage):
    """How far the reader of a stream has read (published on the tool's call topic).

    Sent by the caller of a task that carries ``stream_window`` (extension): the tool
    may send chunk ``seq`` once ``seq < read + stream_window``. ``read`` only grows; a
    grant that arrives late or twice changes nothing. A tool accepts it only from the
    caller of the task, as it does a ``TOOL_CANCEL``.
    """

    type: Literal["TOOL_CREDIT"] = "TOOL_CREDIT"
    task_id: str
    """Task whose stream is read."""
    tool_id: str | None = None
    """Tool the task went to."""
    read: int = Field(ge=0)
    """Chunks the reader has taken so far (all the seqs below it)."""


class ToolProgressMessage(BaseMessage):
    """How far a running task has got (published on the tool's response topic).

    Sent only for tasks whose caller asked (``report_progress``), at most a few
    times a second however often the tool reports; Argentic peers never see one.
    """

    type: Literal["TOOL_PROGRESS"] = "TOOL_PROGRESS"
    task_id: str
    """Task the report is about."""
    tool_id: str
    """Tool serving the task."""
    seq: int = 0
    """Position of this report among the task's reports; older ones arriving late are
    dropped."""
    progress: float
    """Work done so far, in the tool's own unit."""
    total: float | None = None
    """Work in all, when known."""
    message: str | None = None
    """What the tool is doing, for people."""


class ToolPartialMessage(BaseMessage):
    """One chunk of a streamed result (published on the tool's response topic).

    Sent only for tasks whose caller streams (``stream``); the final result
    follows the last chunk and says how many there were.
    """

    type: Literal["TOOL_PARTIAL"] = "TOOL_PARTIAL"
    task_id: str
    """Task the chunk belongs to."""
    tool_id: str
    """Tool serving the task."""
    seq: int
    """Position of this chunk, from 0: the caller yields chunks in this order, once each."""
    chunk: Any = None
    """The chunk, any JSON value (for a chunk of blocks, their plain rendering)."""
    content: list[ContentBlock] | None = None
    """The chunk's content blocks, in MCP's shapes, when it is a block or a list of them
    (extension): a block alone when ``chunk`` is a string, a list when it is a list."""

    @field_validator("content", mode="before")
    @classmethod
    def _known_blocks(cls, value: Any) -> Any:
        return parse_blocks(value)


class TaskMessage(BaseMessage):
    """A call of a tool (published on ``{call_base}/{tool_id}``)."""

    type: Literal["TASK"] = "TASK"
    task_id: str = Field(default_factory=_new_id)
    """Correlates the task with its result; unique per call."""
    tool_id: str
    """Id of the called tool."""
    tool_name: str
    """Name of the called tool."""
    arguments: dict[str, Any] | None = None
    """Arguments, already validated against the tool's schema by the caller."""
    call_id: str | None = None
    """The caller's own id for this call (e.g. the LLM's tool-call id)."""
    timeout_seconds: float | None = None
    """Time the caller waits for the result."""
    deadline: float | None = None
    """Unix time after which the caller no longer waits (extension)."""
    context: CallContext | None = None
    """Execution context: thread, trace and user (extension)."""
    trace: dict[str, Any] | None = None
    """Argentic's trace context, passed through unchanged."""
    dry_run: bool = False
    """Argentic's dry-run flag, passed through unchanged."""
    approval_token: str | None = None
    """Argentic's approval token, passed through unchanged."""
    report_progress: bool | None = None
    """The caller wants TOOL_PROGRESS reports for this task (extension)."""
    stream: bool | None = None
    """The caller consumes TOOL_PARTIAL chunks as they come (extension)."""
    stream_window: int | None = Field(default=None, ge=1)
    """With ``stream``: the caller paces the stream by its reader (extension, protocol 3).
    The tool sends chunk ``seq`` only once ``seq < read + stream_window``, ``read`` being
    the latest ``TOOL_CREDIT`` of the caller (0 before any); until then the tool waits.
    Without it the tool sends as fast as the broker takes the chunks."""
    reattached: bool | None = None
    """The task is sent again by a manager that picked its call up from its journal after
    the caller's process restarted (extension; a tool runs a task id once either way)."""
    caller_handles: list[str] | None = None
    """What the caller takes part in (extension, protocol 4): ``elicit`` (it answers
    questions), ``sample`` (it lends its model), ``roots`` (it names the directories tools
    may work in), ``log`` (it reads log records). None or
    a missing kind: a tool asking gets ``AskNotSupportedError`` at once."""
    reply_to: str | None = None
    """Where the caller reads the result, progress and chunks: its own topic below the
    tool's response topic, ``{response_base}/{tool_id}/{inbox}`` (extension; without
    it, and for any other topic, the tool answers on ``{response_base}/{tool_id}``)."""
    traceparent: str | None = None
    """The caller's span as W3C trace context (extension): the tool's span is its child."""
    tracestate: str | None = None
    """W3C ``tracestate`` accompanying ``traceparent`` (extension)."""


class TaskResultMessage(TaskMessage):
    """The result of a task (published on ``{response_base}/{tool_id}``)."""

    status: TaskStatus
    """``success`` for a successful call."""
    result: Any = None
    """What the tool returned: a plain JSON value (for blocks without a value, their plain
    rendering: a text's text, a short description of an image)."""
    content: list[ContentBlock] | None = None
    """The tool's content blocks, in MCP's shapes (extension; None when it returned
    none). Blocks of a type this version does not know are left out."""
    error: str | None = None
    """Unused for successful results."""
    duration_ms: float | None = None
    """Time from sending the task to receiving this result, in milliseconds."""
    chunks: int | None = None
    """How many TOOL_PARTIAL chunks the tool sent before this result (extension)."""
    result_in_chunks: bool | None = None
    """The result is the list of the chunks already sent, not repeated here (extension)."""

    @field_validator("status", mode="before")
    @classmethod
    def _status_any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("content", mode="before")
    @classmethod
    def _known_blocks(cls, value: Any) -> Any:
        return parse_blocks(value)

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.status in SUCCESS_STATUSES

    def raise_for_status(self) -> "TaskResultMessage":
        """Return ``self`` when the call succeeded; results never raise."""
        return self


class TaskErrorMessage(TaskMessage):
    """A failed task: the tool failed, timed out, went away, or was never called."""

    status: TaskStatus = TaskStatus.ERROR
    """``failed``, ``error``, ``timeout`` or ``cancelled``."""
    error: str
    """A message that names the tool and the cause."""
    traceback: str | None = None
    """The tool's traceback, only when the tool runs in debug mode."""
    error_code: str | None = None
    """Machine-readable cause: ``not_found``, ``invalid_arguments``, ``timeout``, ..."""
    details: Any = None
    """Structured details (for validation errors, one entry per problem)."""
    duration_ms: float | None = None
    """Time from sending the task to this outcome, in milliseconds."""
    result: Any = None
    """Always empty for errors; present so both result types read alike."""
    content: list[ContentBlock] | None = None
    """Always None for errors; present so both result types read alike."""

    @field_validator("status", mode="before")
    @classmethod
    def _status_any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @property
    def ok(self) -> bool:
        """Always False: this call failed."""
        return False

    def to_exception(self) -> ToolCallError:
        """Build the typed exception this error stands for (see ``argentic_tools._errors``)."""
        code = self.error_code or (
            "timeout" if self.status == TaskStatus.TIMEOUT else "execution_error"
        )
        cls = ERROR_CODES.get(code, ToolExecutionError)
        return cls(self.error, tool_name=self.tool_name, task_id=self.task_id, details=self.details)

    def raise_for_status(self) -> NoReturn:
        """Raise the typed :class:`~argentic_tools.ToolCallError` for this failure."""
        raise self.to_exception()


ToolResult = TaskResultMessage | TaskErrorMessage
"""What ``execute_tool`` returns: a result on success, an error message otherwise."""


class ToolCallRequest(WireModel):
    """One call in a batch for ``get_tool_results``: data only.

    What a caller does with the calls' progress reports, questions and log records is
    given once, to the batch (``get_tool_results(requests, on_progress=..., on_elicit=...)``)
    or to the manager, never to a request.
    """

    tool_id: str
    """Name or id of the tool to call."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments for the tool."""
    call_id: str | None = None
    """The caller's id for this call, returned on its result (the task gets a fresh id)."""
    timeout: float | None = None
    """Seconds to wait for this call; the batch's (or the manager's default) when None."""
    context: CallContext | None = None
    """Execution context for this call."""
    idle_timeout: float | None = None
    """Seconds without progress after which this call times out (see ``execute_tool``)."""
    max_duration: float | None = None
    """Absolute limit for this call with ``idle_timeout``."""

    @model_validator(mode="before")
    @classmethod
    def _no_callables(cls, data: Any) -> Any:
        """Refuse the handlers a request once carried: given here they would do nothing."""
        if isinstance(data, dict):
            moved = sorted(name for name in _MOVED_TO_THE_BATCH if data.get(name) is not None)
            if moved:
                raise ValueError(
                    f"ToolCallRequest holds data only: give {', '.join(moved)} to "
                    "get_tool_results(requests, ...) or to the ToolManager instead"
                )
        return data


_MOVED_TO_THE_BATCH = ("on_progress", "on_elicit", "on_sample", "on_log", "on_roots")


def encode(message: BaseMessage) -> bytes:
    """Serialise a message to compact JSON bytes (unset optional fields omitted)."""
    return message.__pydantic_serializer__.to_json(message, exclude_none=True)
