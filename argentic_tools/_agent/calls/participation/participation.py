"""The caller's part in one call: :class:`Participation`, answering a tool's questions.

A call made with handlers (``on_elicit``, ``on_sample``, ``on_roots``, ``on_log``, or
the manager's defaults) gets one. Its task tells the tool what the caller takes part
in; the reader hands it each ``TOOL_ASK`` and ``TOOL_LOG`` of the call (matched by the
:class:`~..running.book.CallBook` like a progress report), and it runs the caller's handler for
each: a question's in a task of its own (several questions may be open at once, each
answered under its ``ask_id``), log records one after the other, in order.

While a question waits for its answer the call's idle timeout does not run: a person
may take minutes. Its ``timeout`` or ``max_duration`` and the caller's cancellation
still end the call, and then the handlers still running are cancelled. A log record
counts as a sign of life, like a progress report.

What was said is kept for the call's observation (``exchanges``): at most
:data:`EXCHANGES_KEPT` entries, then one saying how many more there were.
"""

import asyncio
import contextlib
import inspect
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ...._protocol.participation import (
    ElicitRequest,
    ElicitResult,
    LogRecord,
    RootsResult,
    SampleRequest,
    SampleResult,
    ToolAskMessage,
    ToolLogMessage,
)
from .handlers import CallerHandlers, CallRef

logger = logging.getLogger("argentic_tools.manager")

EXCHANGES_KEPT = 200
"""Entries of a call's exchange kept for its observation."""

QUESTIONS_PER_CALL = 10_000
"""Questions one call may ask in all; more are refused (a tool asking in a loop)."""


class IdleClock(Protocol):
    """A call's idle timeout, as its :class:`~..pending.progress.CallWatch` runs it."""

    def suspend(self) -> None:
        """A question waits for its answer: the idle timeout stops."""

    def resume(self) -> None:
        """A question was answered: the idle timeout runs again once none waits."""

    def touched(self) -> None:
        """A sign of life: the idle timeout starts again."""


Answer = Callable[[str, "dict[str, Any] | None", "str | None", bool], None]
"""Sends the tool an answer: ``(ask_id, result, error, unsupported)``."""


