"""The call methods of :class:`ToolManager`: one call, a stream, a batch, a cancellation.

Each turns its arguments into a :class:`CallSpec` (reading every setting before
anything is sent) and hands it to the manager's :class:`CallRunner`, which checks,
sends and awaits it and always returns its one result.
"""

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from .._protocol.messages import CallContext, ToolCallRequest, ToolResult
from .calls import call_field
from .pending import CallSpec
from .policy import ToolPolicy
from .progress import BatchProgressCallback, ChunkSink, ProgressCallback, for_call, long_call
from .running import CallRunner
from .streams import ToolStream

_CallArguments = tuple[
    str,
    Any,
    str | None,
    float | None,
    str | None,
    CallContext | None,
    ProgressCallback | None,
    float | None,
    float | None,
]
"""One call as :meth:`CallMethods.execute_tool` takes it, in its parameters' order."""


class CallMethods:
    """Calling tools; :class:`ToolManager` inherits these, and the attributes below."""

    default_timeout: int | float
    policy: ToolPolicy
    _runner: CallRunner

    async def execute_tool(
        self,
        tool_name_or_id: str,
        arguments: dict[str, Any],
        task_id_override: str | None = None,
        timeout: float | None = None,
        *,
        call_id: str | None = None,
        context: CallContext | None = None,
        on_progress: ProgressCallback | None = None,
        idle_timeout: float | None = None,
        max_duration: float | None = None,
    ) -> ToolResult:
        """Call a tool and wait for its result; never raises for a failed call.

        Args:
            tool_name_or_id: Tool name, or a tool id to pick one instance.
            arguments: Arguments object; checked against the tool's JSON Schema
                before anything is published. It is read again when the task goes
                out (and for a resend), so leave it unchanged until the call returns.
            task_id_override: The caller's label for this call, returned as the
                result's ``task_id``. The task on the wire always gets a fresh id:
                labels repeat (LLM call ids do), and a reused wire id would be
                answered with the earlier call's recorded result.
            timeout: Seconds to wait; ``default_timeout`` when None (and no
                ``idle_timeout`` is given). Zero means no time at all (the call
                times out without being sent).
            call_id: The caller's id for the call, returned unchanged.
            context: Thread, trace and user ids, delivered to the tool.
            on_progress: Called as ``on_progress(progress, total, message)`` for each
                progress report of the tool, in order, before this returns; a plain
                function or a coroutine function.
            idle_timeout: For long work: the call times out after this many seconds
                without a progress report (each report starts it again) instead of
                after ``timeout``. Only for tools that report progress.
            max_duration: With ``idle_timeout``: the absolute limit that no report
                extends (``timeout`` is used when this is None; neither: no limit).

        Returns:
            A :class:`TaskResultMessage` on success; otherwise a
            :class:`TaskErrorMessage` whose ``error`` names the tool and the
            cause and whose ``error_code`` is one of ``not_found``,
            ``not_enabled``, ``invalid_arguments``, ``invalid_output``,
            ``execution_error``, ``timeout``, ``tool_offline`` or ``cancelled``.

        """
        spec = self._spec(
            tool_name_or_id,
            arguments,
            task_id_override,
            timeout,
            call_id,
            context,
            on_progress,
            idle_timeout,
            max_duration,
        )
        return await self._runner.run(spec, self.policy)

    def _spec(
        self,
        tool_name_or_id: str,
        arguments: Any,
        task_id_override: str | None,
        timeout: float | None,
        call_id: str | None,
        context: CallContext | None,
        on_progress: ProgressCallback | None,
        idle_timeout: float | None,
        max_duration: float | None,
        on_chunk: ChunkSink | None = None,
    ) -> CallSpec:
        """One call as :meth:`execute_tool` takes it; ValueError for a bad idle timeout."""
        watch = None
        wait: float | None = self.default_timeout if timeout is None else timeout
        if (
            on_progress is not None
            or on_chunk is not None
            or idle_timeout is not None
            or max_duration is not None
        ):
            watch, wait = long_call(
                on_progress, on_chunk, timeout, idle_timeout, max_duration, wait
            )
        return CallSpec(tool_name_or_id, arguments, task_id_override, wait, call_id, context, watch)

    def stream_tool(
        self,
        tool_name_or_id: str,
        arguments: dict[str, Any],
        task_id_override: str | None = None,
        timeout: float | None = None,
        *,
        call_id: str | None = None,
        context: CallContext | None = None,
        on_progress: ProgressCallback | None = None,
        idle_timeout: float | None = None,
        max_duration: float | None = None,
    ) -> ToolStream:
        """Call a tool and receive its result in chunks, as the tool sends them.

        ``async for chunk in manager.stream_tool(name, args)`` yields each chunk in
        order, once; afterwards the stream's ``result`` holds the final result (for
        a generator tool, the list of all chunks). A failed call ends the iteration
        and its error is the ``result``; nothing raises. Leaving the loop early (or
        the stream's ``async with`` block) cancels the call at the tool. A tool
        that does not stream yields nothing and gives its result. The arguments
        are those of :meth:`execute_tool`.
        """
        stream = ToolStream(self._call)
        stream.spec = self._spec(
            tool_name_or_id,
            arguments,
            task_id_override,
            timeout,
            call_id,
            context,
            on_progress,
            idle_timeout,
            max_duration,
            stream.chunk_arrived,
        )
        return stream

    async def cancel(self, task_id: str, reason: str | None = None) -> bool:
        """Cancel one pending call: its caller gets status ``cancelled`` and its tool stops.

        Args:
            task_id: The call's task id, or the ``task_id_override`` it was made with.
            reason: Why, for the tool's log and the result's message.

        Returns:
            False when no such call is pending (it ended, or never existed).

        """
        return await self._runner.cancel(task_id, reason)

    def _call(self, spec: CallSpec) -> Coroutine[Any, Any, ToolResult]:
        # The runner's coroutine itself, not one awaiting it: a frame less per call.
        return self._runner.run(spec, self.policy)

    async def get_tool_results(
        self, tool_call_requests: Sequence[ToolCallRequest]
    ) -> tuple[list[ToolResult], bool]:
        """Run several calls concurrently.

        Returns:
            The results in request order, and whether any of them failed.

        """
        results = await self._batch(
            [
                (
                    request.tool_id,
                    request.arguments,
                    None,
                    request.timeout,
                    request.call_id,
                    request.context,
                    request.on_progress,
                    request.idle_timeout,
                    request.max_duration,
                )
                for request in tool_call_requests
            ]
        )
        return list(results), any(not r.ok for r in results)

    async def execute_tools(
        self,
        calls: Sequence[Any],
        thread_id: str | None = None,
        trace_id: str | None = None,
        *,
        user_id: str | None = None,
        timeout: float | None = None,
        on_progress: BatchProgressCallback | None = None,
        idle_timeout: float | None = None,
        max_duration: float | None = None,
    ) -> list[ToolResult]:
        """Run parsed tool calls (``call_id``, ``tool_name``, ``arguments``) concurrently.

        Each item may be an object with those attributes or a mapping with
        those keys (``toolName``/``callId`` as ART writes them work too).
        Returns one result per call, in order, each carrying its ``call_id``;
        a failure is a result, never an exception. ``on_progress`` is called as
        ``on_progress(call_id, progress, total, message)`` for every call's reports;
        ``idle_timeout`` and ``max_duration`` apply to each call as in
        :meth:`execute_tool`.
        """
        context = CallContext(thread_id=thread_id, trace_id=trace_id, user_id=user_id)
        return await self._batch(
            [
                (
                    call_field(call, "tool_name", "toolName"),
                    call_field(call, "arguments", "arguments"),
                    None,
                    timeout,
                    call_field(call, "call_id", "callId"),
                    context,
                    for_call(on_progress, call_field(call, "call_id", "callId")),
                    idle_timeout,
                    max_duration,
                )
                for call in calls
            ]
        )

    async def _batch(self, batch: list[_CallArguments]) -> list[ToolResult]:
        """Run calls concurrently, each as :meth:`execute_tool` would; results in order."""
        # Every call's settings are read before any starts: a bad idle_timeout raises
        # before anything is sent.
        specs = [self._spec(*arguments) for arguments in batch]
        if type(self).execute_tool is not CallMethods.execute_tool:
            # A subclass's own execute_tool sees every call, batched ones too.
            overridden = (
                self.execute_tool(
                    *call[:4],
                    call_id=call[4],
                    context=call[5],
                    on_progress=call[6],
                    idle_timeout=call[7],
                    max_duration=call[8],
                )
                for call in batch
            )
            return list(await asyncio.gather(*overridden))
        # Otherwise each call runs as the runner's own coroutine, without an execute_tool
        # frame around it (~0.35 KB a call): thousands at once are the case this serves.
        return list(await asyncio.gather(*(self._call(spec) for spec in specs)))
