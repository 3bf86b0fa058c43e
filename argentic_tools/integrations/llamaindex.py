"""The fleet as LlamaIndex tools, for agents and workflows (the ``[llamaindex]`` extra).

:func:`llamaindex_tools` turns the tools registered with a
:class:`~argentic_tools.ToolManager` into LlamaIndex tools (one per tool name, those
enabled for a thread and carrying all of some tags): :class:`FleetTool`, an
``AsyncBaseTool`` (a ``FunctionTool``, so that agents hand it their workflow
``Context``) whose ``acall`` returns a ``ToolOutput``. :class:`FleetToolRetriever` is
the same as an agent's ``tool_retriever``, which LlamaIndex's agents ask for their tools
at every step: ``FunctionAgent(tool_retriever=FleetToolRetriever(manager), ...)``
follows tools joining and leaving the fleet during a run; a list from
:func:`llamaindex_tools` is the registry when it was made.

What each part of a call becomes:

- **Schema**: ``metadata.fn_schema`` is a pydantic model whose JSON Schema is the
  tool's own (what ``ToolMetadata.get_parameters_dict`` gives the model), the
  description is the tool's, the name the provider-safe one of the exports
  (``Email Sender`` becomes ``Email_Sender``). The manager validates the arguments and
  turns the nulls a strict-mode model gives for optional parameters into their defaults.
- **Errors**: a failed call is a ``ToolOutput`` with ``is_error=True`` and the
  manager's message as its text, which the agent gives the model.
- **Progress, streamed chunks and log records**: inside an agent or workflow, each is a
  workflow event written to the run's stream (``handler.stream_events()``):
  :class:`ToolProgress`, :class:`ToolChunk`, :class:`ToolLog`.
- **Cancellation**: a cancelled run (``handler.cancel_run()``, its task cancelled)
  cancels the awaiting call, and the tool is told to stop.
- **Content**: images become ``ImageBlock``, audio ``AudioBlock``, binary resources
  ``DocumentBlock``, the rest ``TextBlock``, in the ``ToolOutput``'s blocks (which the
  agent puts in the tool message the model reads); a value given beside the blocks
  comes first as JSON text. ``raw_output`` is the result in MCP's ``CallToolResult``
  shape.
- **Questions**: inside an agent or workflow, a tool's question is a
  :class:`ToolQuestion` (an ``InputRequiredEvent``) in the run's stream, answered by
  sending a :class:`ToolAnswer` (a ``HumanResponseEvent``) with the same
  ``question_id``: ``await handler.send_event(ToolAnswer(question_id=..., content=...))``.
  LlamaIndex pauses a step that waits for an event and runs it again when the event
  comes, so the waiting call is cancelled at the tool while the run waits, and the tool
  runs again with the answer: a tool that asks should do nothing it cannot repeat before
  its question. Handlers given here (``on_elicit``, ``on_sample``, ``on_log``,
  ``on_roots``) are passed to every call instead.
- **Thread and trace ids**: the thread is the one given here (LlamaIndex runs have no
  thread of their own); the trace is the workflow run's id.
"""

import asyncio
import contextvars
import copy
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Unpack

from llama_index.core.base.llms.types import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
)
from llama_index.core.base.llms.types import (
    ContentBlock as LlamaBlock,
)
from llama_index.core.objects import ObjectRetriever
from llama_index.core.schema import QueryBundle
from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.workflow import Context, Event, HumanResponseEvent, InputRequiredEvent
from llama_index_instrumentation.dispatcher import active_instrument_tags
from pydantic import BaseModel, ConfigDict
from workflows.runtime.types.results import WaitingForEvent

from .._agent.calls.participation.handlers import CallerHandlers, CallRef, LogHandler
from .._agent.fleet.exports import provider_name
from .._agent.fleet.info import ToolInfo
from .._agent.fleet.model_output import model_output
from .._agent.manager import ToolManager
from .._protocol.content import (
    Audio,
    ContentBlock,
    EmbeddedResource,
    Image,
    is_block,
    plain,
    renders,
)
from .._protocol.messages import TaskErrorMessage, ToolResult
from .._protocol.participation import ElicitRequest, LogRecord
from ._shared import CallSettings, RunPause, RunSide, SettingsKeywords, run_call

__all__ = [
    "CallSettings",
    "FleetTool",
    "FleetToolRetriever",
    "ToolAnswer",
    "ToolChunk",
    "ToolLog",
    "ToolProgress",
    "ToolQuestion",
    "llamaindex_blocks",
    "llamaindex_tools",
]

CONTEXT_PARAMETER = "_workflow_context"
"""The keyword under which an agent hands a :class:`FleetTool` its workflow ``Context``."""


class ToolProgress(Event):
    """A tool's progress report, in the run's event stream."""

    tool: str
    progress: float
    total: float | None = None
    message: str | None = None


