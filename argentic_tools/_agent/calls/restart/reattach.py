"""Calls picked up again after a restart: :class:`Reattacher`.

A manager started with a journal that holds calls still ``running`` (its previous
process ended before their results came) waits for each of them again, under its
original deadline:

- its tool instance is registered again by the same process that took the task: the
  task is sent again under its own id. A tool runs a task id once (see the tool side's
  task record): it sends the result it kept, ignores a task still running (its result
  comes when it is done), or runs a task it never received.
- its tool instance is gone, or now served by another process (whose record does not
  know the task): the call ends ``tool_offline``, saying it may or may not have run.
- its deadline passed while nobody waited: it ends ``timeout``.

Each outcome goes to the journal, to ``manager.result(task_id)`` and to the iterator of
``manager.reattached()``. Reattached calls have no handlers of their own: a tool's
question is answered by the manager's default handlers, if it has some.
"""

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from ...._protocol.messages import (
    CallContext,
    TaskErrorMessage,
    TaskResultMessage,
    TaskStatus,
    ToolResult,
)
from ...fleet.registry import ToolRegistry
from ...records.journal import CallJournal, JournaledCall
from ..pending.pending import Pending
from ..results.endings import error

REATTACH_SETTLE_SECONDS = 5.0
"""How long a reattached call waits for its tool to register again after the start."""


class Reattacher:
    """The calls a manager picked up from its journal, and their outcomes.

    Args:
        journal: The manager's journal.
        registry: Where the calls' tools are looked up.
        source: The manager's client id, the ``source`` of results built here.
        resume: Sends a reattached call's task again and awaits its result.

    """

    def __init__(
        self,
        journal: CallJournal,
        registry: ToolRegistry,
        source: str,
        resume: Callable[[JournaledCall, float | None], Coroutine[Any, Any, ToolResult]],
    ) -> None:
        self._journal = journal
        self._registry = registry
        self._source = source
        self._resume = resume
        self.outcomes: dict[str, asyncio.Future[ToolResult]] = {}
        """The outcome of each reattached call, by task id and by label."""
        self._ended: asyncio.Queue[ToolResult] = asyncio.Queue()
        self._left = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Pick up the journal's unfinished calls; returns how many."""
        calls = await self._journal.unfinished()
        if not calls:
            return 0
        await self._journal.resumed([call.task_id for call in calls])
        loop = asyncio.get_running_loop()
        for call in calls:
            outcome: asyncio.Future[ToolResult] = loop.create_future()
            self.outcomes[call.task_id] = outcome
            if call.label is not None:
                self.outcomes[call.label] = outcome
            task = loop.create_task(self._wait_again(call, outcome), name=f"reattach:{call.key}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._left = len(calls)
        return len(calls)

    async def _wait_again(self, call: JournaledCall, outcome: "asyncio.Future[ToolResult]") -> None:
        try:
            result = await self._outcome(call)
        except asyncio.CancelledError:
            outcome.cancel()
            raise
        self._journal.ended(call.task_id, result.status.value, dumped(result))
        outcome.set_result(result)
        await self._ended.put(result)

    async def _outcome(self, call: JournaledCall) -> ToolResult:
        deadline = call.deadline
        remaining = None if deadline is None else deadline - time.time()
        if remaining is not None and remaining <= 0:
            return self._ended_here(
                call,
                f"Tool '{call.tool_name}' call timed out while its caller was away (its "
                f"deadline passed {-remaining:.1f} s before the caller came back); the tool "
                "may or may not have run it.",
                "timeout",
                TaskStatus.TIMEOUT,
            )
        patience = (
            REATTACH_SETTLE_SECONDS
            if remaining is None
            else min(remaining, REATTACH_SETTLE_SECONDS)
        )
        entry = self._registry.get(call.tool_id)
        if entry is None or entry.info.source != call.tool_source:
            try:
                async with asyncio.timeout(patience):
                    while entry is None or entry.info.source != call.tool_source:
                        await self._registry.changed()
                        entry = self._registry.get(call.tool_id)
            except TimeoutError:
                return self._ended_here(
                    call,
                    f"Tool '{call.tool_name}' is gone: the process that took the task "
                    f"({call.tool_source}) did not come back while its caller was away; it "
                    "may or may not have run the task, so retry only if running it twice is "
                    "harmless.",
                    "tool_offline",
                )
        remaining = None if deadline is None else max(deadline - time.time(), 0.0)
        return await self._resume(call, remaining)

    def _ended_here(
        self,
        call: JournaledCall,
        text: str,
        code: str,
        status: TaskStatus = TaskStatus.FAILED,
    ) -> TaskErrorMessage:
        result = error(
            self._source,
            call.key,
            call.tool_id,
            call.tool_name,
            call.arguments,
            text,
            code,
            status=status,
            details={"executed": "unknown", "reattached": True},
        )
        result.call_id = call.call_id
        return result

    async def result(self, key: str) -> ToolResult:
        """The outcome of the call with this label or task id (see ``manager.result``).

        Raises:
            KeyError: The journal knows no such call, or it runs but nobody waits for it.

        """
        outcome = self.outcomes.get(key)
        if outcome is not None:
            return await asyncio.shield(outcome)
        found = await self._journal.find(key)
        ended = None if found is None else result_of(found)
        if ended is None:
            raise KeyError(f"no ended or reattached call {key!r} in the journal")
        return ended

    async def results(self) -> AsyncIterator[ToolResult]:
        """Each reattached call's outcome as it ends, until all have."""
        while self._left > 0:
            result = await self._ended.get()
            self._left -= 1
            yield result

    async def close(self) -> None:
        """Stop waiting (the manager closes): calls not ended stay running in the journal."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task


def result_of(call: JournaledCall) -> ToolResult | None:
    """The result a journaled call ended with (None while it runs)."""
    if call.result is None:
        return None
    if "error" in call.result:
        return TaskErrorMessage.model_validate(call.result)
    return TaskResultMessage.model_validate(call.result)


def context_of(call: JournaledCall) -> CallContext | None:
    """The journaled call's context, as the task carries it."""
    return None if call.context is None else CallContext.model_validate(call.context)


def dumped(result: ToolResult) -> str:
    """A result as the journal keeps it: its JSON text."""
    return result.__pydantic_serializer__.to_json(result, exclude_none=True).decode()


def journaled(call: Pending, caller: str) -> JournaledCall:
    """What the journal keeps of ``call`` (made by ``caller``) before its task goes out."""
    spec = call.spec
    return JournaledCall(
        task_id=call.task_id,
        label=spec.label,
        call_id=spec.call_id,
        tool_name=call.tool_name,
        tool_id=call.tool_id,
        tool_source=call.source,
        arguments=call.arguments,
        context=None if spec.context is None else spec.context.model_dump(exclude_none=True),
        started_at=call.timestamp,
        timeout=call.timeout,
        caller=caller,
    )
