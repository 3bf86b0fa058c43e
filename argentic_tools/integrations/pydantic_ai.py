"""The fleet as a PydanticAI toolset (``pydantic_ai``; the ``[pydantic-ai]`` extra).

:class:`FleetToolset` is an ``AbstractToolset`` over a :class:`~argentic_tools.ToolManager`:

- **The registry, live.** ``get_tools`` reads the registry at every step of every run:
  a tool that joins is offered from the next step, one that leaves (or that the policy
  turns off for the run's thread) is no longer offered.
- **Schemas.** The name is the provider-safe spelling (``Email Sender`` is
  ``Email_Sender``), the schema the tool's own; PydanticAI decides strict mode per
  provider (``ToolDefinition.strict`` left to it: OpenAI uses it when the schema is
  strict-compatible). The manager validates the arguments, and reads a null the model
  sends for an optional parameter as its default.
- **Errors.** Invalid arguments raise ``ModelRetry`` (the model corrects its call, within
  the tool's retry budget); any other failure (the tool failed, timed out, went offline,
  was refused by the policy) raises ``ToolFailed``: the model sees it and adapts.
- **Progress, chunks and log records** go into the run's own event stream, as the custom
  events :class:`FleetProgressEvent`, :class:`FleetChunkEvent` and :class:`FleetLogEvent`
  (``RunContext.emit``): ``event_stream_handler``, ``run_stream_events``, ``iter`` and the
  UI adapters see them, attributed to the tool call.
- **Cancellation.** Cancelling the run's task cancels the call at the tool.
- **Content blocks** become ``BinaryImage`` (images), ``BinaryContent`` (audio, binary
  resources) and text (text blocks, text resources, a link's rendering), returned as the
  tool's result, which PydanticAI sends to the model natively.
- **Human in the loop.** ``needs_approval`` raises ``ApprovalRequired`` before a call not
  yet approved: the run ends with ``DeferredToolRequests``, and a run given
  ``DeferredToolResults`` approving it makes the call. A question a tool asks while it
  runs cannot be deferred (the call is under way): it goes to ``on_elicit`` (and
  ``on_sample``, ``on_roots``); log records go to ``on_log`` as well as the stream.
- **Thread and trace ids**: the thread is the one given here, else the run's
  ``conversation_id``; the trace is the run's ``run_id``; the call's id is the model's
  tool-call id.
"""

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Unpack

from pydantic_ai import (
    ApprovalRequired,
    BinaryContent,
    BinaryImage,
    CustomEvent,
    ModelRetry,
    RunContext,
    ToolDefinition,
    ToolFailed,
)
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from .._agent.calls.participation.handlers import CallerHandlers, CallRef
from .._agent.manager import ToolManager
from .._protocol.content import BLOCK_TYPES, Audio, EmbeddedResource, Image, Text, plain
from .._protocol.participation import LogRecord
from ._shared import (
    Approval,
    CallSettings,
    RunSide,
    SettingsKeywords,
    approves,
    correctable,
    failure_text,
    listed,
    maybe_await,
    result_parts,
    run_call,
)

_ARGUMENTS = SchemaValidator(
    core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)
"""PydanticAI's check of the arguments: an object (the manager checks them against the
tool's schema, and says what is wrong)."""
_TOOL_KEY = "argentic_tools.tool"
"""Where a tool definition's metadata keeps the registered name."""
_APPROVAL_KEY = "argentic_tools.needs_approval"
"""Where it says whether each call waits for a person's approval."""


@dataclass(kw_only=True)
class FleetProgressEvent(CustomEvent, name="argentic_tools.progress"):
    """A progress report of a fleet tool's call (``tool_call_id`` says which)."""

    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(kw_only=True)
class FleetChunkEvent(CustomEvent, name="argentic_tools.chunk"):
    """A chunk a fleet tool streamed, in order (the tool's result holds them all)."""

    chunk: Any


@dataclass(kw_only=True)
class FleetLogEvent(CustomEvent, name="argentic_tools.log"):
    """A log record a fleet tool sent while it ran."""

    level: str
    message: str | None = None
    value: Any = None
    """The record's data (``data`` names the envelope of PydanticAI's events)."""
    logger: str | None = None


