"""Calls in flight on the caller side: checks, the task on the wire, the pending table.

:class:`CallBook` checks a call against the registry and the policy, writes its
task, keeps one :class:`~.pending.Pending` per task id until its result arrives,
and matches each incoming result to the call that made it. The error results a
call can end in without the tool's help come from :class:`~.endings.CallEndings`.
It does no messaging: the :class:`~argentic_tools.ToolManager` does.
"""

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter

from .._protocol.encoding import encode_fields
from .._protocol.messages import (
    CallContext,
    TaskErrorMessage,
    TaskMessage,
    TaskStatus,
    ToolPartialMessage,
    ToolProgressMessage,
    ToolResult,
)
from .._protocol.validation import describe_problems
from .arguments import unsendable, utf8_safe, without_skipped_nulls
from .endings import CallEndings
from .flow import Window, advertised_capacity
from .pending import CallSpec, Pending, UnsendableTaskError
from .policy import ToolPolicy
from .registry import Entry, ToolRegistry

_CONTEXT = TypeAdapter(CallContext)

REMEMBER_FINISHED = 10_000
"""Finished task ids remembered, to tell a late or duplicate result from a stranger's."""


class CallBook(CallEndings):
    """The pending calls of one manager, keyed by task id.

    Args:
        registry: Where tools are looked up.
        source: The manager's MQTT client id, the ``source`` of what it builds.
        reply_topic: Where a tool answers this manager, by tool id (None: on the
            shared response topic).

    """

    def __init__(
        self,
        registry: ToolRegistry,
        source: str,
        reply_topic: Callable[[str], str] | None = None,
    ) -> None:
        self.registry = registry
        self.source = source
        self.reply_topic = reply_topic
        """The manager's reply topic for a tool id (None: tools answer on the shared one)."""
        self.pending: dict[str, Pending] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        # Calls sent on a connection before ``_lost_epoch``, by tool id, not yet re-sent.
        self._lost: dict[str, list[Pending]] = {}
        self._lost_epoch = 0
        self._windows: dict[str, Window] = {}

    def prepare(self, spec: CallSpec, policy: ToolPolicy) -> "Pending | TaskErrorMessage":
        """Check a call and register it as pending, or say why it cannot be sent.

        The task id on the wire is always fresh: ids a caller or a model chooses
        (``task_id_override``, LLM call ids) repeat, and a tool answers a task id it
        has seen with its recorded reply. The override is a label on the result.
        """
        task_id = str(uuid.uuid4())
        name, arguments, label, wait = spec.name, spec.arguments, spec.label, spec.wait
        context = spec.context
        entry = self.registry.lookup(name)
        if entry is None:
            suggestion = self.registry.closest(name)
            hint = f" Did you mean '{suggestion}'?" if suggestion else ""
            details: dict[str, Any] = {"available": self.registry.names()}
            if suggestion:
                details["suggestion"] = suggestion
            return self.error(
                label or task_id,
                "unknown",
                name,
                arguments,
                f"Tool '{name}' not found.{hint}",
                "not_found",
                details=details,
            )
        info = entry.info
        thread_id = context.thread_id if context else None
        if not policy.is_enabled(info.name, thread_id):
            return self.error(
                label or task_id,
                info.id,
                info.name,
                arguments,
                f"Tool '{info.name}' is not enabled for thread '{thread_id}'.",
                "not_enabled",
            )
        if not isinstance(arguments, dict):
            kind = "a JSON string" if isinstance(arguments, str) else type(arguments).__name__
            return self.error(
                label or task_id,
                info.id,
                info.name,
                arguments,
                f"Tool '{info.name}': arguments must be a JSON object mapping parameter names "
                f"to values, but {kind} came; pass the object itself, not a string.",
                "invalid_arguments",
                details=[{"path": "$", "message": "expected an object", "got": kind}],
            )
        problem = unsendable(arguments)
        if problem is not None:
            return self.error(
                label or task_id,
                info.id,
                info.name,
                None,
                f"Tool '{info.name}': invalid arguments: {problem}",
                "invalid_arguments",
                details=[{"path": "$", "message": problem}],
            )
        context_problem = _unsendable_context(context)
        if context_problem is not None:
            return self.error(
                label or task_id,
                info.id,
                info.name,
                arguments,
                f"Tool '{info.name}': {context_problem}",
                "invalid_arguments",
            )
        problems = entry.validator.problems(arguments)
        if problems:
            # OpenAI's strict mode makes every optional parameter required and nullable,
            # so a model sends null for a default it skips: null there means "default".
            arguments = without_skipped_nulls(arguments, info.input_schema, problems)
            problems = entry.validator.problems(arguments)
        if problems:
            return self.error(
                label or task_id,
                info.id,
                info.name,
                arguments,
                f"Tool '{info.name}': invalid arguments: {describe_problems(problems)}",
                "invalid_arguments",
                details=problems,
            )
        if wait is not None and wait <= 0:
            return self.error(
                label or task_id,
                info.id,
                info.name,
                arguments,
                f"Tool '{info.name}' timed out: the timeout was {wait:g} s, "
                "so the call was not sent.",
                "timeout",
                status=TaskStatus.TIMEOUT,
            )
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        pending = Pending(future, entry, task_id, arguments, spec, time.time())
        self.pending[task_id] = pending
        return pending

    def encoded(self, call: Pending) -> bytes:
        """The task of ``call`` as JSON: the same bytes each time, to send it again.

        Built when the task's turn to be published comes, and never kept: the model
        would cost ~1.5 KB per pending call and the bytes ~0.5 KB, and with thousands
        of calls queued for the connection's window of unacknowledged publishes, each
        held them while it waited. Everything is rebuilt from what the call keeps anyway.

        Raises:
            UnsendableTaskError: JSON cannot carry a value (the checks before let
                through only what it can: this is a last guard, e.g. for the context).

        """
        # Every value here is already checked; unset fields keep their defaults.
        spec, info, watch, wait, now = (
            call.spec,
            call.entry.info,
            call.watch,
            call.wait,
            call.timestamp,
        )
        try:
            return encode_fields(
                TaskMessage,
                {
                    "source": self.source,
                    "timestamp": now,
                    "message_id": call.task_id,
                    "task_id": call.task_id,
                    "tool_id": info.id,
                    "tool_name": info.name,
                    "arguments": call.arguments,
                    "call_id": spec.call_id,
                    "timeout_seconds": None if wait is None else float(wait),
                    "deadline": None if wait is None else now + wait,
                    # As the declared type writes it: a subclass's own fields stay home.
                    "context": (
                        None
                        if spec.context is None
                        else _CONTEXT.dump_python(spec.context, exclude_none=True)
                    ),
                    "report_progress": True if watch is not None and watch.wants_progress else None,
                    "stream": True if watch is not None and watch.streams else None,
                    "traceparent": spec.traceparent,
                    "tracestate": spec.tracestate,
                    # Plain Argentic tools answer on the shared topic whatever it says.
                    "reply_to": (
                        None
                        if self.reply_topic is None or call.entry.protocol is None
                        else self.reply_topic(info.id)
                    ),
                },
            )
        except (ValueError, TypeError, RecursionError) as exc:
            raise UnsendableTaskError(str(exc).splitlines()[0][:200]) from None

    async def take_slot(self, call: Pending) -> None:
        """Wait until the tool instance has room for one more task (see :class:`Window`)."""
        tool_id = call.tool_id
        window = self._windows.get(tool_id)
        if window is None:
            window = self._windows[tool_id] = Window(advertised_capacity(call.entry))
        await window.acquire()
        call.window = window

    def window_of(self, tool_id: str) -> Window | None:
        """The window of a tool instance (None before its first call)."""
        return self._windows.get(tool_id)

    def admitted(self, entry: Entry) -> None:
        """A tool (re-)registered: its advertised limit applies from now on."""
        window = self._windows.get(entry.info.id)
        if window is not None:
            window.resize(advertised_capacity(entry))

    def find(self, task_id: str) -> Pending | None:
        """The pending call with this wire task id, or with this label."""
        call = self.pending.get(task_id)
        if call is None:
            call = next((p for p in self.pending.values() if p.label == task_id), None)
        return call

    def forget(self, task_id: str) -> None:
        """The call ended: drop it, and remember its id to recognise a late result."""
        call = self.pending[task_id]
        if call.window is not None:
            call.window.release()
            call.window = None
        del self.pending[task_id]
        self._finished[task_id] = None
        if len(self._finished) > REMEMBER_FINISHED:
            self._finished.popitem(last=False)

    def resolve(self, result: ToolResult, tool_id: str | None) -> tuple[str, bool] | None:
        """Hand ``result`` (arrived on ``tool_id``'s topic) to its call.

        Returns:
            None when it was delivered or belongs to nobody here; otherwise why it was
            dropped, and whether that is routine: a late or repeated answer (a call that
            timed out or was closed, a re-sent task answered twice) is; one on another
            tool's topic is not.

        """
        pending = self.pending.get(result.task_id)
        if pending is None or pending.future.done():
            if result.task_id in self._finished or pending is not None:
                return f"late or duplicate result for task {result.task_id}", True
            # Normal when several managers share a broker: it answers another's call.
            return None
        if pending.tool_id != tool_id:
            return (
                f"result for task {result.task_id} arrived on "
                f"tool {tool_id}'s topic, but the task went to {pending.tool_id}",
                False,
            )
        _share_values(result, pending)
        pending.future.set_result(result)
        return None

    def update(
        self, message: ToolProgressMessage | ToolPartialMessage, tool_id: str | None
    ) -> str | None:
        """Hand a progress report or chunk to its call; returns why it was dropped, if not routine.

        Reports for calls that ended or that belong to another manager are ignored.
        """
        pending = self.pending.get(message.task_id)
        if pending is None or pending.watch is None or pending.future.done():
            return None
        if pending.tool_id != tool_id:
            return (
                f"{message.type} for task {message.task_id} arrived on tool {tool_id}'s "
                f"topic, but the task went to {pending.tool_id}"
            )
        pending.watch.arrived(message)
        return None

    def fail(
        self, which: Callable[[Pending], bool], exception: BaseException | None = None
    ) -> None:
        """End the matching calls: offline (the default), or with ``exception``."""
        for task_id, pending in list(self.pending.items()):
            if not which(pending) or pending.future.done():
                continue
            if exception is not None:
                pending.future.set_exception(exception)
                continue
            pending.future.set_result(
                self.error(
                    pending.label or task_id,
                    pending.tool_id,
                    pending.tool_name,
                    None,
                    f"Tool '{pending.tool_name}' went offline (its process disconnected) "
                    "before answering; it may or may not have run the task, so retry only "
                    "if running it twice is harmless.",
                    "tool_offline",
                    details={"executed": "unknown"},
                )
            )

    def lost(self, entry: Entry) -> list[Pending]:
        """Calls to ``entry``'s tool sent on an earlier connection than its registration's.

        A broker restart loses the tasks and results it held, and a tool's
        re-registration is the first sign it can receive again. Each call is
        returned once; plain Argentic tools (no epoch) keep no task record and are
        never sent a task twice.
        """
        epoch = entry.epoch
        if epoch is None:
            return []
        if self._lost_epoch != epoch:
            # One pass over the pending calls per connection, not one per tool: after a
            # broker restart every tool re-registers.
            self._lost_epoch = epoch
            self._lost = {}
            for pending in self.pending.values():
                if 0 < pending.sent_on < epoch:
                    self._lost.setdefault(pending.tool_id, []).append(pending)
        lost = [p for p in self._lost.pop(entry.info.id, ()) if not p.future.done()]
        for pending in lost:
            pending.sent_on = epoch
        return lost

    def sent_to(self, tool_id: str) -> list[Pending]:
        """Calls published to ``tool_id`` that are still waiting for their result."""
        return [
            p
            for p in self.pending.values()
            if p.tool_id == tool_id and p.sent_on > 0 and not p.future.done()
        ]

    def drop_lost(self, tool_id: str) -> None:
        """Forget the calls to re-send to a tool that left, and its window."""
        self._lost.pop(tool_id, None)
        window = self._windows.pop(tool_id, None)
        if window is not None:
            # Its waiters find the tool gone when they look; wake them all now.
            window.resize(None)

    def timed_out(self, call: Pending) -> TaskErrorMessage:
        """The result of a call whose wait ran out."""
        watch = call.watch
        if watch is not None and (watch.idle is not None or call.wait is None):
            return self._long_call_timed_out(call, watch)
        window = self._windows.get(call.tool_id)
        if call.window is None and window is not None and window.capacity is not None:
            return self.failed(
                call,
                f"Tool '{call.tool_name}' timed out after {call.wait:g} s before it could be "
                f"sent: the tool had its {window.capacity} tasks (its max_concurrency) in "
                f"progress the whole time (task {call.task_id}, not run).",
                "timeout",
                status=TaskStatus.TIMEOUT,
            )
        return self.failed(
            call,
            f"Tool '{call.tool_name}' timed out after {call.wait:g} s (task {call.task_id}).",
            "timeout",
            status=TaskStatus.TIMEOUT,
        )


