"""One call from its check to its one result: :class:`CallRunner`.

The :class:`~argentic_tools.ToolManager` hands each call here. The runner checks it
(through the :class:`~.book.CallBook`), waits for the registry to settle and for a
slot in the tool instance's window, has :class:`~.delivery.Delivery` send the task,
and awaits the result under the call's deadline (or its idle timeout, which progress
reports move). Whatever ends
the wait (a result, a timeout, the caller's cancellation, a tool that left) ends in
exactly one result, and a published task the caller gave up on gets a TOOL_CANCEL.
"""

import asyncio
import contextlib
import dataclasses
import time
from typing import Any

import anyio

from ...._errors import BrokerError, PayloadTooLargeError
from ...._protocol.messages import (
    STREAM_CREDIT_PROTOCOL,
    TaskErrorMessage,
    TaskStatus,
    ToolProgressMessage,
    ToolResult,
)
from ...._protocol.participation import ToolAskMessage
from ...._telemetry import (
    CallerMetrics,
    Span,
    call_span,
    end_call_span,
    trace_id_of,
    traceparent_of,
)
from ...fleet.liveness import Liveness
from ...fleet.settling import Settling
from ...policy import ToolPolicy
from ...records.journal import CallJournal, JournaledCall
from ...records.observations import ObservationPump, observation_of
from ..participation.handlers import CallerHandlers, CallRef
from ..participation.participation import Participation
from ..pending.pending import CallSpec, Pending, ToolGoneError, UnsendableTaskError
from ..pending.progress import STREAM_WINDOW, BrokenStreamError, CallWatch
from ..restart.reattach import Reattacher, context_of, dumped, journaled
from ..results.endings import assembled, broken, checked, error, failed, timed_out, undeliverable
from .book import CallBook
from .delivery import Delivery

CANCEL_SEND_SECONDS = 2.0
"""How long a cancellation (or closing the manager) waits for its TOOL_CANCEL to be sent."""


_CANCELLED = "Tool '{}' call was cancelled: cancelled by the caller."


class _UnsentError(Exception):
    """A call ended (``cancel``) while it waited to be sent."""