class FleetToolset(AbstractToolset[Any]):
    """The tools of a :class:`~argentic_tools.ToolManager` as a PydanticAI toolset.

    Args:
        manager: An initialised manager.
        id: The toolset's id among the agent's toolsets.
        thread_id: The conversation thread the policy is checked for and each call
            carries; None: the run's ``conversation_id``.
        tags: Only tools carrying all of these.
        max_retries: How often the model may correct a call's arguments (the agent's
            retries when None).
        needs_approval: Tools that wait for a person's approval before each call
            (deferred tools: ``DeferredToolRequests``).
        **settings: For each call, as :meth:`~argentic_tools.ToolManager.execute_tool`
            takes them (:class:`SettingsKeywords`): ``timeout``, ``idle_timeout``,
            ``max_duration``, ``user_id``, and the handlers for a tool's questions and
            log records while it runs (``handlers``, or ``on_elicit``, ``on_sample``,
            ``on_log``, ``on_roots``; log records also reach the run's stream).

    Example:
        >>> agent = Agent(model, toolsets=[FleetToolset(manager)])  # doctest: +SKIP

    """

    def __init__(
        self,
        manager: ToolManager,
        *,
        id: str = "argentic-tools",
        thread_id: str | None = None,
        tags: Iterable[str] | None = None,
        max_retries: int | None = None,
        needs_approval: Approval = False,
        **settings: Unpack[SettingsKeywords],
    ) -> None:
        self.manager = manager
        self._id = id
        self.thread_id = thread_id
        self.tags = tuple(tags) if tags is not None else None
        self.max_retries = max_retries
        self.needs_approval = needs_approval
        given = CallSettings.of(settings, thread_id=thread_id)
        self.on_log = given.handlers.on_log
        """Receives the tools' log records beside the run's event stream."""
        # The run's own log handler shows each record in the stream and hands it on.
        self.settings = dataclasses.replace(given, handlers=given.handlers._replace(on_log=None))

    @property
    def id(self) -> str | None:
        """The toolset's id among the agent's toolsets."""
        return self._id

    def _thread(self, ctx: RunContext[Any]) -> str | None:
        return self.thread_id if self.thread_id is not None else ctx.conversation_id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The tools registered now, enabled for the run's thread and carrying the tags."""
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        tools: dict[str, ToolsetTool[Any]] = {}
        for tool in listed(self.manager, self._thread(ctx), self.tags, strict=False):
            definition = ToolDefinition(
                name=tool.name,
                description=tool.description,
                parameters_json_schema=tool.parameters,
                metadata={
                    _TOOL_KEY: tool.info.name,
                    _APPROVAL_KEY: approves(self.needs_approval, tool.info),
                    "tags": list(tool.info.tags),
                },
            )
            tools[tool.name] = ToolsetTool(
                toolset=self, tool_def=definition, max_retries=retries, args_validator=_ARGUMENTS
            )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Call the tool over the bus; its result as PydanticAI returns it to the model.

        Raises:
            ApprovalRequired: The tool needs approval and the call has none yet.
            ModelRetry: The arguments are invalid (the model may correct them).
            ToolFailed: The call failed otherwise (the model sees why).

        """
        metadata = tool.tool_def.metadata or {}
        tool_name = str(metadata.get(_TOOL_KEY, name))
        if metadata.get(_APPROVAL_KEY) and not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"tool": tool_name, "arguments": tool_args})

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await ctx.emit(FleetProgressEvent(progress=value, total=total, message=message))

        async def chunk(value: Any) -> None:
            await ctx.emit(FleetChunkEvent(chunk=value))

        async def log(record: LogRecord, call: CallRef) -> None:
            shown = FleetLogEvent(
                level=record.level, message=record.message, value=record.data, logger=record.logger
            )
            await ctx.emit(shown)
            if self.on_log is not None:
                await maybe_await(self.on_log(record, call))

        run = RunSide(
            call_id=ctx.tool_call_id,
            thread_id=self._thread(ctx),
            trace_id=ctx.run_id,
            on_progress=progress,
            on_chunk=chunk,
            handlers=CallerHandlers(on_log=log),
        )
        result = await run_call(self.manager, tool_name, tool_args, self.settings, run)
        if not result.ok:
            if correctable(result):
                raise ModelRetry(failure_text(result))
            raise ToolFailed(failure_text(result))
        parts = [_part(part) for part in result_parts(result)]
        return parts[0] if len(parts) == 1 else parts


def _part(part: Any) -> Any:
    """One part of a result as PydanticAI returns it to the model."""
    if not isinstance(part, BLOCK_TYPES):
        return part
    if isinstance(part, Text):
        return part.text
    if isinstance(part, Image):
        return BinaryImage(data=part.data, media_type=part.mime_type)
    if isinstance(part, Audio):
        return BinaryContent(data=part.data, media_type=part.mime_type)
    if isinstance(part, EmbeddedResource) and part.blob is not None:
        media_type = part.mime_type or "application/octet-stream"
        return BinaryContent.narrow_type(BinaryContent(data=part.blob, media_type=media_type))
    return plain(part)