class ToolChunk(Event):
    """A chunk a streaming tool sent, in the run's event stream (blocks as LlamaIndex's)."""

    tool: str
    chunk: Any


class ToolLog(Event):
    """A log record a tool sent its caller, in the run's event stream."""

    tool: str
    level: str
    message: str
    data: Any = None
    logger: str | None = None


class ToolQuestion(InputRequiredEvent):
    """A tool's question for the run's caller; answer it with a :class:`ToolAnswer`."""

    question_id: str
    tool: str
    message: str
    requested_schema: dict[str, Any]


class ToolAnswer(HumanResponseEvent):
    """The caller's answer to the :class:`ToolQuestion` with the same ``question_id``.

    ``action`` is ``accept`` (with ``content``, the answer's fields), ``decline`` or
    ``cancel``, as MCP's elicitation has them.
    """

    question_id: str
    action: str = "accept"
    content: dict[str, Any] | None = None


def llamaindex_blocks(result: ToolResult) -> list[LlamaBlock]:
    """What the model reads for ``result``, as LlamaIndex content blocks.

    Images are ``ImageBlock``, audio ``AudioBlock``, binary resources ``DocumentBlock``,
    everything else ``TextBlock``; a value given beside the blocks comes first as JSON
    text. A failed call is its error message.
    """
    text = TextBlock(text=model_output(result, "prompt"))
    if isinstance(result, TaskErrorMessage) or not result.content:
        return [text]
    converted = [_block(block) for block in result.content]
    return converted if renders(result.result, result.content) else [text, *converted]


def _block(block: ContentBlock) -> LlamaBlock:
    if isinstance(block, Image):
        return ImageBlock(image=block.data, image_mimetype=block.mime_type)
    if isinstance(block, Audio):
        # LlamaIndex names an audio's format by its subtype ("wav"), not its MIME type.
        return AudioBlock(audio=block.data, format=block.mime_type.split("/")[-1])
    if isinstance(block, EmbeddedResource) and block.blob is not None:
        return DocumentBlock(
            data=block.blob,
            title=block.uri,
            document_mimetype=block.mime_type or "application/octet-stream",
        )
    return TextBlock(text=plain(block))


def _chunk(value: Any) -> Any:
    return _block(value) if is_block(value) else value


def _schema_model(info: ToolInfo) -> type[BaseModel]:
    """A pydantic model whose JSON Schema is the tool's own (``fn_schema``)."""
    schema = info.input_schema

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow", title=provider_name(info.name))

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    return Arguments


class FleetTool(FunctionTool):
    """One tool of the fleet as a LlamaIndex tool; calls go through the manager.

    Built by :func:`llamaindex_tools`; see the module for what each part of a call
    becomes. ``acall`` is the tool; ``call`` (sync) is refused, since the manager runs
    on an event loop.
    """

    def __init__(self, manager: ToolManager, info: ToolInfo, settings: CallSettings) -> None:
        metadata = ToolMetadata(
            description=info.description,
            name=provider_name(info.name),
            fn_schema=_schema_model(info),
        )
        super().__init__(async_fn=self._refused, metadata=metadata)
        # The agent hands the workflow's Context under this keyword (never a tool argument).
        self.requires_context = True
        self.ctx_param_name = CONTEXT_PARAMETER
        self.manager = manager
        self.info = info
        self.settings = settings

    @staticmethod
    async def _refused(**arguments: Any) -> Any:
        raise NotImplementedError  # pragma: no cover - acall is overridden

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Refused: the fleet's tools run asynchronously (use ``acall``)."""
        raise NotImplementedError(
            "the fleet's tools run asynchronously: use acall, or an agent's run()"
        )

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Call the tool with ``kwargs`` as its arguments; a failure is ``is_error``."""
        ctx: Context | None = kwargs.pop(CONTEXT_PARAMETER, None)
        arguments = dict(kwargs)
        name = self.info.name
        label = f"li-{uuid.uuid4().hex}"
        pause = RunPause(
            self.manager, label, WaitingForEvent, "the run waits for its caller's answer"
        )
        emit: Callable[[Event], None] = (
            (lambda _: None) if ctx is None else ctx.write_event_to_stream
        )

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            emit(ToolProgress(tool=name, progress=progress, total=total, message=message))

        def on_chunk(chunk: Any) -> None:
            emit(ToolChunk(tool=name, chunk=_chunk(chunk)))

        asks = ctx is not None and self.settings.ask_the_run
        run = RunSide(
            label=label,
            trace_id=active_instrument_tags.get().get("llamaindex.run_id"),
            on_progress=on_progress,
            on_chunk=on_chunk,
            handlers=CallerHandlers(
                on_elicit=pause.asking(self._asking(ctx, contextvars.copy_context()))
                if asks and ctx is not None
                else None,
                on_log=None if ctx is None else _logging(emit),
            ),
        )
        result = await run_call(self.manager, name, arguments, self.settings, run)
        pause.raise_if_paused()
        return ToolOutput(
            tool_name=self.metadata.get_name(),
            blocks=llamaindex_blocks(result),
            raw_input={"kwargs": arguments},
            raw_output=model_output(result, "mcp"),
            is_error=not result.ok,
        )

    def _asking(
        self, ctx: Context, captured: contextvars.Context
    ) -> Callable[[ElicitRequest, CallRef], Awaitable[Mapping[str, Any]]]:
        """A question as a workflow wait for the caller's :class:`ToolAnswer`."""
        asked = 0

        async def ask(request: ElicitRequest, call: CallRef) -> Mapping[str, Any]:
            nonlocal asked
            asked += 1
            question = ToolQuestion(
                question_id=f"{self.info.name}#{asked}",
                tool=self.info.name,
                message=request.message,
                requested_schema=request.requested_schema,
            )
            waiting = ctx.wait_for_event(
                ToolAnswer,
                waiter_event=question,
                requirements={"question_id": question.question_id},
            )
            # Within the step's own context: LlamaIndex finds the waiting step there.
            answer = await _in_context(captured, waiting)
            return {"action": answer.action, "content": answer.content}

        return ask


