"""A running call's line to its caller: :class:`CallerLine`, the tool's side of asking and logging.

Each :class:`~.control.CallControl` owns one. A question (``context.elicit``,
``context.sample``, ``context.list_roots``) goes out as a ``TOOL_ASK`` on the caller's
reply topic, through the call's outbox (after the chunks and reports sent before it),
and waits for the caller's ``TOOL_ANSWER`` of the same ``ask_id``. The endpoint hands
an answer here only when it comes from the caller of the task (see
:class:`~argentic_tools._tools.serving.endpoint.ToolEndpoint`), and an answer to no
open question is dropped.

A caller that said in its task that it cannot answer a kind (``caller_handles``), or
an older caller that said nothing, makes the question fail at once with
:class:`~argentic_tools.AskNotSupportedError`: a tool never waits for an answer that
cannot come. The call's own end (its deadline, the caller's cancellation) ends a wait.

Log records (``context.log``) go the same way as ``TOOL_LOG``, only to a caller that
reads them, at most :data:`LOG_RATE` a second after a burst of :data:`LOG_BURST`; the
records over that are counted, and the next record sent says how many.
"""

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

from ..._errors import AskError, AskNotSupportedError
from ..._protocol.messages import TaskMessage, encode
from ..._protocol.participation import (
    AskKind,
    CallerAbility,
    LogRecord,
    ToolAnswerMessage,
    ToolAskMessage,
    ToolLogMessage,
)

LOG_RATE = 20.0
"""Log records a second one call may send its caller, once its burst is spent."""

LOG_BURST = 100
"""Log records one call may send at once before :data:`LOG_RATE` applies."""

LOG_TEXT_LIMIT = 4000
"""Characters of a log record's message kept."""

OPEN_QUESTIONS = 16
"""Questions one call may have waiting for an answer at once."""

THREAD_POLL_SECONDS = 0.5
"""How often a sync tool's thread waiting for an answer looks whether its call ended."""

_WHAT = {
    "elicit": "answer questions (no on_elicit handler)",
    "sample": "lend its model (no on_sample handler)",
    "roots": "name its roots (no on_roots handler)",
}


