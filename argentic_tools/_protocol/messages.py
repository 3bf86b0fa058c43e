"""Wire messages: pydantic v2 models, JSON only, one parse entry point.

The messages are those of Argentic's ToolManager protocol (a ``type`` string
discriminates them; tasks, results and errors all carry ``"TASK"``), extended
with optional fields that older peers ignore: a proposed ``tool_id`` on
registration, an absolute ``deadline`` and an execution ``context`` on tasks, a
``duration_ms`` and a structured ``error_code``/``details`` on results.

Receiving is tolerant of unknown extra fields (newer peers) and strict about
required ones; sending always produces complete messages.
"""

import time
import uuid
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal, NoReturn, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from .._errors import (
    ERROR_CODES,
    PayloadTooLargeError,
    ProtocolError,
    ToolExecutionError,
)

PROTOCOL_VERSION = 2
"""Version of the extensions this package adds to the Argentic messages.

2 added reply topics (``reply_to``), registrations answered to one manager
(``MANAGER_ONLINE.inbox``), the tool's connection count on registrations, and
``TOOL_PING``/``TOOL_PONG``."""

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


class _Wire(BaseModel):
    """Base of all wire models: unknown fields are ignored, enums serialise as values."""

    model_config = ConfigDict(extra="ignore", use_enum_values=False, populate_by_name=True)


class BaseMessage(_Wire):
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


class CallContext(_Wire):
    """Execution context that travels with a task and reaches the tool."""

    thread_id: str | None = None
    """Conversation thread the call belongs to."""
    trace_id: str | None = None
    """Trace id for correlating logs across processes."""
    user_id: str | None = None
    """User on whose behalf the agent calls the tool."""


class ToolSpec(_Wire):
    """Structured description of a tool (Argentic's ``tool_spec``)."""

    name: str
    """Tool name, unique per registering process."""
    description: str = ""
    """What the tool does; this is what the LLM reads."""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON Schema of the arguments object."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema of a successful result, when the tool declares one."""
    tags: list[str] = Field(default_factory=list)
    """Discovery tags."""
    examples: list[dict[str, Any]] = Field(default_factory=list)
    """Example calls: ``{"input": {...}, "output": ...}``."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Implementation metadata, e.g. ``max_concurrency``."""


class RegisterToolMessage(BaseMessage):
    """A tool asks to be registered (published on the register topic)."""

    type: Literal["REGISTER_TOOL"] = "REGISTER_TOOL"
    tool_name: str = ""
    """Name of the tool."""
    tool_manual: str = ""
    """Description of the tool for the LLM."""
    tool_api: str = "{}"
    """JSON Schema of the arguments, as a JSON string."""
    tool_spec: ToolSpec | None = None
    """Structured description; newer peers send it alongside the legacy fields."""
    tool_id: str | None = None
    """Id the tool proposes, already subscribed to its call topic (extension)."""
    protocol: int | None = None
    """Extension protocol version of the sender, absent for plain Argentic peers."""
    connection: int | None = None
    """How many times the tool's process has connected to the broker (extension): a
    higher count than before means it reconnected and may have lost tasks sent to it
    meanwhile, so managers send their pending tasks to it again."""
    confirmed: bool | None = None
    """The tool needs no confirmation (extension): a manager confirmed this id before,
    or the id is the tool's own and it is serving already; no manager answers it then."""

    @model_validator(mode="after")
    def _require_a_name(self) -> "RegisterToolMessage":
        if not self.tool_name:
            if self.tool_spec is None or not self.tool_spec.name:
                raise ValueError("tool_name is required")
            self.tool_name = self.tool_spec.name
        if not self.tool_manual and self.tool_spec is not None:
            self.tool_manual = self.tool_spec.description
        return self


class ToolRegisteredMessage(BaseMessage):
    """The manager confirms a registration (published on the status topic)."""

    type: Literal["TOOL_REGISTERED"] = "TOOL_REGISTERED"
    tool_id: str
    """Id under which the tool is now callable."""
    tool_name: str
    """Name of the registered tool."""
    target: str | None = None
    """Client id of the process that registered the tool (extension)."""


class ToolRegistrationErrorMessage(BaseMessage):
    """The manager refuses a registration (published on the status topic)."""

    type: Literal["TOOL_REGISTRATION_ERROR"] = "TOOL_REGISTRATION_ERROR"
    tool_name: str
    """Name from the refused registration."""
    error: str
    """Why the registration was refused."""
    tool_id: str | None = None
    """Proposed id from the refused registration, if any."""
    target: str | None = None
    """Client id of the process that asked."""