async def _in_context(captured: contextvars.Context, waiting: Any) -> ToolAnswer:
    task: asyncio.Task[ToolAnswer] = asyncio.get_running_loop().create_task(
        waiting, context=captured
    )
    return await task


def _logging(emit: Callable[[Event], None]) -> LogHandler:
    def on_log(record: LogRecord, call: CallRef) -> None:
        emit(
            ToolLog(
                tool=call.tool_name,
                level=record.level,
                message=record.message,
                data=record.data,
                logger=record.logger,
            )
        )

    return on_log


def llamaindex_tools(
    manager: ToolManager,
    *,
    thread_id: str | None = None,
    tags: Iterable[str] | None = None,
    ask_in_workflow: bool = True,
    **settings: Unpack[SettingsKeywords],
) -> list[FleetTool]:
    """The fleet's tools as LlamaIndex tools, as the registry holds them now.

    Args:
        manager: The manager whose registry to read and through which to call.
        thread_id: Only tools the manager's policy enables for this thread, and the
            calls' thread.
        tags: Only tools carrying all of these tags.
        ask_in_workflow: Inside an agent or workflow, turn a question into a
            :class:`ToolQuestion` the run's caller answers (unless ``on_elicit`` is given).
        **settings: For each call, as :meth:`~argentic_tools.ToolManager.execute_tool`
            takes them (:class:`SettingsKeywords`): ``timeout``, ``idle_timeout``,
            ``max_duration``, ``user_id``, and the handlers: ``on_elicit`` answers the
            tools' questions instead of the run's caller, ``on_log`` receives their log
            records instead of the run's event stream, ``on_sample`` and ``on_roots``
            (or all as ``handlers``).

    """
    call_settings = CallSettings.of(settings, thread_id=thread_id, ask_the_run=ask_in_workflow)
    return FleetToolRetriever(manager, tags=tags, settings=call_settings).tools()


class FleetToolRetriever(ObjectRetriever[FleetTool]):
    """The fleet as an agent's ``tool_retriever``: the registry's tools at every step.

    Args:
        manager: The manager whose registry to read and through which to call.
        tags: Only tools carrying all of these tags.
        settings: How the tools call (its thread's policy also filters the tools).

    Example:
        >>> retriever = FleetToolRetriever(manager)  # doctest: +SKIP
        >>> agent = FunctionAgent(tool_retriever=retriever, llm=llm)  # doctest: +SKIP

    """

    def __init__(
        self,
        manager: ToolManager,
        *,
        tags: Iterable[str] | None = None,
        settings: CallSettings | None = None,
    ) -> None:
        # Nothing to search: every query gets every tool, so no retriever or node mapping.
        self.manager = manager
        self.tags = tuple(tags or ())
        self.settings = settings or CallSettings()

    def tools(self) -> list[FleetTool]:
        """The tools the registry holds now (enabled for the thread, with the tags)."""
        available = self.manager.get_available_tools(self.settings.thread_id, self.tags)
        return [FleetTool(self.manager, info, self.settings) for info in available]

    def retrieve(self, str_or_query_bundle: str | QueryBundle) -> list[FleetTool]:
        """Every tool of the fleet, whatever the query."""
        return self.tools()

    async def aretrieve(self, str_or_query_bundle: str | QueryBundle) -> list[FleetTool]:
        """Every tool of the fleet, whatever the query."""
        return self.tools()
