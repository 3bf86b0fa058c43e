"""Wire messages about the fleet: registration, presence, statistics and liveness.

Tools register, are confirmed or refused, and unregister; a process's Last Will says it
went offline; a manager announces itself; a stats request is answered by every tool
process; a ping checks that one tool instance is alive. The messages of one call (task,
progress, chunks, cancellation, result) are in :mod:`.messages`.
"""

from typing import Any, Literal

from pydantic import Field, model_validator

from .messages import BaseMessage, WireModel


class ToolSpec(WireModel):
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
    holder: str | None = None
    """Client id of the process that holds the proposed id, when that is the reason
    (extension). A process that believed it held the id learns it no longer does."""
    retry_after: float | None = None
    """Not refused yet (extension): the proposed id is held by another process serving
    the same tool for the same broker user, a restart whose old process may be gone, and
    the manager is asking the holder whether it still answers. Within this many seconds
    it confirms the registration (the holder is retired) or refuses it for good; a
    process that heard nothing by then registers again. None: the refusal is final."""


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
    """Why: ``"unregistered"``, ``"offline"``, ``"replaced"``, or ``"silent"`` (extension:
    it answered no ping for a while; a process that reads this about its own tool id
    registers again)."""
    target: str | None = None
    """Client id of the process whose tool was removed, when it may still be running
    (extension): a holder retired because another process took over its id after it
    failed to answer a ping. That process must run no more tasks for the id."""


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


class ToolStatsEntry(WireModel):
    """What one tool instance has served since its process started."""

    tool_id: str
    tool_name: str
    calls: int = 0
    """Calls that ended."""
    errors: int = 0
    """Calls that failed: neither succeeded nor were cancelled by their caller."""
    cancelled: int = 0
    """Calls their caller cancelled, a caller's timeout included (extension): not errors.
    Older peers send no count and count these calls in ``errors``; read from them, the
    ``cancelled`` outcome is moved out of ``errors`` into this count."""
    outcomes: dict[str, int] = Field(default_factory=dict)
    """Calls by outcome: ``success``, ``cancelled`` or the error code."""
    p50_ms: float | None = None
    """Median duration of the recent calls (up to 2,048), from receipt to reply."""
    p99_ms: float | None = None
    """99th percentile of the same."""
    in_flight: int = 0
    """Calls being served now."""
    max_concurrency: int | None = None
    """Calls served at once at most (None: no limit)."""
    slowed: int = 0
    """Times a stream waited for its reader's credit (extension): its caller read more
    slowly than the tool produced, or stopped reading, and the tool was paused."""
    slowed_seconds: float = 0.0
    """Seconds those waits lasted in all (extension; a wait still going is not in it)."""
    paused: int = 0
    """Streams waiting for their reader's credit now (extension)."""

    @model_validator(mode="after")
    def _cancelled_apart(self) -> "ToolStatsEntry":
        if "cancelled" not in self.model_fields_set and self.outcomes.get("cancelled"):
            self.cancelled = self.outcomes["cancelled"]
            self.errors = max(0, self.errors - self.cancelled)
        return self


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
