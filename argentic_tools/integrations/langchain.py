"""The fleet as LangChain tools, for LangGraph graphs and LangChain agents (``[langchain]``).

:func:`langchain_tools` turns the tools registered with a :class:`~argentic_tools.ToolManager`
into LangChain :class:`~langchain_core.tools.BaseTool` objects (one per tool name, those
enabled for a thread and carrying all of some tags); :class:`FleetToolkit` is the same as a
LangChain toolkit whose :meth:`~FleetToolkit.get_tools` reads the registry each time it is
called. LangChain binds tools to a model, and LangGraph's ``ToolNode`` takes them, when the
graph is built: call either once per run (or per graph build) to follow tools joining and
leaving the fleet; a tool that left in between answers the model with a ``not_found`` error.

What each part of a call becomes:

- **Schema**: the tool's JSON Schema is the ``args_schema`` (a JSON Schema dict, which
  LangChain passes to the model as it is), the description is the tool's, the name is the
  provider-safe one of the exports (``Email Sender`` becomes ``Email_Sender``). LangChain
  does not validate a dict schema; the manager does, and the nulls a strict-mode model
  gives for optional parameters become their defaults again.
- **Errors**: a failed call raises :class:`~langchain_core.tools.ToolException` with the
  manager's message, which the tool's ``handle_tool_error`` turns into a ``ToolMessage``
  with ``status="error"`` that the model reads.
- **Progress, streamed chunks and log records**: inside a LangGraph graph, each is written
  to the graph's stream writer (``graph.astream(..., stream_mode="custom")``) as a dict
  with ``"type"`` ``"progress"``, ``"chunk"`` or ``"log"``, ``"tool"`` and
  ``"tool_call_id"``; outside a graph, the same dicts are LangChain custom events
  (``astream_events``: ``on_custom_event`` named :data:`PROGRESS_EVENT`,
  :data:`CHUNK_EVENT` or :data:`LOG_EVENT`).
- **Cancellation**: a cancelled run (the task awaiting a graph's ``ainvoke`` cancelled, or
  its ``astream`` closed) cancels the awaiting call, and the tool is told to stop (its
  ``TOOL_CANCEL``). A task cancelled while it iterates ``astream`` leaves the graph
  running until the stream is closed: iterate it in ``contextlib.aclosing``.
- **Content**: the tool returns ``(content, artifact)`` (``response_format=
  "content_and_artifact"``): images become LangChain ``image`` content blocks, audio and
  binary resources ``file`` blocks (base64 with their MIME type), text and the rest
  ``text`` blocks; a value given beside the blocks comes first, as JSON text. The
  artifact is the result in MCP's ``CallToolResult`` shape.
- **Questions**: inside a LangGraph graph with a checkpointer, a tool's question becomes
  ``interrupt({"type": "elicit", "tool", "message", "requested_schema"})``; the graph's
  caller answers with ``Command(resume=...)`` (an ``ElicitResult`` mapping, or the answer's
  fields for an accepted one). LangGraph runs the interrupted node again from its start
  on resume, so the waiting call is cancelled at the tool when the graph pauses and the
  tool runs again on resume, this time getting the answer: a tool that asks should do
  nothing it cannot repeat before its question. Handlers given here (``on_elicit``,
  ``on_sample``, ``on_log``, ``on_roots``) are passed to every call instead.
- **Thread and trace ids**: the thread is ``config["configurable"]["thread_id"]`` (what
  the manager's per-thread policy checks), else the one given here; the trace is
  ``configurable["trace_id"]``, else the LangChain run id of the tool's parent run;
  the user is ``configurable["user_id"]``.
"""

import base64
import contextvars
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, Unpack

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, adispatch_custom_event
from langchain_core.runnables import RunnableConfig, ensure_config
from langchain_core.tools import BaseTool, BaseToolkit, ToolException
from langgraph.config import get_stream_writer
from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt
from pydantic import ConfigDict

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
from .._protocol.participation import ElicitRequest, ElicitResult, LogRecord
from ._shared import CallSettings, RunPause, RunSide, SettingsKeywords, run_call

__all__ = [
    "CHUNK_EVENT",
    "LOG_EVENT",
    "PROGRESS_EVENT",
    "CallSettings",
    "FleetTool",
    "FleetToolkit",
    "langchain_content",
    "langchain_tools",
]

PROGRESS_EVENT = "argentic_tools.progress"
"""The name of the LangChain custom event a progress report becomes outside a graph."""
CHUNK_EVENT = "argentic_tools.chunk"
"""The name of the LangChain custom event a streamed chunk becomes outside a graph."""
LOG_EVENT = "argentic_tools.log"
"""The name of the LangChain custom event a tool's log record becomes outside a graph."""
_EVENT_NAMES = {"progress": PROGRESS_EVENT, "chunk": CHUNK_EVENT, "log": LOG_EVENT}

