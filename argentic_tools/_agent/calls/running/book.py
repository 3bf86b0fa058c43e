"""Calls in flight on the caller side: the pending table.

:class:`CallBook` looks a call's tool up and has it checked (:mod:`..settings.checks`), keeps one
:class:`~..pending.pending.Pending` per task id until its result arrives, keeps each tool
instance's :class:`~..pending.flow.Window`, and matches each incoming result, progress report
and chunk to the call that made it. The error results a call can end in without the
tool's help come from :mod:`..results.endings`. It does no messaging: :class:`~.delivery.Delivery`
sends, the :class:`~argentic_tools.ToolManager` routes what arrives.
"""

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ...._protocol.messages import (
    TaskErrorMessage,
    ToolPartialMessage,
    ToolProgressMessage,
    ToolResult,
)
from ...._protocol.participation import ToolAskMessage, ToolLogMessage
from ...fleet.info import Entry
from ...fleet.registry import ToolRegistry
from ...policy import ToolPolicy
from ..pending.flow import Window
from ..pending.pending import CallSpec, Pending
from ..results.endings import error, offline
from ..settings.checks import Refusal, check

REMEMBER_FINISHED = 10_000
"""Finished task ids remembered, to tell a late or duplicate result from a stranger's."""


class CallBook:
    """The pending calls of one manager, keyed by task id.

    Args:
        registry: Where tools are looked up.
        source: The manager's MQTT client id, the ``source`` of the results it builds.

    """

    def __init__(
        self,
        registry: ToolRegistry,
        source: str,
    ) -> None:
        self.registry = registry
        self.source = source
        self.open = False
        """Whether the manager takes calls: from its start to its close (a closed one sends
        no cancellations, and its journaled calls stay for the next)."""
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
        name, label = spec.name, spec.label
        entry = self.registry.lookup(name)
        if entry is None:
            suggestion = self.registry.closest(name)
            hint = f" Did you mean '{suggestion}'?" if suggestion else ""
            details: dict[str, Any] = {"available": self.registry.names()}
            if suggestion:
                details["suggestion"] = suggestion
            return error(
                self.source,
                label or task_id,
                "unknown",
                name,
                spec.arguments,
                f"Tool '{name}' not found.{hint}",
                "not_found",
                details=details,
            )
        checked = check(entry, spec, policy)
        if isinstance(checked, Refusal):
            info = entry.info
            return error(
                self.source,
                label or task_id,
                info.id,
                info.name,
                checked.arguments,
                checked.text,
                checked.code,
                status=checked.status,
                details=checked.details,
            )
        arguments = checked
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        pending = Pending(future, entry, task_id, arguments, spec, time.time())
        self.pending[task_id] = pending
        return pending

    async def take_slot(self, call: Pending) -> None:
        """Wait until the tool instance has room for one more task (see :class:`Window`)."""
        tool_id = call.tool_id
        window = self._windows.get(tool_id)
        if window is None:
            window = self._windows[tool_id] = Window(call.entry.max_concurrency)
        await window.acquire()
        call.window = window

    def window_of(self, tool_id: str) -> Window | None:
        """The window of a tool instance (None before its first call)."""
        return self._windows.get(tool_id)

    def admitted(self, entry: Entry) -> None:
        """A tool (re-)registered: its advertised limit applies from now on."""
        window = self._windows.get(entry.info.id)
        if window is not None:
            window.resize(entry.max_concurrency)

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

    def talk(self, message: ToolAskMessage | ToolLogMessage, tool_id: str | None) -> str | None:
        """Hand a tool's question or log record to its call; returns why it was dropped.

        Those of calls that ended, or that belong to another manager, are ignored; a
        question for a call made without handlers is dropped (its task told the tool
        that nobody answers).
        """
        pending = self.pending.get(message.task_id)
        if pending is None or pending.future.done():
            return None
        if pending.tool_id != tool_id:
            return (
                f"{message.type} for task {message.task_id} arrived on tool {tool_id}'s "
                f"topic, but the task went to {pending.tool_id}"
            )
        participation = pending.participation
        if participation is None:
            if isinstance(message, ToolAskMessage):
                return f"question for task {message.task_id}, whose caller answers none"
            return None
        if isinstance(message, ToolAskMessage):
            participation.asked(message)
        else:
            participation.logged(message)
        return None

    def fail(
        self, which: Callable[[Pending], bool], exception: BaseException | None = None
    ) -> None:
        """End the matching calls: offline (the default), or with ``exception``."""
        for pending in list(self.pending.values()):
            if not which(pending) or pending.future.done():
                continue
            if exception is not None:
                pending.future.set_exception(exception)
                continue
            pending.future.set_result(offline(self.source, pending))

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