class CallerLine:
    """Questions and log records of one call, between the tool and its caller.

    Args:
        task: The task served: its ``caller_handles`` say what the caller takes part in.
        tool_id: The serving tool's id.
        source: The tool process's client id, the ``source`` of what it sends.
        enqueue: Sends one encoded message through the call's outbox (event loop only).
        in_loop: Runs a function on the event loop, from any thread.
        loop: The event loop serving the call.
        loop_thread: The thread running ``loop``.

    """

    def __init__(
        self,
        task: TaskMessage,
        *,
        tool_id: str,
        source: str,
        enqueue: Callable[[bytes], None],
        in_loop: Callable[[Callable[[], None]], None],
        loop: asyncio.AbstractEventLoop,
        loop_thread: int,
    ) -> None:
        self._loop = loop
        self._loop_thread = loop_thread
        self.task_id = task.task_id
        self.tool_id = tool_id
        self.source = source
        self.handles: frozenset[str] = frozenset(task.caller_handles or ())
        self._enqueue = enqueue
        self._in_loop = in_loop
        self._open: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._kinds: dict[str, AskKind] = {}
        self._asked = 0
        self._log_seq = 0
        self._tokens = float(LOG_BURST)
        self._refilled = time.monotonic()
        self._dropped = 0
        self._lock = threading.Lock()
        self.closed = False

    def can(self, kind: CallerAbility) -> bool:
        """Whether the caller said it takes part in ``kind``."""
        return kind in self.handles

    # -- questions ---------------------------------------------------------------------

    async def ask(self, kind: AskKind, request: dict[str, Any]) -> dict[str, Any]:
        """Ask the caller; returns its answer in MCP's shape for ``kind``.

        Raises:
            AskNotSupportedError: The caller cannot answer this kind.
            AskError: The caller's handler failed, too many questions are open, or the
                call ended before the answer came.

        """
        if not self.can(kind):
            raise AskNotSupportedError(
                f"its caller cannot {_WHAT[kind]}; "
                f"task {self.task_id} says it handles {sorted(self.handles) or 'nothing'}",
                kind=kind,
            )
        if self.closed:
            raise AskError("the call is over; nobody can answer")
        if len(self._open) >= OPEN_QUESTIONS:
            raise AskError(
                f"{OPEN_QUESTIONS} questions are already waiting for the caller's answers"
            )
        self._asked += 1
        ask_id = str(self._asked)
        answer: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._open[ask_id] = answer
        self._kinds[ask_id] = kind
        try:
            self._enqueue(
                encode(
                    ToolAskMessage(
                        source=self.source,
                        task_id=self.task_id,
                        tool_id=self.tool_id,
                        ask_id=ask_id,
                        kind=kind,
                        request=request,
                    )
                )
            )
            return await answer
        finally:
            self._open.pop(ask_id, None)
            self._kinds.pop(ask_id, None)

    def ask_blocking(self, kind: AskKind, request: dict[str, Any]) -> dict[str, Any]:
        """:meth:`ask` from a sync tool's worker thread: blocks until the answer comes.

        Raises:
            asyncio.CancelledError: The call was cancelled (or the tool is stopping).

        """
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError(
                "a blocking question was asked on the event loop; an async tool awaits "
                "context.elicit(...) (or sample, list_roots) instead"
            )
        answer = asyncio.run_coroutine_threadsafe(self.ask(kind, request), self._loop)
        while True:
            try:
                return answer.result(timeout=THREAD_POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                if self.closed:
                    answer.cancel()
                    raise asyncio.CancelledError(
                        "the call ended while waiting for an answer"
                    ) from None
            except concurrent.futures.CancelledError:
                raise asyncio.CancelledError("the call ended while waiting for an answer") from None

    def answered(self, answer: ToolAnswerMessage) -> bool:
        """The caller's answer came (the endpoint checked who sent it); False: no such question."""
        waiting = self._open.get(answer.ask_id)
        if waiting is None or waiting.done():
            return False
        if answer.result is not None and answer.error is None:
            waiting.set_result(answer.result)
            return True
        why = answer.error or "the answer carried neither a result nor an error"
        text = f"the caller did not answer: {why}"
        waiting.set_exception(
            AskNotSupportedError(text, kind=self._kinds.get(answer.ask_id))
            if answer.unsupported
            else AskError(text)
        )
        return True

    # -- log records -------------------------------------------------------------------

    def log(self, record: LogRecord) -> None:
        """Send ``record`` to a caller that reads log records (rate-limited; any thread)."""
        if not self.can("log") or self.closed:
            return
        with self._lock:
            now = time.monotonic()
            self._tokens = min(float(LOG_BURST), self._tokens + (now - self._refilled) * LOG_RATE)
            self._refilled = now
            if self._tokens < 1.0:
                self._dropped += 1
                return
            self._tokens -= 1.0
            self._log_seq += 1
            seq, dropped, self._dropped = self._log_seq, self._dropped, 0
        if len(record.message) > LOG_TEXT_LIMIT:
            record = record.model_copy(update={"message": record.message[:LOG_TEXT_LIMIT]})
        data = encode(
            ToolLogMessage(
                source=self.source,
                task_id=self.task_id,
                tool_id=self.tool_id,
                seq=seq,
                record=record,
                dropped=dropped,
            )
        )
        if threading.get_ident() == self._loop_thread:
            self._send_log(data)
        else:
            self._in_loop(lambda: self._send_log(data))

    def _send_log(self, data: bytes) -> None:
        if not self.closed:
            self._enqueue(data)

    def close(self) -> None:
        """The call is over: open questions fail, later records are not sent."""
        self.closed = True
        for waiting in list(self._open.values()):
            if not waiting.done():
                waiting.set_exception(AskError("the call ended before the caller answered"))
                waiting.exception()  # retrieved: nobody may be awaiting it any more