class CallRunner:
    """Runs calls for one manager.

    Args:
        calls: The manager's pending calls.
        delivery: Sends tasks and cancellations.
        settling: Knows when the registry may still be filling (a call to a name not
            registered yet then waits for it).
        pump: Takes one observation per call (None: nobody records).
        handlers: The manager's handlers, for every call that lacks its own and for the
            calls picked up from the journal (:attr:`handlers`).
        liveness: Told about calls that went unanswered past their deadline.
        journal: Keeps each call from before its task is published until it ends (None:
            calls live in memory only).

    """

    def __init__(
        self,
        calls: CallBook,
        delivery: Delivery,
        settling: Settling,
        pump: ObservationPump | None,
        handlers: CallerHandlers,
        liveness: Liveness | None = None,
        journal: CallJournal | None = None,
    ) -> None:
        self._liveness = liveness
        self._journal = journal
        self._metrics = CallerMetrics()
        self._calls = calls
        self._delivery = delivery
        self._settling = settling
        self._source = calls.source
        self._pump = pump
        self.handlers = handlers
        """The manager's handlers (its ``handlers``): every call's, unless it brings its own."""

    async def run(self, spec: CallSpec, policy: ToolPolicy) -> ToolResult:
        """Check, send and await one call, in its span; always returns its one result."""
        # One coroutine frame per call (this one: the work before and after it is in
        # plain methods), and a pending call's state in one Pending: with thousands of
        # calls in flight, every extra frame costs 0.2-0.4 KB per call.
        started = time.perf_counter()
        span = call_span(spec.name, spec.call_id, server=False)
        spec.traceparent, spec.tracestate = traceparent_of(span)
        self._metrics.started()
        call = self._calls.prepare(spec, policy)
        try:
            if (
                isinstance(call, TaskErrorMessage)
                and call.error_code == "not_found"
                and self._settling.active()
            ):
                call = await self._after_settling(spec, call, policy)
            if isinstance(call, Pending):
                watch = call.watch
                if spec.handlers is not None and spec.handlers.any:
                    call.participation = self._participation(call, spec.handlers)
                try:
                    loop = asyncio.get_running_loop()
                    deadline = (
                        loop.time() + call.timeout  # type: ignore[operator]
                        if watch is None
                        else watch.first_deadline(loop)
                    )
                    async with asyncio.timeout_at(deadline) as timer:
                        ready_at = call.entry.ready_at
                        if ready_at:
                            settle = ready_at - loop.time()
                            if settle > 0:
                                await asyncio.sleep(settle)
                        queued = loop.time()
                        await self._calls.take_slot(call)
                        self._metrics.waited(call.tool_name, loop.time() - queued)
                        if call.future.done():  # cancelled (manager.cancel) before it was sent
                            raise _UnsentError
                        if watch is not None:
                            watch.timer = timer
                            if watch.idle is not None:  # the idle time counts from the send
                                timer.reschedule(watch.first_deadline(loop))
                            self._pace(call, watch)
                        if self._journal is not None:
                            await self._journal.begin(journaled(call, self._source))
                            call.journaled = True
                        call.sent_on = await self._delivery.send(call)
                        if watch is None:
                            result: ToolResult = await call.future
                        else:
                            result = assembled(
                                self._source,
                                call,
                                await watch.result(call.future),
                                self._reconnected(call),
                            )
                        if call.participation is not None:
                            await call.participation.flush()  # log records before the result
                except TimeoutError:
                    result = timed_out(self._source, call, self._calls.window_of(call.tool_id))
                    if call.published:
                        self._delivery.cancel_at_tool(call, result.error)
                        if self._liveness is not None and not _heard_from(call):
                            self._liveness.missed(call.entry)
                except asyncio.CancelledError:
                    # The caller gave up (task.cancel(), wait_for, a cancel scope): the tool
                    # must stop too. The TOOL_CANCEL is on its way before this returns: out,
                    # for a call of its own; posted, for a batch's call (no wait per call, and
                    # later tasks to the tool go out after it).
                    # Nobody awaits the call's future any more (a streamed call waits on its
                    # events, not on it): end it now, so that the manager closing meanwhile
                    # does not fail it with an exception no one ever retrieves (asyncio
                    # would log "Future exception was never retrieved").
                    if not call.future.cancel() and not call.future.cancelled():
                        call.future.exception()  # ended already: its outcome is seen
                    if call.published and self._calls.open:
                        ticket = self._delivery.cancel_at_tool(call, "cancelled by the caller")
                        if spec.batch is None:
                            with anyio.CancelScope(shield=True):
                                await self._delivery.cancels.sent(ticket, CANCEL_SEND_SECONDS)
                    raise
                except BrokenStreamError as exc:
                    # The caller stopped reading, or a chunk was lost: the tool stops too.
                    result = broken(self._source, call, exc, self._reconnected(call))
                    self._delivery.cancel_at_tool(call, exc.why)
                except (ToolGoneError, BrokerError, PayloadTooLargeError) as exc:
                    result = undeliverable(self._source, call, exc)
                except UnsendableTaskError as exc:
                    result = failed(
                        self._source,
                        call,
                        f"Tool '{call.tool_name}': invalid arguments: they cannot be sent as "
                        f"JSON: {exc}",
                        "invalid_arguments",
                    )
                except _UnsentError:
                    result = call.future.result()
                finally:
                    if watch is not None:
                        watch.timer = None
                        watch.credit = None  # a reader still reading sends no more grants
                    if call.participation is not None:
                        call.participation.close()
                    self._calls.forget(call.task_id)
                result = checked(self._source, call, result)
                self._journal_ended(call, result)
            else:
                result = call
        except asyncio.CancelledError:
            # The caller gets no result, but the call still ends once: in the metrics,
            # the span, and the observations (the live view and the history).
            self._ended_cancelled(spec, span, started, call)
            raise
        return self._ended(spec, span, started, result, _exchanges(call))

    def reattacher(self) -> Reattacher | None:
        """What picks up the journal's calls at start (None without a journal).

        Reattached calls answer their tools' questions with :attr:`handlers`.
        """
        if self._journal is None:
            return None
        return Reattacher(self._journal, self._calls.registry, self._source, self.resume)

    def noted(self, message: ToolProgressMessage | ToolAskMessage) -> None:
        """Keep a journaled call's latest progress report, or the question it waits on."""
        call = self._calls.pending.get(message.task_id)
        if self._journal is None or call is None or not call.journaled:
            return
        if isinstance(message, ToolProgressMessage):
            state = {
                "progress": message.progress,
                "total": message.total,
                "message": message.message,
            }
        else:
            state = {"asking": message.kind, "ask_id": message.ask_id}
        self._journal.progressed(call.task_id, state)

    def _journal_ended(self, call: Pending, result: ToolResult) -> None:
        """Note the call's outcome in the journal; a call its closing manager left stays open.

        Closing a manager with a journal leaves its published calls running at their tools:
        the next manager with this journal waits for them again.
        """
        if self._journal is None or not call.journaled:
            return
        if call.published and not self._calls.open:
            return
        self._journal.ended(call.task_id, result.status.value, dumped(result))

    async def resume(self, previous: JournaledCall, remaining: float | None) -> ToolResult:
        """Wait again for a call a previous manager made (see :mod:`..restart.reattach`).

        Its task goes out again under its own id, to the instance that took it (the
        reattacher checked that it is back); its result comes under ``remaining`` seconds.
        """
        started = time.perf_counter()
        entry = self._calls.registry.get(previous.tool_id)
        spec = CallSpec(
            previous.tool_name,
            previous.arguments,
            previous.label,
            remaining,
            previous.call_id,
            context_of(previous),
            handlers=self.handlers if self.handlers.any else None,
        )
        span = call_span(spec.name, spec.call_id, server=False)
        spec.traceparent, spec.tracestate = traceparent_of(span)
        if entry is None:
            raise LookupError(previous.tool_id)
        loop = asyncio.get_running_loop()
        call = Pending(
            loop.create_future(), entry, previous.task_id, previous.arguments, spec, time.time()
        )
        call.journaled = call.reattached = True
        self._calls.pending[call.task_id] = call
        if spec.handlers is not None:
            call.participation = self._participation(call, spec.handlers)
        try:
            async with asyncio.timeout(remaining):
                call.sent_on = await self._delivery.send(call)
                result: ToolResult = await call.future
        except TimeoutError:
            result = timed_out(self._source, call, None)
            if call.published:
                self._delivery.cancel_at_tool(call, result.error)
        except (ToolGoneError, BrokerError, PayloadTooLargeError) as exc:
            result = undeliverable(self._source, call, exc)
        finally:
            if call.participation is not None:
                call.participation.close()
            self._calls.forget(call.task_id)
        result = checked(self._source, call, result)
        return self._ended(spec, span, started, result, _exchanges(call), reattached=True)

    def _participation(self, call: Pending, handlers: CallerHandlers) -> Participation:
        """The caller's handlers at work for ``call``: they answer on its tool's call topic."""
        spec = call.spec
        return Participation(
            handlers,
            CallRef(
                call.tool_name, call.tool_id, call.label or call.task_id, spec.call_id, spec.context
            ),
            lambda ask_id, result, error, unsupported: self._delivery.answer(
                call, ask_id, result, error, unsupported
            ),
            call.watch,
        )

    def _pace(self, call: Pending, watch: CallWatch) -> None:
        """Pace a streamed call by its reader when its tool can (protocol 3 and later)."""
        protocol = call.entry.protocol
        if watch.streams and protocol is not None and protocol >= STREAM_CREDIT_PROTOCOL:
            watch.window = STREAM_WINDOW
            watch.credit = lambda read: self._delivery.grant(call, read)

    def _reconnected(self, call: Pending) -> bool:
        """Whether this caller's or the tool's connection dropped since the task went out."""
        if 0 < call.sent_on < self._delivery.messager.connections:
            return True
        current = self._calls.registry.get(call.tool_id)
        then, now = call.entry.connection, None if current is None else current.connection
        return then is not None and now is not None and now > then

    async def _after_settling(
        self, spec: CallSpec, not_found: TaskErrorMessage, policy: ToolPolicy
    ) -> "Pending | TaskErrorMessage":
        """Wait (within the call's deadline) for its tool to register.

        After the manager started or reconnected, live tools are registering (again).
        """
        loop = asyncio.get_running_loop()
        patience = spec.timeout
        if patience is None:
            watch = spec.watch
            patience = watch.idle if watch is not None and watch.idle is not None else 0.0
        deadline = loop.time() + patience
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(deadline):
                await self._settling.wait_for(spec.name)
        remaining = deadline - loop.time()
        if remaining <= 0 or self._calls.registry.lookup(spec.name) is None:
            return not_found
        if spec.timeout is not None:
            spec.timeout = remaining
        return self._calls.prepare(spec, policy)

    def _ended_cancelled(
        self, spec: CallSpec, span: Span, started: float, call: "Pending | TaskErrorMessage"
    ) -> None:
        """:meth:`_ended` for a call the caller cancelled, which nobody gets a result of.

        The result is built only for the observations: a cancelled batch of 50,000
        calls ends them all at once, and building each result cost as much again.
        """
        if isinstance(call, Pending) and call.journaled:
            self._journal_ended(call, self._cancelled(spec, call))
        if self._pump is not None:
            self._ended(spec, span, started, self._cancelled(spec, call), _exchanges(call))
            return
        self._metrics.ended(call.tool_name, "cancelled", time.perf_counter() - started)
        end_call_span(
            span,
            "cancelled",
            _CANCELLED.format(spec.name),
            tool_name=call.tool_name,
            call_id=spec.call_id
            or (call.label or call.task_id if isinstance(call, Pending) else call.task_id),
        )

    def _cancelled(self, spec: CallSpec, call: "Pending | TaskErrorMessage") -> TaskErrorMessage:
        """The result a call the caller cancelled ends with, where it is recorded."""
        text = _CANCELLED.format(spec.name)
        status = TaskStatus.CANCELLED
        if isinstance(call, Pending):
            return failed(self._source, call, text, "cancelled", status=status)
        return error(
            self._source,
            call.task_id,
            call.tool_id,
            call.tool_name,
            spec.arguments,
            text,
            "cancelled",
            status=status,
        )

    def _ended(
        self,
        spec: CallSpec,
        span: Span,
        started: float,
        result: ToolResult,
        exchanges: list[dict[str, Any]] | None = None,
        reattached: bool = False,
    ) -> ToolResult:
        """Time, observe and count the call's one result, and end its span."""
        result.duration_ms = (time.perf_counter() - started) * 1000
        if spec.call_id is not None:
            result.call_id = spec.call_id
        if self._pump is not None:
            observation = observation_of(result, spec.context, exchanges)
            if reattached:
                observation = dataclasses.replace(observation, reattached=True)
            if observation.trace_id is None and spec.traceparent is not None:
                # The trace the call's span belongs to, when the caller named none.
                observation = dataclasses.replace(
                    observation, trace_id=trace_id_of(spec.traceparent)
                )
            self._pump.submit(observation)
        outcome = "success" if result.ok else str(getattr(result, "error_code", None) or "error")
        self._metrics.ended(result.tool_name, outcome, time.perf_counter() - started)
        end_call_span(
            span,
            None if result.ok else outcome,
            getattr(result, "error", None),
            tool_name=result.tool_name,
            call_id=spec.call_id or result.task_id,
        )
        return result

    async def cancel(self, task_id: str, reason: str | None) -> bool:
        """Cancel one pending call (see :meth:`ToolManager.cancel`)."""
        call = self._calls.find(task_id)
        if call is None or call.future.done():
            return False
        why = reason or "cancelled by the caller"
        call.future.set_result(
            failed(
                self._source,
                call,
                f"Tool '{call.tool_name}' call was cancelled: {why}.",
                "cancelled",
                status=TaskStatus.CANCELLED,
            )
        )
        if call.published:
            ticket = self._delivery.cancel_at_tool(call, why)
            await self._delivery.cancels.sent(ticket, CANCEL_SEND_SECONDS)
        return True


def _exchanges(call: "Pending | TaskErrorMessage") -> list[dict[str, Any]] | None:
    """What a call's tool and its caller said to each other, for the observation."""
    if isinstance(call, Pending) and call.participation is not None:
        return call.participation.kept()
    return None


def _heard_from(call: Pending) -> bool:
    """Whether the tool said anything during the call: a report, a chunk, a question, a log."""
    watch, participation = call.watch, call.participation
    if watch is not None and (watch.reports or watch.delivered):
        return True
    return participation is not None and participation.heard
