"""The results a call ends with when its tool gives none, or gives one that needs checking.

Timeouts, lost tools, unsendable calls, broken streams, output that breaks its schema:
each becomes one error result that names the tool and the cause, built on the caller's
side with the manager's client id as its ``source``. Plain functions: the runner and
the pending table call them with what they hold.
"""

import asyncio
from typing import Any

from ..._errors import PayloadTooLargeError
from ..._protocol.content import blocks_in
from ..._protocol.encoding import constructed
from ..._protocol.messages import TaskErrorMessage, TaskResultMessage, TaskStatus, ToolResult
from ..._protocol.validation import describe_problems
from .flow import Window
from .pending import Pending, ToolGoneError
from .progress import BrokenStreamError, CallWatch


def timed_out(source: str, call: Pending, window: Window | None) -> TaskErrorMessage:
    """The result of a call whose wait ran out (``window``: its tool instance's, if any)."""
    watch = call.watch
    if watch is not None and (watch.idle is not None or call.timeout is None):
        return _long_call_timed_out(source, call, watch)
    if call.window is None and window is not None and window.capacity is not None:
        return failed(
            source,
            call,
            f"Tool '{call.tool_name}' timed out after {call.timeout:g} s before it could be "
            f"sent: the tool had its {window.capacity} tasks (its max_concurrency) in "
            f"progress the whole time (task {call.task_id}, not run).",
            "timeout",
            status=TaskStatus.TIMEOUT,
        )
    return failed(
        source,
        call,
        f"Tool '{call.tool_name}' timed out after {call.timeout:g} s (task {call.task_id}).",
        "timeout",
        status=TaskStatus.TIMEOUT,
    )


def offline(source: str, call: Pending) -> TaskErrorMessage:
    """The result of a call whose tool's process disconnected before answering."""
    return error(
        source,
        call.label or call.task_id,
        call.tool_id,
        call.tool_name,
        None,
        f"Tool '{call.tool_name}' went offline (its process disconnected) before answering; "
        "it may or may not have run the task, so retry only if running it twice is harmless.",
        "tool_offline",
        details={"executed": "unknown"},
    )


def _long_call_timed_out(source: str, call: Pending, watch: CallWatch) -> TaskErrorMessage:
    loop = asyncio.get_running_loop()
    if watch.capped(loop):
        why = f"it ran for its max_duration of {call.timeout:g} s"
    elif watch.reports:
        why = f"no progress for {watch.idle:g} s (its idle_timeout) after {watch.reports} report(s)"
    else:
        why = (
            f"no progress for {watch.idle:g} s (its idle_timeout); the tool sent no "
            "progress report at all: it may not report progress, so give it a "
            "timeout instead"
        )
    return failed(
        source,
        call,
        f"Tool '{call.tool_name}' timed out: {why} (task {call.task_id}).",
        "timeout",
        status=TaskStatus.TIMEOUT,
    )


def failed(
    source: str, call: Pending, text: str, code: str, *, status: TaskStatus = TaskStatus.FAILED
) -> TaskErrorMessage:
    """An error result for ``call``."""
    return error(
        source,
        call.label or call.task_id,
        call.tool_id,
        call.tool_name,
        call.arguments,
        text,
        code,
        status=status,
    )


def undeliverable(source: str, call: Pending, exc: Exception) -> TaskErrorMessage:
    """The result of a call that could not reach its tool, by why."""
    name = call.tool_name
    if isinstance(exc, ToolGoneError):
        return failed(source, call, f"Tool '{name}' went offline before answering.", "tool_offline")
    if isinstance(exc, PayloadTooLargeError):
        text = f"Tool '{name}': the call is too large to send: {exc}"
        return failed(source, call, text, "invalid_arguments")
    return failed(source, call, f"Tool '{name}' could not be called: {exc}", "execution_error")


def assembled(source: str, call: Pending, result: ToolResult) -> ToolResult:
    """A streamed call's result: the chunks put together, or an error if some were lost."""
    watch = call.watch
    if watch is None or not isinstance(result, TaskResultMessage) or not result.ok:
        return result
    sent = result.chunks or 0
    if watch.delivered < sent:
        lost = sent - watch.delivered
        broken = failed(
            source,
            call,
            f"Tool '{call.tool_name}' finished, but {lost} of its {sent} streamed chunks "
            f"(from chunk {watch.delivered} on) were lost, most likely in a broker "
            "outage; the chunks after the gap were not delivered, to keep the order. "
            "Call it again to get the whole result.",
            "stream_interrupted",
        )
        broken.details = {"delivered": watch.delivered, "chunks": sent}
        return broken
    if result.result_in_chunks:
        result.result = watch.collected
        found = blocks_in(watch.collected)
        if found is not None:  # chunks that are blocks: the value renders them
            result.content, result.result = found
        result.result_in_chunks = None
    return result


def broken(source: str, call: Pending, exc: BrokenStreamError) -> TaskErrorMessage:
    """The result of a streamed call that ended before its tool's result (see ``exc``)."""
    result = failed(
        source,
        call,
        f"Tool '{call.tool_name}' stream was interrupted: {exc.why}; the call was "
        f"cancelled at the tool (task {call.task_id}).",
        "stream_interrupted",
    )
    watch = call.watch
    delivered = 0 if watch is None else watch.delivered
    result.details = {"delivered": delivered, **exc.details}
    return result


def checked(source: str, call: Pending, result: ToolResult) -> ToolResult:
    """The result, or an error when it breaks the tool's output schema or has no error."""
    if isinstance(result, TaskResultMessage) and result.ok:
        validator = call.entry.output_validator
        if validator is not None:
            problems = validator.problems(result.result)
            if problems:
                return error(
                    source,
                    call.label or call.task_id,
                    call.tool_id,
                    call.tool_name,
                    call.arguments,
                    f"Tool '{call.tool_name}' returned output that does not match its "
                    f"output schema: {describe_problems(problems)}",
                    "invalid_output",
                    details=problems,
                )
    elif isinstance(result, TaskResultMessage):
        # A peer reported a failure without an error text: make it a proper error.
        return failed(
            source,
            call,
            f"Tool '{call.tool_name}' failed with status {result.status.value}.",
            "execution_error",
            status=result.status,
        )
    if call.label is not None:
        result.task_id = call.label
    return result


def error(
    source: str,
    task_id: str,
    tool_id: str,
    tool_name: str,
    arguments: Any,
    text: str,
    code: str,
    *,
    status: TaskStatus = TaskStatus.FAILED,
    details: Any = None,
) -> TaskErrorMessage:
    """An error result built on this side (the tool never answered this way)."""
    return constructed(
        TaskErrorMessage,
        {
            "source": source,
            "task_id": task_id,
            "tool_id": tool_id,
            "tool_name": tool_name,
            "arguments": arguments if isinstance(arguments, dict) else None,
            "status": status,
            "error": text,
            "error_code": code,
            "details": details,
        },
    )