def call_field(call: Any, name: str, alias: str) -> Any:
    """``name`` (or its ART spelling ``alias``) of a parsed tool call, object or mapping."""
    if isinstance(call, Mapping):
        return call.get(name, call.get(alias))
    return getattr(call, name, getattr(call, alias, None))


def _share_values(result: ToolResult, pending: Pending) -> None:
    """Let ``result`` hold its call's own objects where it carries equal values.

    A parsed result has fresh copies of the type, the ids and the tool's name and
    source, all of which the call already holds: with thousands of calls in flight and
    their results kept until the batch ends, sharing them saves ~0.35 KB per result.
    Only equal strings are replaced, so nothing a caller reads changes (the echoed
    arguments stay the result's own: sharing the caller's dict would tie the two).
    """
    fields = result.__dict__
    for name, own in (
        ("type", "TASK"),
        ("task_id", pending.task_id),
        ("tool_id", pending.tool_id),
        ("tool_name", pending.tool_name),
        ("source", pending.source),
    ):
        value = fields.get(name)
        if value is not own and value == own and type(value) is type(own):
            fields[name] = own


def _unsendable_context(context: CallContext | None) -> str | None:
    """Why the protocol's fields of ``context`` cannot be sent (UTF-8 cannot carry one)."""
    if context is None:
        return None
    for name in CallContext.model_fields:
        value = getattr(context, name)
        if isinstance(value, str) and not utf8_safe(value):
            return f"the context's {name} is a string that UTF-8 cannot carry (a lone surrogate)"
    return None
