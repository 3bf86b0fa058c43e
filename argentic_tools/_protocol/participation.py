"""The caller takes part in a call: a tool's questions, their answers, and its log records.

A running tool may ask its caller a question (:class:`ElicitRequest`, answered by an
:class:`ElicitResult`), borrow the caller's model (:class:`SampleRequest`, answered by a
:class:`SampleResult`), and send it log records (:class:`LogRecord`). Each shape is
MCP's own (``elicitation/create``, ``sampling/createMessage``,
``notifications/message``), camelCase on the wire, so a gateway hands it to an MCP
client unchanged and a bridge hands an MCP server's request to the bus unchanged.

On the wire (extension, protocol 4): the task says what its caller can answer
(``TaskMessage.caller_handles``); the tool asks with a ``TOOL_ASK`` on the caller's reply
topic and logs with ``TOOL_LOG`` there; the caller answers with a ``TOOL_ANSWER`` on the
tool's call topic, which the tool accepts only from the caller of that task. An ask has
its own id, chosen by the tool and unique within its task, so several questions of one
call, and questions of concurrent calls, never cross. Peers that know none of this
(argentic 0.16) ignore the messages and send no ``caller_handles``: a tool asking such a
caller gets :class:`~argentic_tools.AskNotSupportedError` at once.
"""

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field

from .content import ContentBlock, parse_block
from .messages import BaseMessage, WireModel

CallerAbility = Literal["elicit", "sample", "roots", "log"]
"""What a caller can take part in: answer questions, lend its model, name its roots, read
log records."""

CALLER_ABILITIES: tuple[CallerAbility, ...] = ("elicit", "sample", "roots", "log")
"""Every :data:`CallerAbility`, in a fixed order."""

AskKind = Literal["elicit", "sample", "roots"]
"""The kinds of question a tool asks (a log record needs no answer)."""

McpLogLevel = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""MCP's log levels (those of syslog, RFC 5424), least severe first."""