class UnregisterToolMessage(BaseMessage):
    """A tool leaves (published on the register topic)."""

    type: Literal["UNREGISTER_TOOL"] = "UNREGISTER_TOOL"
    tool_id: str
    """Id of the tool to remove."""


class ToolUnregisteredMessage(BaseMessage):
    """The manager removed a tool (published on the status topic)."""

    type: Literal["TOOL_UNREGISTERED"] = "TOOL_UNREGISTERED"
    tool_id: str
    """Id of the removed tool."""
    tool_name: str | None = None
    """Name of the removed tool."""
    reason: str | None = None
    """Why: ``"unregistered"`` or ``"offline"``."""


class ClientOfflineMessage(BaseMessage):
    """A process is gone: its MQTT Last Will, or sent on a clean shutdown."""

    type: Literal["CLIENT_OFFLINE"] = "CLIENT_OFFLINE"
    source: str
    """Client id of the process that went away."""


class ManagerOnlineMessage(BaseMessage):
    """A manager (re)connected; live tools answer by registering again."""

    type: Literal["MANAGER_ONLINE"] = "MANAGER_ONLINE"
    inbox: str | None = None
    """The manager's own topic level (extension): tools that know it send their
    registrations to ``{register topic}/{inbox}`` for this manager alone, instead of to
    every manager on the shared topic."""


class StatsRequestMessage(BaseMessage):
    """Every tool process: say what you have served (on the status topic; extension).

    Each process answers once with TOOL_STATS on a reply topic of one of its tools,
    ``{response_base}/{tool_id}/{inbox}``; no manager is needed in the loop.
    """

    type: Literal["STATS_REQUEST"] = "STATS_REQUEST"
    inbox: str
    """The asker's own topic level."""


class ToolStatsEntry(_Wire):
    """What one tool instance has served since its process started."""

    tool_id: str
    tool_name: str
    calls: int = 0
    """Calls that ended."""
    errors: int = 0
    """Calls that did not succeed."""
    outcomes: dict[str, int] = Field(default_factory=dict)
    """Calls by outcome: ``success`` or the error code."""
    p50_ms: float | None = None
    """Median duration of the recent calls (up to 2,048), from receipt to reply."""
    p99_ms: float | None = None
    """99th percentile of the same."""
    in_flight: int = 0
    """Calls being served now."""
    max_concurrency: int | None = None
    """Calls served at once at most (None: no limit)."""


class ToolStatsMessage(BaseMessage):
    """One tool process's answer to STATS_REQUEST (extension)."""

    type: Literal["TOOL_STATS"] = "TOOL_STATS"
    host: str = ""
    """Host name of the process."""
    pid: int = 0
    """Process id."""
    version: str = ""
    """argentic-tools version of the process."""
    uptime_seconds: float = 0.0
    """Seconds since the process started serving."""
    tools: list[ToolStatsEntry] = Field(default_factory=list)
    """Each tool the process serves."""


class ToolPingMessage(BaseMessage):
    """Is this tool instance alive? (published on its call topic; extension).

    A manager sends it to an instance that missed a deadline; the instance answers
    with TOOL_PONG on ``reply_to``. Sent only to tools that declare a protocol version.
    """

    type: Literal["TOOL_PING"] = "TOOL_PING"
    tool_id: str
    """Instance asked."""
    reply_to: str | None = None
    """Where to answer (checked like a task's ``reply_to``)."""


class ToolPongMessage(BaseMessage):
    """A tool instance is alive and reading its call topic (answer to TOOL_PING)."""

    type: Literal["TOOL_PONG"] = "TOOL_PONG"
    tool_id: str
    """Instance answering."""
    in_flight: int = 0
    """Tasks it is running."""


class ToolCancelMessage(BaseMessage):
    """The caller gave up on a task (published on the tool's call topic)."""

    type: Literal["TOOL_CANCEL"] = "TOOL_CANCEL"
    task_id: str
    """Task to stop."""
    tool_id: str | None = None
    """Tool the task went to."""
    reason: str | None = None
    """Why, e.g. ``"timed out after 5 s"``."""


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
    """The chunk, any JSON value."""


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
    """What the tool returned."""
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

    @field_validator("status", mode="before")
    @classmethod
    def _status_any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @property
    def ok(self) -> bool:
        """Always False: this call failed."""
        return False

    def to_exception(self) -> ToolExecutionError:
        """Build the typed exception this error stands for (see ``argentic_tools._errors``)."""
        code = self.error_code or (
            "timeout" if self.status == TaskStatus.TIMEOUT else "execution_error"
        )
        cls = ERROR_CODES.get(code, ToolExecutionError)
        exc = cls(self.error, tool_name=self.tool_name, task_id=self.task_id, details=self.details)
        return exc  # type: ignore[return-value]

    def raise_for_status(self) -> NoReturn:
        """Raise the typed :class:`~argentic_tools.ToolCallError` for this failure."""
        raise self.to_exception()