_TOOL_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "argentic_tools_tool_call_id", default=None
)
Emit = Callable[[dict[str, Any]], Awaitable[None]]


def langchain_content(result: ToolResult) -> str | list[str | dict[str, Any]]:
    """What the model reads for ``result``: its text, or LangChain content blocks.

    Images are ``image`` blocks, audio and binary resources ``file`` blocks (base64 with
    their MIME type), everything else its plain text; a value given beside the blocks
    comes first as JSON text. A failed call is its error message.
    """
    text: str = model_output(result, "prompt")
    if isinstance(result, TaskErrorMessage) or not result.content:
        return text
    parts: list[str | dict[str, Any]] = [_block(block) for block in result.content]
    if renders(result.result, result.content):
        return parts
    return [{"type": "text", "text": text}, *parts]


def _block(block: ContentBlock) -> dict[str, Any]:
    """``block`` as a LangChain standard content block (image, file or text)."""
    if isinstance(block, Image):
        return {"type": "image", "base64": _base64(block.data), "mime_type": block.mime_type}
    if isinstance(block, Audio):
        # A ToolMessage takes image, file and text blocks, no audio ones.
        return {"type": "file", "base64": _base64(block.data), "mime_type": block.mime_type}
    if isinstance(block, EmbeddedResource) and block.blob is not None:
        mime_type = block.mime_type or "application/octet-stream"
        return {"type": "file", "base64": _base64(block.blob), "mime_type": mime_type}
    return {"type": "text", "text": plain(block)}


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _jsonable(value: Any) -> Any:
    """A chunk as the stream carries it: content blocks as LangChain blocks."""
    if isinstance(value, Image | Audio | EmbeddedResource):
        return _block(value)
    if is_block(value):
        return {"type": "text", "text": plain(value)}
    return value


def _answer(resumed: Any) -> ElicitResult | Mapping[str, Any]:
    """A graph caller's resume value as an answer: an ElicitResult or its fields."""
    if isinstance(resumed, ElicitResult):
        return resumed
    if isinstance(resumed, Mapping) and "action" in resumed:
        return resumed
    return {"action": "accept", "content": resumed}


class FleetTool(BaseTool):
    """One tool of the fleet as a LangChain tool; calls go through the manager.

    Built by :func:`langchain_tools`; see the module for what each part of a call becomes.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: Any = True
    tool_name: str
    """The tool's name in the fleet (``name`` is the provider-safe one)."""
    manager: ToolManager
    settings: CallSettings
    """How the tool calls: thread, deadlines, handlers."""

    @classmethod
    def of(cls, manager: ToolManager, info: ToolInfo, settings: CallSettings) -> "FleetTool":
        """The LangChain tool for ``info``, calling through ``manager``."""
        return cls(
            name=provider_name(info.name),
            description=info.description,
            args_schema=info.input_schema,
            tool_name=info.name,
            manager=manager,
            settings=settings,
        )

    async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        """Run the tool (LangChain's entry point), knowing the model's tool-call id."""
        _TOOL_CALL_ID.set(kwargs.get("tool_call_id"))
        return await super().arun(tool_input, *args, **kwargs)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "the fleet's tools run asynchronously: use ainvoke, or a graph's ainvoke/astream"
        )

    async def _arun(
        self,
        config: RunnableConfig,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **arguments: Any,
    ) -> tuple[str | list[str | dict[str, Any]], dict[str, Any]]:
        configurable = config.get("configurable") or {}
        label = f"lc-{uuid.uuid4().hex}"
        tool_call_id = _TOOL_CALL_ID.get()
        emit = self._emitter(tool_call_id)
        pause = RunPause(
            self.manager, label, GraphInterrupt, "the graph paused for its caller's answer"
        )

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            report = {"progress": progress, "total": total, "message": message}
            await emit({"type": "progress", **report})

        async def on_chunk(chunk: Any) -> None:
            await emit({"type": "chunk", "chunk": _jsonable(chunk)})

        trace = configurable.get("trace_id")
        if trace is None and run_manager is not None:
            trace = str(run_manager.parent_run_id or run_manager.run_id)
        asks = self.settings.ask_the_run and _in_graph()
        run = RunSide(
            label=label,
            call_id=tool_call_id,
            thread_id=configurable.get("thread_id"),
            trace_id=trace,
            user_id=configurable.get("user_id"),
            on_progress=on_progress,
            on_chunk=on_chunk,
            handlers=CallerHandlers(
                on_elicit=pause.asking(self._interrupting(contextvars.copy_context()))
                if asks
                else None,
                on_log=self._logging(emit),
            ),
        )
        result = await run_call(self.manager, self.tool_name, arguments, self.settings, run)
        pause.raise_if_paused()
        if not result.ok:
            raise ToolException(model_output(result, "prompt"))
        return langchain_content(result), model_output(result, "mcp")

    def _emitter(self, tool_call_id: str | None) -> Emit:
        """Where the call's progress, chunks and log records go.

        Inside a LangGraph graph, its stream writer; otherwise LangChain custom events.
        """
        base = {"tool": self.tool_name, "tool_call_id": tool_call_id}
        try:
            writer = get_stream_writer()
        except (RuntimeError, KeyError):
            config = ensure_config()

            async def dispatch(event: dict[str, Any]) -> None:
                name = _EVENT_NAMES[event["type"]]
                await adispatch_custom_event(name, {**event, **base}, config=config)

            return dispatch

        # The writer reads the graph's config from the context; the tool's progress and log
        # records are handled in the manager's tasks, outside it.
        captured = contextvars.copy_context()

        async def write(event: dict[str, Any]) -> None:
            captured.run(writer, {**event, **base})

        return write

    def _logging(self, emit: Emit) -> LogHandler:
        async def on_log(record: LogRecord, call: CallRef) -> None:
            await emit({"type": "log", "record": record.model_dump(mode="json")})

        return on_log

    def _interrupting(
        self, captured: contextvars.Context
    ) -> Callable[[ElicitRequest, CallRef], Awaitable[Any]]:
        """A question as a LangGraph interrupt (raised within the graph's context)."""

        async def ask(request: ElicitRequest, call: CallRef) -> Any:
            question = {
                "type": "elicit",
                "tool": self.tool_name,
                "message": request.message,
                "requested_schema": request.requested_schema,
            }
            return _answer(captured.run(interrupt, question))

        return ask


