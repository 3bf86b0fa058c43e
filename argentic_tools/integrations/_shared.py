"""What every framework's native tools share: the listing, one call, and its result's parts.

A framework adapter takes its call settings as :class:`SettingsKeywords` (the same
keywords at every adapter) and keeps them as one :class:`CallSettings`; it reads the
registry through :func:`listed` (the tools enabled for a thread and carrying the tags,
each with its provider-safe name and the schema the OpenAI export gives it, strict
where the schema allows), runs each call through :func:`run_call` with what the
framework's run gives that call (:class:`RunSide`: streamed, so chunks reach the
framework as they come; a cancelled awaiting task cancels the call at the tool), lets a
tool's question pause the run where the framework can (:class:`RunPause`), and turns
the result into the framework's types from :func:`result_parts`. Nothing here imports
a framework.
"""

import inspect
import json
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from .._agent.calls.participation.handlers import (
    NO_HANDLERS,
    CallerHandlers,
    CallRef,
    ElicitHandler,
    HandlerKeywords,
    handlers_of,
)
from .._agent.calls.pending.progress import ProgressCallback
from .._agent.calls.settings.options import SharedKeywords, refuse_unknown
from .._agent.fleet.exports import export
from .._agent.fleet.info import ToolInfo
from .._agent.manager import ToolManager
from .._protocol.content import ContentBlock, renders
from .._protocol.messages import TaskErrorMessage, ToolResult
from .._protocol.participation import ElicitRequest

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


class SettingsKeywords(SharedKeywords, HandlerKeywords, total=False):
    """What each call of an adapter's tools carries besides its arguments, as keywords.

    Every adapter (``FleetTools``, ``FleetToolset``, ``langchain_tools``,
    ``llamaindex_tools``) takes these, as ``execute_tool`` takes them: ``timeout``,
    ``idle_timeout``, ``max_duration``, ``user_id`` and the handlers (``handlers``, or
    ``on_elicit``, ``on_sample``, ``on_log``, ``on_roots``).
    """

    timeout: float | None
    """Seconds a call may take (the manager's ``default_timeout`` when None)."""


_SETTINGS_KEYS = frozenset(SettingsKeywords.__optional_keys__)


@dataclass(frozen=True, kw_only=True)
class CallSettings:
    """What each call of an adapter's tools carries besides its arguments, as one value."""

    timeout: float | None = None
    """Seconds a call may take (the manager's ``default_timeout`` when None)."""
    idle_timeout: float | None = None
    """For long tools: seconds without a progress report before the call times out."""
    max_duration: float | None = None
    """With ``idle_timeout``: the limit no report extends."""
    user_id: str | None = None
    """The user, put in each call's context, when the run names none."""
    handlers: CallerHandlers = NO_HANDLERS
    """Handlers for a tool's questions and log records; each one given wins over what
    the framework's run would do with them (pause the run, write its stream)."""
    thread_id: str | None = None
    """The conversation thread (its policy chooses the tools), when the run names none."""
    ask_the_run: bool = True
    """Where the framework can pause a run for a person (LangGraph's ``interrupt``, a
    LlamaIndex workflow's input event), a tool's question does so, unless
    ``handlers.on_elicit`` answers it."""

    @classmethod
    def of(
        cls,
        keywords: SettingsKeywords,
        *,
        thread_id: str | None = None,
        ask_the_run: bool = True,
    ) -> "CallSettings":
        """The settings an adapter's keywords ask for: the one place that reads them.

        Raises:
            TypeError: A keyword that is not a call setting (misspelt, say).

        """
        refuse_unknown(keywords, _SETTINGS_KEYS)
        return cls(
            timeout=keywords.get("timeout"),
            idle_timeout=keywords.get("idle_timeout"),
            max_duration=keywords.get("max_duration"),
            user_id=keywords.get("user_id"),
            handlers=handlers_of(keywords, keywords.get("handlers")) or NO_HANDLERS,
            thread_id=thread_id,
            ask_the_run=ask_the_run,
        )


@dataclass(frozen=True, kw_only=True)
class RunSide:
    """What the framework's run gives one call: its ids, and where its reports go."""

    label: str | None = None
    """The call's label (its ``task_id_override``), to cancel it by (:class:`RunPause`)."""
    call_id: str | None = None
    """The model's tool-call id."""
    thread_id: str | None = None
    """The run's thread (the settings' when None)."""
    trace_id: str | None = None
    """The run's trace."""
    user_id: str | None = None
    """The run's user (the settings' when None)."""
    on_progress: ProgressCallback | None = None
    """Where the call's progress reports go in the framework."""
    on_chunk: ChunkCallback | None = None
    """Where the call's streamed chunks go in the framework."""
    handlers: CallerHandlers = NO_HANDLERS
    """The run's own handlers (a pause, its stream); the settings' win over them."""


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
    manager: ToolManager, tool_name: str, arguments: Any, settings: CallSettings, run: RunSide
) -> ToolResult:
    """Call ``tool_name`` and return its result; chunks go to ``run.on_chunk`` as they come.

    Every adapter calls the fleet here. Never raises for a failed call. Cancelling the
    task that awaits this cancels the call at the tool (its TOOL_CANCEL is sent) before
    the cancellation goes on.
    """
    stream = manager.stream_tool(
        tool_name,
        arguments,
        run.label,
        settings.timeout,
        call_id=run.call_id,
        on_progress=run.on_progress,
        idle_timeout=settings.idle_timeout,
        max_duration=settings.max_duration,
        thread_id=settings.thread_id if run.thread_id is None else run.thread_id,
        trace_id=run.trace_id,
        user_id=settings.user_id if run.user_id is None else run.user_id,
        handlers=settings.handlers.over(run.handlers),
    )
    async with stream:
        async for chunk in stream:
            if run.on_chunk is not None:
                await maybe_await(run.on_chunk(chunk))
    assert stream.result is not None
    return stream.result


class RunPause:
    """A tool's question that pauses the framework's run for its caller.

    LangGraph (``interrupt``) and LlamaIndex (a workflow's wait for an event) pause a
    run by raising from inside the step, and run the step again from its start once the
    caller answers. So the waiting call is cancelled at its tool when the run pauses
    (the tool runs again on resume, and gets the answer at once), and the pause is
    raised again once the call has returned (:meth:`raise_if_paused`).

    Args:
        manager: The manager making the call.
        label: The call's label (``RunSide.label``), to cancel it by.
        pauses: The exception types by which the framework pauses a run.
        reason: Why the call is cancelled, for the tool's log.

    """

    def __init__(
        self,
        manager: ToolManager,
        label: str,
        pauses: type[BaseException] | tuple[type[BaseException], ...],
        reason: str,
    ) -> None:
        self.manager = manager
        self.label = label
        self.pauses = pauses
        self.reason = reason
        self.paused: BaseException | None = None
        """The pause raised by the question, once it was."""

    def asking(self, ask: Callable[[ElicitRequest, CallRef], Awaitable[Any]]) -> ElicitHandler:
        """An ``on_elicit`` handler that asks the run with ``ask``, which may pause it."""

        async def on_elicit(request: ElicitRequest, call: CallRef) -> Any:
            try:
                return await ask(request, call)
            except self.pauses as pause:
                self.paused = pause
                await self.manager.cancel(self.label, self.reason)
                raise

        return on_elicit

    def raise_if_paused(self) -> None:
        """Raise the run's pause again, if a question paused it (after the call returned)."""
        if self.paused is not None:
            raise self.paused


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