ToolResult = TaskResultMessage | TaskErrorMessage
"""What ``execute_tool`` returns: a result on success, an error message otherwise."""


class ToolCallRequest(_Wire):
    """One call in a batch for ``get_tool_results``."""

    tool_id: str
    """Name or id of the tool to call."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments for the tool."""
    call_id: str | None = None
    """The caller's id for this call; also used as the task id when given."""
    timeout: float | None = None
    """Seconds to wait for this call; the manager's default when None."""
    context: CallContext | None = None
    """Execution context for this call."""
    on_progress: Callable[..., Any] | None = Field(default=None, exclude=True)
    """Called as ``on_progress(progress, total, message)`` for this call's reports."""
    idle_timeout: float | None = None
    """Seconds without progress after which this call times out (see ``execute_tool``)."""
    max_duration: float | None = None
    """Absolute limit for this call with ``idle_timeout``."""


def _discriminate(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        value = value.__dict__
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind == "TASK":
        if "status" not in value:
            return "TASK"
        status = value.get("status")
        if isinstance(status, str) and status.lower() in ("success", "completed"):
            return "TASK_RESULT"
        return "TASK_ERROR" if isinstance(value.get("error"), str) else "TASK_RESULT"
    return kind if isinstance(kind, str) else None


AnyMessage = Annotated[
    Union[  # noqa: UP007 - tagged members read best as a Union
        Annotated[RegisterToolMessage, Tag("REGISTER_TOOL")],
        Annotated[ToolRegisteredMessage, Tag("TOOL_REGISTERED")],
        Annotated[ToolRegistrationErrorMessage, Tag("TOOL_REGISTRATION_ERROR")],
        Annotated[UnregisterToolMessage, Tag("UNREGISTER_TOOL")],
        Annotated[ToolUnregisteredMessage, Tag("TOOL_UNREGISTERED")],
        Annotated[ClientOfflineMessage, Tag("CLIENT_OFFLINE")],
        Annotated[ManagerOnlineMessage, Tag("MANAGER_ONLINE")],
        Annotated[StatsRequestMessage, Tag("STATS_REQUEST")],
        Annotated[ToolStatsMessage, Tag("TOOL_STATS")],
        Annotated[ToolPingMessage, Tag("TOOL_PING")],
        Annotated[ToolPongMessage, Tag("TOOL_PONG")],
        Annotated[ToolCancelMessage, Tag("TOOL_CANCEL")],
        Annotated[ToolProgressMessage, Tag("TOOL_PROGRESS")],
        Annotated[ToolPartialMessage, Tag("TOOL_PARTIAL")],
        Annotated[TaskMessage, Tag("TASK")],
        Annotated[TaskResultMessage, Tag("TASK_RESULT")],
        Annotated[TaskErrorMessage, Tag("TASK_ERROR")],
    ],
    Discriminator(_discriminate),
]
_ADAPTER: TypeAdapter[AnyMessage] = TypeAdapter(AnyMessage)


def parse_message(payload: bytes | str, max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> BaseMessage:
    """Parse one MQTT payload into its message model.

    Args:
        payload: The raw payload (UTF-8 JSON).
        max_bytes: Payloads longer than this are refused before parsing.

    Returns:
        The model selected by the payload's ``type`` (and, for ``"TASK"``, by
        whether it carries a status and an error).

    Raises:
        PayloadTooLargeError: The payload is longer than ``max_bytes``.
        ProtocolError: The payload is not JSON, not an object, has an unknown
            type, or lacks a required field; the message says which.

    """
    if len(payload) > max_bytes:
        raise PayloadTooLargeError(f"payload of {len(payload)} bytes exceeds {max_bytes} bytes")
    try:
        message: BaseMessage = _ADAPTER.validate_json(payload)
    except PydanticValidationError as exc:
        raise ProtocolError(_summarise(exc)) from None
    return message


def _summarise(exc: PydanticValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    kind = first["type"]
    where = ".".join(str(part) for part in first["loc"])
    if kind == "json_invalid":
        return f"not valid JSON ({first['msg']})"
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        return "unknown or missing message type"
    if kind == "model_attributes_type" or kind == "model_type":
        return "payload is not a JSON object"
    return f"{where or 'message'}: {first['msg']}"


def encode(message: BaseMessage) -> bytes:
    """Serialise a message to compact JSON bytes (unset optional fields omitted)."""
    return message.__pydantic_serializer__.to_json(message, exclude_none=True)