def _in_graph() -> bool:
    try:
        get_stream_writer()
    except (RuntimeError, KeyError):
        return False
    return True


def langchain_tools(
    manager: ToolManager,
    *,
    thread_id: str | None = None,
    tags: Iterable[str] | None = None,
    interrupt_questions: bool = True,
    **settings: Unpack[SettingsKeywords],
) -> list[FleetTool]:
    """The fleet's tools as LangChain tools, as the registry holds them now.

    Args:
        manager: The manager whose registry to read and through which to call.
        thread_id: Only tools the manager's policy enables for this thread (and the
            thread of calls made outside a graph with no ``thread_id`` of its own).
        tags: Only tools carrying all of these tags.
        interrupt_questions: Inside a graph, turn a question into an ``interrupt``
            (unless ``on_elicit`` is given).
        **settings: For each call, as :meth:`~argentic_tools.ToolManager.execute_tool`
            takes them (:class:`SettingsKeywords`): ``timeout``, ``idle_timeout``,
            ``max_duration``, ``user_id`` (when the run's ``configurable`` names none),
            and the handlers: ``on_elicit`` answers the tools' questions instead of
            LangGraph's ``interrupt``, ``on_log`` receives their log records instead of
            the graph's stream, ``on_sample`` and ``on_roots`` (or all as ``handlers``).

    """
    call_settings = CallSettings.of(settings, thread_id=thread_id, ask_the_run=interrupt_questions)
    return FleetToolkit(manager=manager, tags=tuple(tags or ()), settings=call_settings).tools()


class FleetToolkit(BaseToolkit):
    """The fleet as a LangChain toolkit: :meth:`get_tools` reads the registry each call.

    Example:
        >>> toolkit = FleetToolkit(manager=manager, tags=("math",))  # doctest: +SKIP
        >>> graph = build_graph(toolkit.get_tools())  # once per run  # doctest: +SKIP

    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    manager: ToolManager
    tags: tuple[str, ...] = ()
    """Only tools carrying all of these tags."""
    settings: CallSettings = CallSettings()
    """How the tools call (the thread's policy also filters which tools there are)."""

    def get_tools(self) -> list[BaseTool]:
        """The tools the registry holds now (enabled for the thread, with the tags)."""
        return list(self.tools())

    def tools(self) -> list[FleetTool]:
        """:meth:`get_tools`, typed as the fleet's own tools."""
        available = self.manager.get_available_tools(self.settings.thread_id, self.tags)
        return [FleetTool.of(self.manager, info, self.settings) for info in available]
