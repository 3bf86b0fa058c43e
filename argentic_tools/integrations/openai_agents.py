"""The fleet as native tools of the OpenAI Agents SDK (``agents``; the ``[openai-agents]`` extra).

:class:`FleetTools` turns a :class:`~argentic_tools.ToolManager` into the SDK's own
``FunctionTool`` objects:

- **The registry, live.** :meth:`FleetTools.tools` lists the tools registered now; build
  the agent's tools with it for each run (``agent.clone(tools=fleet.tools())``), as the
  SDK asks of tools that change between runs. Within a run, each tool's ``is_enabled``
  reads the registry before every model turn: a tool that left, or that the policy
  turns off for the run's thread, is no longer offered. (``FunctionTool`` rather than an
  ``MCPServer`` subclass, whose list the SDK also reads every turn: its ``call_tool`` gets
  neither the call's id nor its run context, so neither the thread, the trace nor
  progress could be tied to the call, and its results carry no files.)
- **Schemas.** The name is the provider-safe spelling (``Email Sender`` is
  ``Email_Sender``), the schema the manager's strict OpenAI export
  (``strict_json_schema=True`` where the schema allows it); a null the model sends for an
  optional parameter reaches the tool as that parameter's default.
- **Errors** are returned as text the model reads (the SDK's convention for a tool's
  failure): invalid arguments, a failing tool, a timeout, a tool gone offline.
- **Progress** has no place in the SDK's stream events; each report goes to
  ``on_progress(context, progress, total, message)`` and is recorded in the run's trace
  as a custom span ``argentic_tools.progress`` under the tool's function span.
- **Cancellation.** Cancelling the run (its task, or ``RunResultStreaming.cancel()``)
  cancels the call at the tool.
- **Streamed chunks** go to ``on_chunk(context, chunk)`` as they come (the model reads the
  whole result at the end: the SDK has no partial tool output).
- **Content blocks** become ``ToolOutputText``, ``ToolOutputImage`` (PNG, JPEG, GIF, WebP,
  as data URLs) and ``ToolOutputFileContent`` (a binary embedded resource); what the
  SDK has no type for (audio, other images, links) is its plain rendering.
- **Human in the loop.** ``needs_approval`` maps onto the SDK's own tool approval (the
  run stops with an interruption before the call; ``RunState.approve`` resumes it). A
  question a tool asks while it runs cannot interrupt an SDK run, which resumes only
  before a call: it goes to ``on_elicit`` (and ``on_sample``, ``on_log``, ``on_roots``).
- **Thread and trace ids**: the thread is the one given here, else the run's
  ``RunConfig.group_id`` (the SDK's conversation grouping); the trace is the SDK trace's
  id. The call's id is the model's tool-call id.
"""

import base64
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Unpack

from agents import (
    FunctionTool,
    RunContextWrapper,
    Tool,
    ToolOutputFileContent,
    ToolOutputImage,
    ToolOutputText,
)
from agents.tool_context import ToolContext
from agents.tracing import custom_span, get_current_span, get_current_trace
from agents.tracing.traces import NoOpTrace

from .._agent.fleet.model_output import OPENAI_IMAGE_TYPES
from .._agent.manager import ToolManager
from .._protocol.content import BLOCK_TYPES, EmbeddedResource, Image, Text, plain
from ._shared import (
    Approval,
    CallSettings,
    Listed,
    RunSide,
    SettingsKeywords,
    approves,
    as_text,
    failure_text,
    listed,
    maybe_await,
    parsed_arguments,
    result_parts,
    run_call,
)

ProgressHandler = Callable[
    [ToolContext[Any], float, float | None, str | None], Awaitable[None] | None
]
"""``on_progress(context, progress, total, message)``: one progress report of a call."""
ChunkHandler = Callable[[ToolContext[Any], Any], Awaitable[None] | None]
"""``on_chunk(context, chunk)``: one streamed chunk of a call, in order."""

PROGRESS_SPAN = "argentic_tools.progress"
"""The name of the trace span each progress report is recorded as."""

ToolOutput = str | ToolOutputText | ToolOutputImage | ToolOutputFileContent
"""One part of what the model reads for a call."""