class Participation:
    """The caller's handlers at work for one call.

    Args:
        handlers: The call's handlers (the manager's defaults already filled in).
        call: Which call this is, for the handlers.
        answer: Sends the tool an answer.
        watch: The call's idle timeout, which a question suspends (None: it has none).

    """

    def __init__(
        self,
        handlers: CallerHandlers,
        call: CallRef,
        answer: Answer,
        watch: IdleClock | None = None,
    ) -> None:
        self.handlers = handlers
        self.call = call
        self._answer = answer
        self._watch = watch
        self._started = time.monotonic()
        self._asked: set[str] = set()
        self._open: dict[str, asyncio.Task[None]] = {}
        self._logs: deque[LogRecord] = deque()
        self._log_seq = 0
        self._draining: asyncio.Task[None] | None = None
        self.exchanges: list[dict[str, Any]] = []
        self._not_kept = 0
        self.closed = False

    @property
    def heard(self) -> bool:
        """Whether the tool asked or logged anything yet (it is alive)."""
        return bool(self._asked) or self._log_seq > 0

    def abilities(self) -> list[str]:
        """What the task tells the tool its caller takes part in."""
        return list(self.handlers.abilities())

    # -- questions ---------------------------------------------------------------------

    def asked(self, message: ToolAskMessage) -> None:
        """A question of the tool came in (called by the reader; redeliveries are ignored)."""
        ask_id = message.ask_id
        if self.closed or ask_id in self._asked:
            return
        if len(self._asked) >= QUESTIONS_PER_CALL:
            self._answer(
                ask_id, None, f"more than {QUESTIONS_PER_CALL} questions in one call", False
            )
            return
        self._asked.add(ask_id)
        entry = self._keep({"kind": message.kind, "ask_id": ask_id, "request": message.request})
        if self._watch is not None:
            self._watch.suspend()
        self._open[ask_id] = asyncio.get_running_loop().create_task(
            self._handle(message, entry), name=f"ask:{self.call.tool_name}:{ask_id}"
        )

    async def _handle(self, message: ToolAskMessage, entry: dict[str, Any] | None) -> None:
        ask_id = message.ask_id
        try:
            try:
                result = await self._run_handler(message)
            except _UnsupportedError as exc:
                self._ended(entry, None, str(exc))
                self._answer(ask_id, None, str(exc), True)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the caller's handler failed: say why
                why = _why(exc)
                logger.info(
                    "the %s handler raised for tool %r (task %s): %s",
                    message.kind,
                    self.call.tool_name,
                    self.call.task_id,
                    why,
                )
                self._ended(entry, None, why)
                self._answer(ask_id, None, why, False)
                return
            self._ended(entry, result, None)
            self._answer(ask_id, result, None, False)
        finally:
            self._open.pop(ask_id, None)
            if self._watch is not None and not self.closed:
                self._watch.resume()

    async def _run_handler(self, message: ToolAskMessage) -> dict[str, Any]:
        """The handler's answer in MCP's shape.

        Raises:
            _UnsupportedError: The caller has no handler for this kind.
            ValueError: The request or the handler's answer is malformed.

        """
        handlers, call = self.handlers, self.call
        if message.kind == "elicit":
            if handlers.on_elicit is None:
                raise _UnsupportedError("the caller has no on_elicit handler")
            request = ElicitRequest.model_validate(message.request)
            answer: Any = handlers.on_elicit(request, call)
            return _shape(ElicitResult, await _awaited(answer))
        if message.kind == "sample":
            if handlers.on_sample is None:
                raise _UnsupportedError("the caller has no on_sample handler")
            sampling = SampleRequest.model_validate(message.request)
            answer = handlers.on_sample(sampling, call)
            return _shape(SampleResult, await _awaited(answer))
        if handlers.on_roots is None:
            raise _UnsupportedError("the caller has no on_roots handler")
        roots = await _awaited(handlers.on_roots(call))
        if not isinstance(roots, Mapping | RootsResult):
            roots = {"roots": list(roots)}
        return _shape(RootsResult, roots)

    def _ended(
        self, entry: dict[str, Any] | None, result: dict[str, Any] | None, error: str | None
    ) -> None:
        if entry is None:
            return
        if error is None:
            entry["answer"] = result
        else:
            entry["error"] = error
        entry["answered_ms"] = self._ms()

    # -- log records -------------------------------------------------------------------

    def logged(self, message: ToolLogMessage) -> None:
        """A log record of the tool came in (called by the reader)."""
        if self.closed or message.seq <= self._log_seq:
            return  # ended, older than one seen, or a redelivery
        self._log_seq = message.seq
        if self._watch is not None:
            self._watch.touched()
        record = message.record
        if message.dropped:
            lost = LogRecord(
                level="warning",
                message=(
                    f"{message.dropped} log record(s) of tool '{self.call.tool_name}' were "
                    "left out by its rate limit"
                ),
                logger="argentic_tools",
            )
            self._queue(lost)
        self._queue(record)

    def _queue(self, record: LogRecord) -> None:
        self._keep({"kind": "log", "record": record.model_dump(mode="json", exclude_none=True)})
        if self.handlers.on_log is None:
            return
        self._logs.append(record)
        if self._draining is None:
            self._draining = asyncio.get_running_loop().create_task(
                self._drain(), name=f"log:{self.call.tool_name}"
            )

    async def _drain(self) -> None:
        on_log = self.handlers.on_log
        try:
            while self._logs and on_log is not None:
                record = self._logs.popleft()
                try:
                    await _awaited(on_log(record, self.call))
                except asyncio.CancelledError:
                    raise
                except Exception:
                    logger.exception("the on_log handler raised; the call goes on")
        finally:
            self._draining = None

    async def flush(self) -> None:
        """Let the log records that came before the result reach ``on_log`` first."""
        draining = self._draining
        if draining is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(draining)

    # -- the end -----------------------------------------------------------------------

    def close(self) -> None:
        """The call is over: handlers still running are cancelled, nothing more is taken."""
        self.closed = True
        for task in list(self._open.values()):
            task.cancel()
        self._open.clear()
        if self._draining is not None:
            self._draining.cancel()
        self._logs.clear()

    def kept(self) -> list[dict[str, Any]] | None:
        """What was said, for the observation (None when nothing was)."""
        if not self.exchanges:
            return None
        if not self._not_kept:
            return self.exchanges
        return [
            *self.exchanges,
            {
                "kind": "log",
                "at_ms": self._ms(),
                "record": {
                    "level": "warning",
                    "message": f"{self._not_kept} more exchanges not kept",
                },
            },
        ]

    def _keep(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        if len(self.exchanges) >= EXCHANGES_KEPT:
            self._not_kept += 1
            return None
        entry["at_ms"] = self._ms()
        self.exchanges.append(entry)
        return entry

    def _ms(self) -> float:
        return round((time.monotonic() - self._started) * 1000, 1)


class _UnsupportedError(Exception):
    """The caller has no handler for a kind of question."""


def _why(exc: Exception) -> str:
    """A handler's failure in one line, for the tool's error."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _awaited(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _shape(model: Any, answer: Any) -> dict[str, Any]:
    """A handler's answer (its model, or a mapping in MCP's shape) as the wire carries it.

    Raises:
        ValueError: The answer is neither.

    """
    if not isinstance(answer, model):
        if not isinstance(answer, Mapping):
            raise ValueError(
                f"the handler returned {type(answer).__name__}, not a {model.__name__} "
                "or a mapping in MCP's shape"
            )
        answer = model.model_validate(dict(answer))
    shape: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    return shape