MCP_LOG_LEVELS: tuple[McpLogLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""Every :data:`McpLogLevel`, least severe first (a level's index is its severity)."""


class ElicitRequest(WireModel):
    """A question for the caller (a person, usually): MCP's ``elicitation/create`` params.

    ``requested_schema`` is a flat JSON Schema object whose properties are strings,
    numbers, integers, booleans or enums, as MCP restricts it. Fields of a newer MCP
    revision are kept and passed on unchanged.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    message: str
    """The question, for people."""
    requested_schema: dict[str, Any] = Field(alias="requestedSchema")
    """The answer's shape: ``{"type": "object", "properties": {...}, "required": [...]}``."""
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    """MCP's ``_meta``, passed through (``argentic/input_key`` names the question in a
    2026-07-28 ``input_required`` result)."""


class ElicitResult(WireModel):
    """The caller's answer to an :class:`ElicitRequest`: MCP's ``ElicitResult``.

    ``action`` is ``"accept"`` (with ``content`` matching the requested schema),
    ``"decline"`` (an explicit no) or ``"cancel"`` (dismissed without choosing).
    """

    action: Literal["accept", "decline", "cancel"]
    """What the person did."""
    content: dict[str, Any] | None = None
    """The answer, with ``accept`` only."""

    @property
    def accepted(self) -> bool:
        """True when the caller accepted and answered."""
        return self.action == "accept"

    @property
    def data(self) -> dict[str, Any]:
        """The answer's fields (empty unless accepted)."""
        return dict(self.content or {}) if self.accepted else {}


def _text_or_blocks(value: Any) -> Any:
    if isinstance(value, str):
        return {"type": "text", "text": value}
    if isinstance(value, list):
        return [parse_block(item) for item in value]
    return value


_Content = Annotated[ContentBlock | list[ContentBlock], BeforeValidator(_text_or_blocks)]
"""A block or several; a plain string is read as a text block."""


class SamplingMessage(WireModel):
    """One message of a conversation the tool asks the caller's model to continue."""

    role: Literal["user", "assistant"]
    """Who says it."""
    content: _Content
    """What is said: a text, image or audio block (or several)."""


class SampleRequest(WireModel):
    """A completion asked of the caller's model: MCP's ``sampling/createMessage`` params.

    Fields this version does not name (``tools``, ``toolChoice``, a newer revision's) are
    kept and passed on unchanged.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    messages: list[SamplingMessage]
    """The conversation so far."""
    max_tokens: int = Field(alias="maxTokens", ge=1)
    """Most tokens the completion may have."""
    system_prompt: str | None = Field(default=None, alias="systemPrompt")
    """A system prompt the caller may use."""
    temperature: float | None = None
    """Sampling temperature the tool would like."""
    stop_sequences: list[str] | None = Field(default=None, alias="stopSequences")
    """Where the completion should stop."""
    model_preferences: dict[str, Any] | None = Field(default=None, alias="modelPreferences")
    """MCP's model preferences (hints, cost, speed, intelligence priorities)."""
    include_context: Literal["none", "thisServer", "allServers"] | None = Field(
        default=None, alias="includeContext"
    )
    """Context from the caller's other conversations the tool would like included."""
    metadata: dict[str, Any] | None = None
    """Provider-specific metadata, passed through."""
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    """MCP's ``_meta``, passed through (``argentic/input_key`` names the question in a
    2026-07-28 ``input_required`` result)."""


class SampleResult(WireModel):
    """The caller's model's completion: MCP's ``CreateMessageResult``."""

    role: Literal["user", "assistant"] = "assistant"
    """Who says it (the model: ``assistant``)."""
    content: _Content
    """The completion: a text block usually."""
    model: str
    """The model that answered."""
    stop_reason: str | None = Field(default=None, alias="stopReason")
    """Why it stopped: ``endTurn``, ``stopSequence``, ``maxTokens`` or the provider's own."""

    @property
    def text(self) -> str:
        """The completion's text (its text blocks joined; empty when it has none)."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return "".join(getattr(block, "text", "") for block in blocks)


class Root(WireModel):
    """A directory or resource the caller lets tools work in: MCP's ``Root``."""

    uri: str
    """Where it is, a ``file://`` URI usually."""
    name: str | None = None
    """What to call it, for people."""


class RootsResult(WireModel):
    """The caller's answer to a ``roots`` question: MCP's ``ListRootsResult``."""

    roots: list[Root]
    """The caller's roots."""


class LogRecord(WireModel):
    """A log record a tool sends its caller, at one of MCP's levels."""

    level: McpLogLevel
    """How severe: ``debug`` ... ``emergency``."""
    message: str = ""
    """What happened, for people."""
    data: Any = None
    """Structured details, any JSON value."""
    logger: str | None = None
    """Which part of the tool logged it."""

    def mcp_data(self) -> Any:
        """The record as MCP's ``notifications/message`` ``data``.

        The message alone when there is no data, the data alone when there is no
        message (a bridged MCP server's records come back as they went), else both.
        """
        if self.data is None:
            return self.message
        if not self.message:
            return self.data
        return {"message": self.message, "data": self.data}

    @classmethod
    def from_mcp(cls, level: McpLogLevel, data: Any, logger: str | None = None) -> "LogRecord":
        """A record from MCP's ``notifications/message`` params (see :meth:`mcp_data`)."""
        if isinstance(data, str):
            return cls(level=level, message=data, logger=logger)
        return cls(level=level, data=data, logger=logger)


class ToolAskMessage(BaseMessage):
    """A tool's question to its caller (published on the caller's reply topic).

    Sent only for tasks whose ``caller_handles`` names the kind; the caller answers
    with a :class:`ToolAnswerMessage` of the same ``ask_id``.
    """

    type: Literal["TOOL_ASK"] = "TOOL_ASK"
    task_id: str
    """Task the question belongs to."""
    tool_id: str
    """Tool serving the task."""
    ask_id: str
    """The question's id, unique within its task."""
    kind: AskKind
    """``elicit`` (an :class:`ElicitRequest`), ``sample`` (a :class:`SampleRequest`) or
    ``roots`` (``{}``: MCP's ``roots/list``)."""
    request: dict[str, Any]
    """The question, in MCP's shape for its kind."""


class ToolAnswerMessage(BaseMessage):
    """The caller's answer to a :class:`ToolAskMessage` (published on the tool's call topic).

    Exactly one of ``result`` (MCP's ``ElicitResult`` or ``CreateMessageResult``) and
    ``error`` (why the caller could not answer). A tool accepts it only from the caller
    of the task, and only for a question it is waiting on.
    """

    type: Literal["TOOL_ANSWER"] = "TOOL_ANSWER"
    task_id: str
    """Task the question belongs to."""
    tool_id: str | None = None
    """Tool the task went to."""
    ask_id: str
    """The question answered."""
    result: dict[str, Any] | None = None
    """The answer, in MCP's shape for the question's kind (``ElicitResult``,
    ``CreateMessageResult``, ``ListRootsResult``)."""
    error: str | None = None
    """Why there is no answer (the caller's handler failed, or it has none)."""
    unsupported: bool = False
    """With ``error``: the caller has no handler for this kind of question."""


class ToolLogMessage(BaseMessage):
    """A log record for the caller (published on the caller's reply topic).

    Sent only for tasks whose ``caller_handles`` includes ``log``, rate-limited by the
    tool; ``dropped`` says how many records the limit left out since the previous one.
    """

    type: Literal["TOOL_LOG"] = "TOOL_LOG"
    task_id: str
    """Task the record belongs to."""
    tool_id: str
    """Tool serving the task."""
    seq: int = 0
    """Position of this record among the task's records."""
    record: LogRecord
    """The record."""
    dropped: int = 0
    """Records the rate limit left out just before this one."""