class FleetTools:
    """The tools of a :class:`~argentic_tools.ToolManager` as OpenAI Agents SDK tools.

    Args:
        manager: An initialised manager.
        thread_id: The conversation thread the policy is checked for and each call
            carries; None: the run's ``RunConfig.group_id``.
        tags: Only tools carrying all of these.
        strict: Strict JSON schemas where the schema allows them.
        needs_approval: Tools that wait for a person's approval before each call
            (the SDK's tool approval).
        on_progress: Receives each call's progress reports.
        on_chunk: Receives each call's streamed chunks.
        **settings: For each call, as :meth:`~argentic_tools.ToolManager.execute_tool`
            takes them (:class:`SettingsKeywords`): ``timeout``, ``idle_timeout``,
            ``max_duration``, ``user_id``, and the handlers for a tool's questions and
            log records while it runs (``handlers``, or ``on_elicit``, ``on_sample``,
            ``on_log``, ``on_roots``).

    Example:
        >>> fleet = FleetTools(manager)  # doctest: +SKIP
        >>> agent = Agent(name="assistant", tools=fleet.tools())  # doctest: +SKIP

    """

    def __init__(
        self,
        manager: ToolManager,
        *,
        thread_id: str | None = None,
        tags: Iterable[str] | None = None,
        strict: bool = True,
        needs_approval: Approval = False,
        on_progress: ProgressHandler | None = None,
        on_chunk: ChunkHandler | None = None,
        **settings: Unpack[SettingsKeywords],
    ) -> None:
        self.manager = manager
        self.thread_id = thread_id
        self.tags = tuple(tags) if tags is not None else None
        self.strict = strict
        self.needs_approval = needs_approval
        self.on_progress = on_progress
        self.on_chunk = on_chunk
        self.settings = CallSettings.of(settings, thread_id=thread_id)
        self._names: frozenset[str] = frozenset()
        self._names_version = -1

    def tools(self) -> list[Tool]:
        """One ``FunctionTool`` per tool registered now (enabled for the thread, tagged)."""
        return [
            self._function_tool(tool)
            for tool in listed(self.manager, self.thread_id, self.tags, strict=self.strict)
        ]

    def _function_tool(self, tool: Listed) -> FunctionTool:
        async def invoke(context: ToolContext[Any], arguments: str) -> Any:
            return await self._invoke(tool, context, arguments)

        async def enabled(run_context: RunContextWrapper[Any], agent: Any) -> bool:
            return self._offered(tool.info.name, self._thread(None))

        return FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=tool.parameters,
            on_invoke_tool=invoke,
            strict_json_schema=tool.strict,
            is_enabled=enabled,
            needs_approval=approves(self.needs_approval, tool.info),
        )

    def _offered(self, name: str, thread_id: str | None) -> bool:
        """Whether ``name`` is registered and enabled for ``thread_id``.

        Every tool asks before every turn: the names are read again only when the
        registry changed.
        """
        version = self.manager.registry_version
        if version != self._names_version:
            self._names, self._names_version = frozenset(self.manager.get_tool_names()), version
        return name in self._names and self.manager.policy.is_enabled(name, thread_id)

    def _thread(self, context: ToolContext[Any] | None) -> str | None:
        if self.thread_id is not None:
            return self.thread_id
        config = context.run_config if context is not None else None
        group = config.group_id if config is not None else None
        if isinstance(group, str):
            return group
        trace = get_current_trace()
        group = getattr(trace, "group_id", None)
        return group if isinstance(group, str) else None

    async def _invoke(self, tool: Listed, context: ToolContext[Any], text: str) -> Any:
        arguments = parsed_arguments(text)
        if isinstance(arguments, str):
            return f"Tool '{tool.info.name}': {arguments}."
        trace = get_current_trace()
        trace_id = None if trace is None or isinstance(trace, NoOpTrace) else trace.trace_id
        span = get_current_span()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if span is not None:
                data: dict[str, Any] = {"tool": tool.info.name, "call_id": context.tool_call_id}
                data.update(progress=value, total=total, message=message)
                with custom_span(PROGRESS_SPAN, data, parent=span):
                    pass
            if self.on_progress is not None:
                await maybe_await(self.on_progress(context, value, total, message))

        async def chunk(value: Any) -> None:
            if self.on_chunk is not None:
                await maybe_await(self.on_chunk(context, value))

        run = RunSide(
            call_id=context.tool_call_id,
            thread_id=self._thread(context),
            trace_id=trace_id,
            on_progress=progress,
            on_chunk=chunk,
        )
        result = await run_call(self.manager, tool.info.name, arguments, self.settings, run)
        if not result.ok:
            return failure_text(result)
        parts = [_output(part) for part in result_parts(result)]
        if len(parts) == 1 and isinstance(parts[0], str):
            return parts[0]
        return [ToolOutputText(text=part) if isinstance(part, str) else part for part in parts]


def _output(part: Any) -> ToolOutput:
    """One part of a result as the SDK's tool output type."""
    if not isinstance(part, BLOCK_TYPES):
        return as_text(part)
    block = part
    if isinstance(block, Text):
        return ToolOutputText(text=block.text)
    if isinstance(block, Image) and block.mime_type in OPENAI_IMAGE_TYPES:
        data = base64.b64encode(block.data).decode("ascii")
        return ToolOutputImage(image_url=f"data:{block.mime_type};base64,{data}")
    if isinstance(block, EmbeddedResource) and block.blob is not None:
        data = base64.b64encode(block.blob).decode("ascii")
        mime = block.mime_type or "application/octet-stream"
        name = block.uri.rsplit("/", 1)[-1] or None
        return ToolOutputFileContent(file_data=f"data:{mime};base64,{data}", filename=name)
    return ToolOutputText(text=plain(block))
