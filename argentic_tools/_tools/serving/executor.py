"""Running one task a tool received, and answering it: exactly one reply per task.

The reply is the tool's result, or an error naming the tool and the cause: invalid
arguments, an exception, a result that cannot be serialised or is too large, a caller
whose timeout ran out while the task waited for a slot, a shutdown. Each task is served
inside its span and counted in the endpoint's stats and metrics however it ends.

A :class:`ToolEndpoint` owns one :class:`TaskExecutor`: the endpoint decides which
tasks run (ids, duplicates, cancellations), the executor runs them and answers.
"""

import asyncio
import contextlib
import inspect
import logging
import time
import traceback
from typing import Any

from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticSerializationError

from ..._errors import AskError, AskNotSupportedError, BrokerError, PayloadTooLargeError, ToolError
from ..._logging import DropLog
from ..._protocol.encoding import encode_fields
from ..._protocol.messages import TaskMessage, TaskResultMessage, TaskStatus
from ..._protocol.topics import Topics
from ..._protocol.validation import describe_problems, pydantic_problems
from ..._telemetry import (
    ToolMetrics,
    call_span,
    end_call_span,
    parent_context,
    trace_id_of,
    use_span,
)
from ..._transport import Messager
from ..call.context import ToolContext, set_current_context
from ..call.control import CallControl, collect_chunks
from ..call.output import split_output, too_large
from ..records.stats import ToolCounters
from ..records.task_record import TaskRecord
from .replies import error_reply
from .served import ServedTool

logger = logging.getLogger("argentic_tools.tool")


