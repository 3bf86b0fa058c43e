"""The results a call ends with when its tool gives none, or gives one that needs checking.

Timeouts, lost tools, unsendable calls, broken streams, output that breaks its schema:
each becomes one error result that names the tool and the cause, built on the caller's
side with the manager's client id as its ``source``. Plain functions: the runner and
the pending table call them with what they hold.
"""

import asyncio
from typing import Any

from ...._errors import PayloadTooLargeError
from ...._protocol.content import blocks_in
from ...._protocol.encoding import constructed
from ...._protocol.messages import TaskErrorMessage, TaskResultMessage, TaskStatus, ToolResult
from ...._protocol.validation import describe_problems
from ..pending.flow import Window
from ..pending.pending import Pending, ToolGoneError
from ..pending.progress import BrokenStreamError, CallWatch


def timed_out(source: str, call: Pending, window: Window | None) -> TaskErrorMessage:
    """The result of a call whose wait ran out (``window``: its tool instance's, if any)."""
    watch = call.watch
    if watch is not None and watch.paused:
        return _paused_stream_timed_out(source, call, watch)
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


def _paused_stream_timed_out(source: str, call: Pending, watch: CallWatch) -> TaskErrorMessage:
    """A streamed call that timed out while its tool waited for the reader's credit."""
    loop = asyncio.get_running_loop()
    if watch.idle is not None and not watch.capped(loop):
        when = f"after {watch.idle:g} s without a chunk (its idle_timeout)"
    else:
        when = f"after {call.timeout:g} s"
    result = failed(
        source,
        call,
        f"Tool '{call.tool_name}' timed out {when} with its stream paused at its window of "
        f"{watch.window} chunks: the reader took {watch.read} of the {watch.delivered} "
        "chunks delivered and read no more, so the tool waited for it. Nothing was lost: "
        "the chunks delivered can still be read, in order. Read a stream as it comes, or "
        f"give the call a longer timeout (task {call.task_id}).",
        "timeout",
        status=TaskStatus.TIMEOUT,
    )
    result.details = {"delivered": watch.delivered, "read": watch.read, "window": watch.window}
    return result


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


def loss_cause(call: Pending, reconnected: bool) -> tuple[str, str]:
    """Why chunks of a stream never came, as far as the caller knows: (why, cause code).

    Args:
        call: The streamed call.
        reconnected: Whether the caller's or the tool's connection dropped since the
            task went out.

    """
    if reconnected:
        return (
            "a connection to the broker dropped during the call (this caller's or the "
            "tool's), and the chunks in flight then were lost with it",
            "reconnected",
        )
    watch = call.watch
    if watch is not None and watch.window is not None:
        return (
            "the broker did not deliver them although both connections stayed up and "
            f"the stream was paced by its reader (at most {watch.window} chunks in "
            "flight): the broker's queue for this caller (mosquitto: max_queued_messages) "
            "was full with other messages to it, such as other streams at once",
            "broker_queue",
        )
    return (
        "the broker dropped them although both connections stayed up: the tool does not "
        "pace its stream by its reader (it is older than protocol 3), so it sent faster "
        "than this caller took them in, and the broker's queue for this caller "
        "(mosquitto: max_queued_messages, 1,000 by default) overflowed",
        "unpaced",
    )


def assembled(
    source: str, call: Pending, result: ToolResult, reconnected: bool = False
) -> ToolResult:
    """A streamed call's result: the chunks put together, or an error if some were lost.

    ``reconnected``: whether a connection dropped during the call (see :func:`loss_cause`).
    """
    watch = call.watch
    if watch is None or not isinstance(result, TaskResultMessage) or not result.ok:
        return result
    sent = result.chunks or 0
    if watch.delivered < sent:
        lost = sent - watch.delivered
        why, cause = loss_cause(call, reconnected)
        broken = failed(
            source,
            call,
            f"Tool '{call.tool_name}' finished, but {lost} of its {sent} streamed chunks "
            f"(from chunk {watch.delivered} on) never reached the caller: {why}. "
            f"{watch.delivered} chunk(s) were delivered, in order (the last one received "
            f"was chunk {watch.highest}); those after the gap were not, to keep the "
            "order. Call it again to get the whole result.",
            "stream_interrupted",
        )
        broken.details = {
            "delivered": watch.delivered,
            "chunks": sent,
            "missing": watch.delivered,
            "last_seq": watch.highest,
            "cause": cause,
        }
        return broken
    if result.result_in_chunks:
        result.result = watch.collected
        found = blocks_in(watch.collected)
        if found is not None:  # chunks that are blocks: the value renders them
            result.content, result.result = found
        result.result_in_chunks = None
    return result


def broken(
    source: str, call: Pending, exc: BrokenStreamError, reconnected: bool = False
) -> TaskErrorMessage:
    """The result of a streamed call that ended before its tool's result (see ``exc``).

    A chunk that never came (``details`` name it ``missing``) is explained by
    :func:`loss_cause`; ``reconnected`` says whether a connection dropped meanwhile.
    """
    watch = call.watch
    delivered = 0 if watch is None else watch.delivered
    details: dict[str, Any] = {"delivered": delivered, **exc.details}
    why = ""
    if "missing" in exc.details:
        cause_text, cause = loss_cause(call, reconnected)
        last_seq = delivered - 1 if watch is None else watch.highest
        why = (
            f": {cause_text}. {delivered} chunk(s) were delivered, in order (the last "
            f"one received was chunk {last_seq})"
        )
        details.update(last_seq=last_seq, cause=cause)
    result = failed(
        source,
        call,
        f"Tool '{call.tool_name}' stream was interrupted: {exc.why}{why}; the call was "
        f"cancelled at the tool (task {call.task_id}).",
        "stream_interrupted",
    )
    result.details = details
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
