"""What every framework's native tools share: the listing, one call, and its result's parts.

A framework adapter reads the registry through :func:`listed` (the tools enabled for a
thread and carrying the tags, each with its provider-safe name and the schema the
OpenAI export gives it, strict where the schema allows), runs each call through
:func:`run_call` (streamed, so chunks reach the framework as they come; a cancelled
awaiting task cancels the call at the tool), and turns the result into the
framework's types from :func:`result_parts`. Nothing here imports a framework.
"""

import inspect
import json
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from .._agent.calls.handlers import ElicitHandler, LogHandler, RootsHandler, SampleHandler
from .._agent.calls.progress import ProgressCallback
from .._agent.fleet.exports import export
from .._agent.fleet.info import ToolInfo
from .._agent.manager import ToolManager
from .._protocol.content import ContentBlock, renders
from .._protocol.messages import TaskErrorMessage, ToolResult

CORRECTABLE_ERRORS = frozenset({"invalid_arguments"})
"""Error codes the model can fix by calling again differently (its arguments were wrong);
every other failure is final for that call (the tool failed, timed out, left, ...)."""

Approval = bool | Collection[str] | Callable[[ToolInfo], bool]
"""Which tools need a person's approval before each call: all (True), none (False), those
named, or those a predicate picks."""

ChunkCallback = Callable[[Any], Awaitable[None] | None]
"""``on_chunk(chunk)``: one streamed chunk, in order; a plain function or a coroutine function."""


@dataclass(frozen=True)
class Listed:
    """One tool as a framework lists it."""

    info: ToolInfo
    """The registered tool (the first instance of its name)."""
    name: str
    """The name the model sees: ``[a-zA-Z0-9_-]``, at most 64 characters."""
    description: str
    """The tool's description."""
    parameters: dict[str, Any]
    """Its arguments' JSON Schema: the strict rewrite when ``strict`` is True."""
    strict: bool
    """Whether ``parameters`` is the strict-mode rewrite (every property required,
    optional ones nullable; a null the model sends for one is read as "the default")."""


@dataclass(frozen=True)
class CallSettings:
    """What each call of an adapter's tools carries besides its arguments."""

    timeout: float | None = None
    """Seconds a call may take (the manager's ``default_timeout`` when None)."""
    idle_timeout: float | None = None
    """For long tools: seconds without a progress report before the call times out."""
    max_duration: float | None = None
    """With ``idle_timeout``: the limit no report extends."""
    user_id: str | None = None
    """The user, put in each call's context."""
    on_elicit: ElicitHandler | None = None
    """Answers a tool's questions (see :meth:`~argentic_tools.ToolManager.execute_tool`)."""
    on_sample: SampleHandler | None = None
    """Lends a tool the caller's model."""
    on_log: LogHandler | None = None
    """Receives a tool's log records."""
    on_roots: RootsHandler | None = None
    """Names the caller's roots."""
    thread_id: str | None = None
    """The conversation thread (its policy chooses the tools), when the run names none."""
    ask_the_run: bool = True
    """Where the framework can pause a run for a person (LangGraph's ``interrupt``, a
    LlamaIndex workflow's input event), a tool's question does so, unless ``on_elicit``
    answers it."""


def listed(
    manager: ToolManager,
    thread_id: str | None,
    tags: Iterable[str] | None,
    *,
    strict: bool,
) -> list[Listed]:
    """The tools enabled for ``thread_id`` and carrying all ``tags``, as a model sees them.

    The schema and name are those of the manager's OpenAI export (one rewrite, shared
    with :meth:`~argentic_tools.ToolManager.export_tools`).
    """
    infos = manager.get_available_tools(thread_id, tags)
    entries = export(infos, "openai", strict=strict)
    tools = []
    for info, entry in zip(infos, entries, strict=True):
        function = entry["function"]
        tools.append(
            Listed(
                info,
                function["name"],
                info.description,
                function["parameters"],
                bool(function.get("strict", False)),
            )
        )
    return tools


async def run_call(
    manager: ToolManager,
    tool_name: str,
    arguments: Any,
    settings: CallSettings,
    *,
    call_id: str | None,
    thread_id: str | None,
    trace_id: str | None,
    on_progress: ProgressCallback | None,
    on_chunk: ChunkCallback | None,
) -> ToolResult:
    """Call ``tool_name`` and return its result; chunks go to ``on_chunk`` as they come.

    Never raises for a failed call. Cancelling the task that awaits this cancels the
    call at the tool (its TOOL_CANCEL is sent) before the cancellation goes on.
    """
    stream = manager.stream_tool(
        tool_name,
        arguments,
        timeout=settings.timeout,
        call_id=call_id,
        on_progress=on_progress,
        idle_timeout=settings.idle_timeout,
        max_duration=settings.max_duration,
        thread_id=thread_id,
        trace_id=trace_id,
        user_id=settings.user_id,
        on_elicit=settings.on_elicit,
        on_sample=settings.on_sample,
        on_log=settings.on_log,
        on_roots=settings.on_roots,
    )
    async with stream:
        async for chunk in stream:
            if on_chunk is not None:
                await maybe_await(on_chunk(chunk))
    assert stream.result is not None
    return stream.result


def approves(rule: Approval, info: ToolInfo) -> bool:
    """Whether ``rule`` asks a person's approval before each call of ``info``."""
    if isinstance(rule, bool):
        return rule
    if callable(rule):
        return bool(rule(info))
    return info.name in rule


def parsed_arguments(text: str) -> dict[str, Any] | str:
    """The arguments a model wrote as JSON text, or why they are not a JSON object."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        return f"the arguments are not valid JSON ({exc}); send a JSON object"
    if not isinstance(value, dict):
        return f"the arguments must be a JSON object, not {type(value).__name__}"
    return value


def result_parts(result: ToolResult) -> list[Any]:
    """A successful result as parts: its value, then its content blocks.

    The value comes only when it says more than the blocks; a result without blocks is
    its value alone.

    The value is left as it is (a string, or any JSON value); blocks stay typed
    (:class:`~argentic_tools.Image`, ...), for the adapter to map onto its framework.
    """
    assert not isinstance(result, TaskErrorMessage)
    blocks: list[ContentBlock] = list(result.content or [])
    if not blocks:
        return [result.result]
    if renders(result.result, blocks):
        return list(blocks)
    return [result.result, *blocks]


def as_text(value: Any) -> str:
    """A value as the text a model reads: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def failure_text(result: ToolResult) -> str:
    """A failed result as the model reads it: the error (it names the tool and the cause)."""
    assert isinstance(result, TaskErrorMessage)
    return result.error


def correctable(result: ToolResult) -> bool:
    """Whether the model can fix this failure by calling again with other arguments."""
    return isinstance(result, TaskErrorMessage) and result.error_code in CORRECTABLE_ERRORS


async def maybe_await(value: Awaitable[None] | None) -> None:
    """Await ``value`` when a callback returned an awaitable."""
    if inspect.isawaitable(value):
        await value