class TaskExecutor:
    """Runs the tasks its endpoint accepted and sends each one reply.

    For each task: its span, the concurrency slot, validation, the run, the encoded
    result or the error reply, the reply's publication, and the count in the stats.
    Each task is answered under the tool id it was sent to (the endpoint accepts only
    tasks for the id it serves under).

    Args:
        tool: The tool run.
        messager: The connection replies go out on (its client id is their ``source``,
            its payload limit theirs).
        topics: Where the tool is served, for its reply topics.
        max_concurrency: Tasks run at once; more wait for a slot (None: no limit).
        debug: Send tracebacks with failures.
        record: The endpoint's at-most-once record: each finished task's reply goes in.
        counters: The endpoint's stats: each task's outcome and duration go in.
        metrics: The endpoint's metrics: each reply goes in.
        drops: Where dropped ``reply_to`` topics are logged.

    """

    def __init__(
        self,
        tool: ServedTool,
        messager: Messager,
        topics: Topics,
        *,
        max_concurrency: int | None,
        debug: bool,
        record: TaskRecord,
        counters: ToolCounters,
        metrics: ToolMetrics,
        drops: DropLog,
    ) -> None:
        self.tool = tool
        self.messager = messager
        self.topics = topics
        self.max_concurrency = max_concurrency
        self.debug = debug
        self._limiter = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._record = record
        self._counters = counters
        self._metrics = metrics
        self._drops = drops

    def reply_topic(self, task: TaskMessage) -> str:
        """Where to answer ``task``.

        The caller's ``reply_to`` if it is one of this tool's reply topics (a task
        names its caller's inbox; it cannot point a tool anywhere else), otherwise
        the shared response topic, as Argentic callers expect.
        """
        reply_to = task.reply_to
        if reply_to is not None:
            if self.topics.is_reply_topic(reply_to, task.tool_id):
                return reply_to
            self._drops.drop(reply_to, "reply_to is not one of this tool's reply topics")
        return self.topics.response(task.tool_id)

    async def serve(
        self, task: TaskMessage, key: str, local_deadline: float | None, control: CallControl
    ) -> None:
        """Serve one task inside its span, and count it (stats, metrics) however it ends."""
        started = time.monotonic()
        span = call_span(
            self.tool.name,
            task.call_id or task.task_id,
            server=True,
            description=self.tool.manual,
            parent=parent_context(task.traceparent, task.tracestate),
        )
        outcome, size = "cancelled", 0
        try:
            with use_span(span):
                outcome, size = await self._serve_task(task, key, local_deadline, control)
        finally:
            elapsed = time.monotonic() - started
            self._counters.record(outcome, elapsed)
            self._metrics.replied(outcome, elapsed, size)
            end_call_span(span, None if outcome == "success" else outcome)

    async def _serve_task(
        self, task: TaskMessage, key: str, local_deadline: float | None, control: CallControl
    ) -> tuple[str, int]:
        reply: bytes
        outcome = "timeout"
        try:
            if self._limiter is None:
                reply, outcome = await self._run(task, local_deadline, control)
            else:
                async with self._limiter:
                    if local_deadline is not None and time.monotonic() > local_deadline:
                        # Its caller has stopped waiting: running it now would be work
                        # nobody reads, and an agent that retried would see it twice.
                        reply = self.error(
                            task,
                            f"not started: the caller's {task.timeout_seconds:g} s timeout "
                            f"ran out while it waited for a free slot "
                            f"(max_concurrency {self.max_concurrency})",
                            "timeout",
                        )
                    else:
                        reply, outcome = await self._run(task, local_deadline, control)
        except asyncio.CancelledError:
            if control.finished:
                raise  # cancelled by its caller, and already answered
            control.close()
            reason = control.reason or "the tool process is shutting down"
            reply = self.error(task, f"cancelled before it finished: {reason}", "cancelled")
            self._record.finished(key, reply)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1):
                    await self.publish_reply(reply, task, local_deadline)
            raise
        if control.finished:
            return "cancelled", 0  # cancelled while it finished: the caller has "cancelled"
        control.close()
        self._record.finished(key, reply)
        # Chunks and reports queued before the result go first.
        await control.drain()
        await self.publish_reply(reply, task, local_deadline)
        return outcome, len(reply)

    async def _run(
        self, task: TaskMessage, local_deadline: float | None, control: CallControl
    ) -> tuple[bytes, str]:
        """Run the tool on ``task``'s arguments in its context: the reply and its outcome."""
        tool = self.tool
        context = task.context
        token = set_current_context(
            ToolContext(
                task_id=task.task_id,
                tool_id=task.tool_id,
                tool_name=tool.name,
                call_id=task.call_id,
                thread_id=context.thread_id if context else None,
                trace_id=(context.trace_id if context else None) or trace_id_of(task.traceparent),
                user_id=context.user_id if context else None,
                deadline=_unix_time(local_deadline),
                source=task.source,
            ).bound_to(control)
        )
        started = time.perf_counter()
        try:
            kwargs = tool.validate_arguments(task.arguments or {})
        except PydanticValidationError as exc:
            problems = pydantic_problems(exc)
            return self._fail(
                task,
                f"invalid arguments: {describe_problems(problems)}",
                "invalid_arguments",
                details=problems,
            )
        try:
            running = tool._execute(**kwargs)
            if inspect.isasyncgen(running):
                output = await collect_chunks(running, control)  # a BaseTool that yields
            else:
                output = await running
            # Chunks still waiting for the reader's credit go before the result.
            await control.flushed()
        except ToolError as exc:
            return self._fail(task, exc.message, "execution_error", details=exc.details)
        except AskNotSupportedError as exc:  # its caller cannot answer: say which kind
            details = None if exc.kind is None else {"kind": exc.kind}
            return self._fail(task, str(exc), "ask_not_supported", details=details)
        except AskError as exc:  # its caller did not answer: no traceback to log
            return self._fail(task, str(exc), "execution_error")
        except Exception as exc:  # noqa: BLE001 - any tool failure becomes an error reply
            logger.warning(
                "tool %r raised %s: %s",
                tool.name,
                type(exc).__name__,
                exc,
                extra=call_fields(tool.name, task),
            )
            return self._fail(
                task,
                f"{type(exc).__name__}: {exc}",
                "execution_error",
                trace=traceback.format_exc() if self.debug else None,
            )
        finally:
            token.var.reset(token)
        return self._success(task, output, control, started)

    def _success(
        self, task: TaskMessage, output: Any, control: CallControl, started: float
    ) -> tuple[bytes, str]:
        """The encoded result of a run that returned ``output``, or the error it amounts to.

        Its content blocks split from its value, its chunks, its duration since
        ``started`` (``time.perf_counter()``): an error reply instead when it is not JSON
        or it exceeds the payload limit.
        """
        try:
            output, content = split_output(output)
        except (TypeError, ValueError) as exc:
            return self._fail(
                task,
                f"the tool returned content blocks with a value beside them that is not "
                f"JSON-serialisable: {exc}",
                "execution_error",
            )
        # Nothing here needs validating; unset fields keep their defaults.
        fields = {
            "source": self.messager.client_id,
            "message_id": task.message_id,
            "task_id": task.task_id,
            "tool_id": task.tool_id,
            "tool_name": self.tool.name,
            "arguments": task.arguments,
            "call_id": task.call_id,
            "trace": task.trace,
            "dry_run": task.dry_run,
            "approval_token": task.approval_token,
            "status": TaskStatus.SUCCESS,
            "result": output,
            "duration_ms": (time.perf_counter() - started) * 1000,
        }
        if content is not None:
            fields["content"] = [block.wire() for block in content]
        if control.chunks:
            fields["chunks"] = control.chunks
            if control.result_in_chunks:
                fields["result_in_chunks"] = True
        try:
            data = encode_fields(TaskResultMessage, fields)
        except PydanticSerializationError as exc:
            return self._fail(
                task,
                f"the tool returned a value that is not JSON-serialisable "
                f"({type(output).__name__}): {str(exc).splitlines()[0]}",
                "execution_error",
            )
        limit = self.messager.max_payload_bytes
        if len(data) > limit:
            text = f"the result is {len(data):,} bytes, more than the limit of {limit:,} bytes"
            if content:
                text += f" ({too_large(content, len(data), limit)})"
            return self._fail(
                task, text, "execution_error", details={"size": len(data), "limit": limit}
            )
        return data, "success"

    def _fail(
        self,
        task: TaskMessage,
        text: str,
        code: str,
        *,
        details: Any = None,
        trace: str | None = None,
    ) -> tuple[bytes, str]:
        """An error reply and its outcome (the error code), for the stats."""
        return self.error(task, text, code, details=details, trace=trace), code

    def error(
        self,
        task: TaskMessage,
        text: str,
        code: str,
        *,
        details: Any = None,
        trace: str | None = None,
    ) -> bytes:
        """The encoded error reply to ``task`` (see :func:`error_reply`)."""
        return error_reply(
            task,
            tool_id=task.tool_id,
            tool_name=self.tool.name,
            source=self.messager.client_id,
            max_bytes=self.messager.max_payload_bytes,
            text=text,
            code=code,
            details=details,
            trace=trace,
        )

    async def publish_reply(
        self, reply: bytes, task: TaskMessage, local_deadline: float | None
    ) -> None:
        """Publish ``reply`` to ``task``'s reply topic; a reply that cannot go is logged.

        It waits for a lost connection to come back, but not much past the caller's
        local deadline (nor more than 30 s without one).
        """
        patience = _patience(local_deadline)
        try:
            async with asyncio.timeout(patience):
                await self.messager.publish(self.reply_topic(task), reply)
        except TimeoutError:
            logger.warning(
                "tool %r: could not send the reply to task %s: no connection to the broker "
                "within %.1f s",
                self.tool.name,
                task.task_id,
                patience,
                extra=call_fields(self.tool.name, task),
            )
        except (BrokerError, PayloadTooLargeError) as exc:
            logger.warning(
                "tool %r: could not send the reply to task %s: %s",
                self.tool.name,
                task.task_id,
                exc,
                extra=call_fields(self.tool.name, task),
            )


def call_fields(tool: str, task: TaskMessage) -> dict[str, object]:
    """The fields of a log record about ``task``: tool, task id, and its trace and user.

    The plain and JSON log formats write them (``tool=add task_id=...``), so a
    collector can find every line about one call.
    """
    context = task.context
    fields: dict[str, object] = {"tool": tool, "task_id": task.task_id}
    if context is not None and context.trace_id:
        fields["trace_id"] = context.trace_id
    if context is not None and context.user_id:
        fields["user"] = context.user_id
    return fields


def _patience(local_deadline: float | None) -> float:
    """How long a reply may wait for the connection: the caller's time left, plus a margin."""
    return 30.0 if local_deadline is None else max(local_deadline - time.monotonic(), 0) + 5


def _unix_time(local_deadline: float | None) -> float | None:
    """A local deadline as Unix time, as :attr:`ToolContext.deadline` gives it to tools."""
    return None if local_deadline is None else time.time() + local_deadline - time.monotonic()
