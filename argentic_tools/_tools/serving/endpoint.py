"""Serving one tool on one connection: register, receive, cancel, answer pings.

Every task gets exactly one reply (see :mod:`.executor`). A task id seen before is
never executed twice: a repeat gets the recorded reply, or is dropped while it runs.
"""

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Coroutine
from typing import Any

from ..._errors import BrokerError, PayloadTooLargeError, ProtocolError, RegistrationError
from ..._logging import DropLog
from ..._protocol.fleet_messages import (
    RegisterToolMessage,
    ToolPingMessage,
    ToolPongMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolSpec,
    ToolStatsEntry,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
)
from ..._protocol.messages import (
    PROTOCOL_VERSION,
    BaseMessage,
    TaskMessage,
    ToolCancelMessage,
    ToolCreditMessage,
    encode,
)
from ..._protocol.parsing import parse_message
from ..._protocol.participation import ToolAnswerMessage
from ..._protocol.topics import Topics
from ..._telemetry import ToolMetrics
from ..._transport import IncomingMessage, Messager
from ..call.control import CallControl
from ..records.stats import ToolCounters
from ..records.task_record import (
    DEFAULT_RESULT_RETENTION,
    DONE,
    RUNNING,
    TaskRecord,
    keep_until,
    local_deadline_from,
    record_key,
)
from .executor import TaskExecutor
from .pacing import PACE_SECONDS, RegistrationWindow
from .served import ServedTool
from .status import StatusRouter

logger = logging.getLogger("argentic_tools.tool")


class ToolEndpoint:
    """Serves ``tool`` on ``messager`` under ``topics`` (one per tool and connection).

    It registers the tool and keeps it registered, receives its tasks (never running
    a task id twice), answers pings and cancellations; running a task and sending its
    reply is the work of the :class:`TaskExecutor` it owns.
    """

    def __init__(
        self,
        tool: ServedTool,
        messager: Messager,
        topics: Topics,
        *,
        tool_id: str | None = None,
        max_concurrency: int | None = None,
        debug: bool = False,
        register_topic: str | None = None,
        result_retention: float = DEFAULT_RESULT_RETENTION,
    ) -> None:
        self.tool = tool
        self.messager = messager
        self.topics = topics
        self.register_topic = register_topic or registration_topic(topics, messager)
        """Where this endpoint registers and unregisters (see :func:`registration_topic`)."""
        self.tool_id = tool_id or tool.pinned_id or str(uuid.uuid4())
        """The id this endpoint serves under; the tool object itself is never changed."""
        self.max_concurrency = tool.max_concurrency or max_concurrency
        self.debug = tool.debug or debug
        self.confirmed = asyncio.Event()
        self.refusal: str | None = None
        """Why the registration was refused (None while it is not)."""
        # Loop time until which a manager is checking whether the holder of this pinned
        # id still answers (a restart's claim): start() waits that long for its verdict.
        self._held_until = 0.0
        self._answered = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._controls: dict[str, CallControl] = {}
        self._recent = TaskRecord(result_retention)
        self._drops = DropLog(logger)
        self._stopped = False
        self._registrations: dict[tuple[int, bool], bytes] = {}
        self._window = RegistrationWindow.of(messager)
        self._unregistered = asyncio.Event()
        # A pinned id may be another process's already: its tasks reach every subscriber
        # of the call topic, so this endpoint runs none until a manager has accepted it
        # as the id's holder. A generated id is nobody else's.
        self._pinned = tool_id is not None or tool.pinned_id is not None
        self._accepted = not self._pinned
        self._early: list[IncomingMessage] = []
        self._started = False
        self.counters = ToolCounters()
        """What this endpoint has served (answers stats requests)."""
        self.metrics = ToolMetrics(tool.name)
        self._executor = TaskExecutor(
            tool,
            messager,
            topics,
            max_concurrency=self.max_concurrency,
            debug=self.debug,
            record=self._recent,
            counters=self.counters,
            metrics=self.metrics,
            drops=self._drops,
        )

    # -- lifecycle -----------------------------------------------------------

    async def start(self, *, confirm_timeout: float = 1.0, attempts: int = 3) -> str:
        """Subscribe, register, and wait for a confirmation; returns the tool id.

        The registration is sent up to ``attempts`` times, each waiting
        ``confirm_timeout / attempts`` seconds for an answer (after its turn in the
        connection's :class:`~.pacing.RegistrationWindow`); while no manager has
        answered any registration on this connection, once. Without a confirmation
        the tool keeps serving: managers that start later announce themselves and it
        registers again.

        A pinned id still held by this tool's previous process (a restart) is not a
        refusal: the manager says it is checking whether the holder answers, and each
        attempt waits for its verdict, up to :data:`MAX_HOLDER_WAIT` seconds.

        Raises:
            RegistrationError: A manager refused the registration.

        """
        await self.listen()
        return await self.register(confirm_timeout=confirm_timeout, attempts=attempts)

    async def listen(self) -> None:
        """Warm the tool up and subscribe: its tasks and status messages reach it from now.

        The first half of :meth:`start`. A process serving many tools has them all
        listen first and then registers them together, so the registrations go out
        in the order of its tools (a manager admitting only so many tools per client
        admits the first ones).
        """
        await self.tool.warm_up()
        await StatusRouter.of(self.messager, self.topics.status).add(self)
        for topic in self._call_topics(self.tool_id):
            await self.messager.subscribe(topic, self._on_task)
        self.messager.add_reconnect_hook(self.register_again)

    async def register(
        self, *, confirm_timeout: float = 1.0, attempts: int = 3, quiet: bool = False
    ) -> str:
        """Register and wait for a confirmation (the second half of :meth:`start`).

        Unconfirmed (no manager running), the tool serves anyway and says so at INFO;
        ``quiet`` says it at DEBUG only, for a :class:`ToolService` that logs one line
        for all its tools rather than one per tool.

        Raises:
            RegistrationError: A manager refused the registration.

        """
        for _ in range(attempts):
            async with self._window.slot():
                await self._publish_registration()
                await self._wait_for_answer(confirm_timeout / attempts)
            if self.refusal is not None:
                raise RegistrationError(f"tool {self.tool.name!r}: {self.refusal}")
            if self.confirmed.is_set():
                self._started = True
                return self.tool_id
            if not self._window.heard:
                break  # nobody answers: managers that start announce themselves
        self._started = True
        logger.log(
            logging.DEBUG if quiet else logging.INFO,
            "tool %r: no manager confirmed the registration yet; serving anyway and "
            "registering again when a manager announces itself",
            self.tool.name,
        )
        return self.tool_id

    async def _wait_for_answer(self, wait: float) -> None:
        """Wait ``wait`` seconds for a confirmation or a refusal (longer: see start())."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while not self.confirmed.is_set():
            remaining = max(deadline, self._held_until) - loop.time()
            if remaining <= 0:
                return
            self._answered.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._answered.wait()

    async def stop(self, *, grace_period: float = 10.0, announce: bool = True) -> None:
        """Unregister, let in-flight calls finish within ``grace_period``, then cancel the rest."""
        if self._stopped:
            return
        self._stopped = True
        self.messager.remove_reconnect_hook(self.register_again)
        # Each step on its own: a failed unsubscribe must not keep the router's reference.
        for topic in self._call_topics(self.tool_id):
            with contextlib.suppress(Exception):
                await self.messager.unsubscribe(topic, self._on_task)
        if announce and self.messager.is_connected():
            with contextlib.suppress(Exception):
                await self._unregister()
        with contextlib.suppress(Exception):
            await StatusRouter.of(self.messager, self.topics.status).remove(self)
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks.values()), timeout=grace_period)
            for control in list(self._controls.values()):
                control.cancel("the tool is shutting down")
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2)

    async def _unregister(self) -> None:
        """Unregister, paced by the managers' answers (their ``TOOL_UNREGISTERED``).

        A process unregistering thousands of tools sends no more than its window ahead
        of the managers; with no manager heard, one window per :data:`PACE_SECONDS`.
        """
        async with self._window.slot():
            async with asyncio.timeout(2):
                await self.messager.publish(
                    self.register_topic,
                    UnregisterToolMessage(tool_id=self.tool_id, source=self.messager.client_id),
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(ANSWER_WAIT if self._window.heard else PACE_SECONDS):
                    await self._unregistered.wait()

    def unregistered(self, removal: ToolUnregisteredMessage) -> None:
        """A manager announced a removal of this tool's name (routed by StatusRouter)."""
        if removal.tool_id == self.tool_id and self._stopped:
            self._unregistered.set()

    def stats(self) -> ToolStatsEntry:
        """What this endpoint has served, for a stats request."""
        counters = self.counters
        return ToolStatsEntry(
            tool_id=self.tool_id,
            tool_name=self.tool.name,
            calls=counters.calls,
            errors=counters.errors,
            cancelled=counters.cancelled,
            outcomes=dict(counters.outcomes),
            p50_ms=counters.percentile_ms(50),
            p99_ms=counters.percentile_ms(99),
            in_flight=self.in_flight,
            max_concurrency=self.max_concurrency or None,
            slowed=counters.slowed,
            slowed_seconds=round(counters.slowed_seconds, 3),
            paused=counters.paused,
        )

    @property
    def tool_name(self) -> str:
        """The served tool's name."""
        return self.tool.name

    @property
    def in_flight(self) -> int:
        """Calls being served right now."""
        return len(self._tasks)

    # -- registration ----------------------------------------------------------

    def _registration(self) -> bytes:
        """The registration as it stands: the connection count and the confirmation."""
        key = (self.messager.connections, self._registration_settled())
        data = self._registrations.get(key)
        if data is None:
            self._registrations.clear()
            data = self._registrations[key] = self._build_registration(*key)
        return data

    def _registration_settled(self) -> bool:
        """Whether the registration says ``confirmed`` (and so gets no answer)."""
        # No confirmation is needed once one came, or, for an id of its own (nobody else
        # can hold it), once start() stopped waiting for one.
        settled = self.confirmed.is_set() or self._started
        return self._accepted and settled

    def _build_registration(self, connection: int, confirmed: bool) -> bytes:
        tool = self.tool
        spec = ToolSpec(
            name=tool.name,
            description=tool.manual,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            tags=tool.tags,
            examples=tool.examples,
            metadata=self._metadata(),
        )
        message = RegisterToolMessage(
            source=self.messager.client_id,
            tool_name=tool.name,
            tool_manual=tool.manual,
            tool_api=tool.api,
            tool_spec=spec,
            tool_id=self.tool_id,
            protocol=PROTOCOL_VERSION,
            connection=connection,
            confirmed=True if confirmed else None,
        )
        return encode(message)

    def _metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {}
        if self.max_concurrency:
            metadata["max_concurrency"] = self.max_concurrency
        if self.tool.annotations:
            metadata["annotations"] = self.tool.annotations
        return metadata

    async def register_again(self, inbox: str | None = None) -> None:
        """Publish the registration again (a manager announced itself, or a reconnect).

        It takes its turn in the connection's :class:`~.pacing.RegistrationWindow`: a
        fleet of thousands of tools answering an announcement reaches the manager no
        faster than it answers (or, already confirmed, than the window's pace).

        Args:
            inbox: The announcing manager's own level: the registration goes to it
                alone, on ``{register topic}/{inbox}``, so a manager joining a fleet
                costs one message per tool, not one per tool and manager.

        """
        if self._stopped:
            return
        async with self._window.slot():
            if self._registration_settled():
                await self._publish_registration(inbox)
                await asyncio.sleep(PACE_SECONDS)  # a confirmed registration gets no answer
            else:
                await self._publish_registration(inbox)
                await self._wait_for_answer(ANSWER_WAIT)

    async def _publish_registration(self, inbox: str | None = None) -> None:
        topic = self.register_topic if inbox is None else f"{self.register_topic}/{inbox}"
        try:
            await self.messager.publish(topic, self._registration())
        except PayloadTooLargeError as exc:
            self.refusal = f"registration is too large: {exc}"
            self.confirmed.set()

    async def handle_status(self, parsed: BaseMessage) -> None:
        """React to a status message about this tool's name (routed by StatusRouter)."""
        mine = getattr(parsed, "target", None) in (None, self.messager.client_id)
        self._answered.set()
        self._window.heard = True
        if isinstance(parsed, ToolRegisteredMessage):
            if parsed.tool_id == self.tool_id and mine:
                self.confirmed.set()
                self._accept()
            elif mine and not self.confirmed.is_set():
                # A manager that assigns its own ids (Argentic's) chose another one: adopt it.
                await self._adopt(parsed.tool_id)
                self.confirmed.set()
                self._accept()
        elif isinstance(parsed, ToolRegistrationErrorMessage) and (
            parsed.target == self.messager.client_id
            or (parsed.target is None and parsed.tool_id == self.tool_id)
        ):
            # The tasks that came so far were the holder's, whoever is admitted in the end.
            self._early.clear()
            if parsed.retry_after is not None and parsed.target == self.messager.client_id:
                wait = min(max(parsed.retry_after, 0.0), MAX_HOLDER_WAIT)
                self._held_until = asyncio.get_running_loop().time() + wait + HOLDER_WAIT_SLACK
                logger.info("tool %r: %s", self.tool.name, parsed.error)
                return
            self.refusal = parsed.error
            if parsed.holder not in (None, self.messager.client_id):
                self._give_up(parsed.error)
            self.confirmed.set()

    def retired(self, removal: ToolUnregisteredMessage) -> None:
        """A manager retired this process as the holder of its pinned id (it did not answer).

        Called on receipt, before any later task is read: from now on, the tasks on the
        call topic are the new holder's.
        """
        if removal.target == self.messager.client_id and removal.tool_id == self.tool_id:
            self._give_up(f"a manager retired it ({removal.reason}): another process holds it")

    def _give_up(self, why: str) -> None:
        """Run no more tasks for this pinned id: another process holds it now."""
        if not self._accepted or not self._pinned:
            return
        self._accepted = False
        self.refusal = why  # and keeps no task for later either
        logger.error(
            "tool %r: no longer serving tool id %s: %s; restart this process to serve it again",
            self.tool.name,
            self.tool_id,
            why,
        )

    def _accept(self) -> None:
        """A manager accepted this endpoint as its id's holder: run what came meanwhile."""
        if self._accepted:
            return
        self._accepted = True
        early, self._early = self._early, []
        for message in early:
            self._on_task(message)

    async def _adopt(self, tool_id: str) -> None:
        old = self._call_topics(self.tool_id)
        self.tool_id = tool_id
        for topic in self._call_topics(tool_id):
            await self.messager.subscribe(topic, self._on_task)
        for topic in old:
            await self.messager.unsubscribe(topic, self._on_task)
        self._registrations.clear()

    def _call_topics(self, tool_id: str) -> tuple[str, str]:
        """The shared call topic, and the one per sending broker user (``call_from``)."""
        return self.topics.call(tool_id), self.topics.senders_filter(tool_id)

    # -- receiving ---------------------------------------------------------------

    def _on_task(self, message: IncomingMessage) -> None:
        if not self._accepted:
            if self.refusal is None and len(self._early) < EARLY_TASKS:
                self._early.append(message)
            else:
                self._drops.drop(message.topic, "task for a pinned id this tool does not hold")
            return
        try:
            task = parse_message(message.payload, self.messager.max_payload_bytes)
        except ProtocolError as exc:
            self._drops.drop(message.topic, str(exc))
            return
        # On a sender's own call topic the broker proves who sent the task (its ACL lets
        # each user write only its own level): the answer goes to that user's inbox and
        # nowhere else, and the user is part of the caller in the task record.
        sender = self.topics.sender_of(message.topic, self.tool_id)
        if sender is None and message.topic != self.topics.call(self.tool_id):
            self._drops.drop(message.topic, "not a call topic of this tool")
            return
        if isinstance(task, ToolCancelMessage):
            self._cancel(task, sender)
            return
        if isinstance(task, ToolCreditMessage):
            self._credit(task, sender)
            return
        if isinstance(task, ToolAnswerMessage):
            self._answer(task, sender, message.topic)
            return
        if isinstance(task, ToolPingMessage):
            self._pong(task, sender)
            return
        if type(task) is not TaskMessage:
            self._drops.drop(message.topic, f"expected a TASK message, got {task.type}")
            return
        if task.tool_id != self.tool_id:
            self._drops.drop(message.topic, f"task for tool id {task.tool_id!r}, not this tool")
            return
        if sender is not None:
            task = self._answer_sender(task, sender)
        # The record is keyed by caller and task id: one caller's ids can never select
        # another caller's recorded reply.
        key = record_key(caller(task.source, sender), task.task_id)
        seen = self._recent.get(key)
        # The time left is measured from this receipt with the caller's timeout: the
        # absolute deadline on the wire comes from the caller's clock, which may be off.
        local_deadline = local_deadline_from(task.timeout_seconds)
        if seen is RUNNING:
            self._drops.drop(message.topic, f"task {task.task_id} is already running")
            return
        if seen is not None:
            if seen is DONE:
                seen = self._executor.error(
                    task, "this task already ran; its result was too large to keep", "duplicate"
                )
            self._start(key, self._executor.publish_reply(seen, task, local_deadline), "resend")
            return
        self._recent.remember(key, RUNNING, keep_until(local_deadline, task.deadline))
        self.metrics.received(len(message.payload))
        control = CallControl(
            functools.partial(self.messager.publish, self._executor.reply_topic(task)),
            task=task,
            tool_id=self.tool_id,
            source=self.messager.client_id,
            max_payload_bytes=self.messager.max_payload_bytes,
            local_deadline=local_deadline,
            counters=self.counters,
        )
        self._controls[key] = control
        serving = self._executor.serve(task, key, local_deadline, control)
        control.runner = self._start(key, serving, "serve")
        control.runner.add_done_callback(lambda _: self._controls.pop(key, None))

    def _answer_sender(self, task: TaskMessage, sender: str) -> TaskMessage:
        """``task`` answered on ``sender``'s inbox, the only reply topic it may name."""
        reply_to = self.topics.reply(self.tool_id, sender)
        if task.reply_to != reply_to:
            if task.reply_to is not None:
                self._drops.drop(task.reply_to, f"reply_to is not the inbox of user {sender!r}")
            task = task.model_copy(update={"reply_to": reply_to})
        return task

    def _cancel(self, cancel: ToolCancelMessage, sender: str | None = None) -> None:
        """A caller cancelled its task: answer ``cancelled`` now, and stop the work."""
        key = record_key(caller(cancel.source, sender), cancel.task_id)
        control = self._controls.get(key)
        if control is None or control.finished or cancel.tool_id not in (None, self.tool_id):
            return  # finished, never seen, or another caller's task id: nothing to stop
        reason = cancel.reason or "cancelled by the caller"
        logger.info("tool %r: cancelling task %s (%s)", self.tool.name, cancel.task_id, reason)
        # The outcome is decided here: whatever the tool does from now on is dropped.
        control.close()
        reply = self._executor.error(control.task, f"cancelled: {reason}", "cancelled")
        self._recent.finished(key, reply)
        answer = self._executor.publish_reply(reply, control.task, None)
        self._start(key + "\x00cancelled", answer, "reply")
        control.cancel(reason)

    def _credit(self, credit: ToolCreditMessage, sender: str | None = None) -> None:
        """A caller's reader took chunks of its stream: let the tool send that many more.

        Matched as a cancellation is: only the caller of the task can give it credit.
        """
        key = record_key(caller(credit.source, sender), credit.task_id)
        control = self._controls.get(key)
        if control is None or credit.tool_id not in (None, self.tool_id):
            return  # finished, never seen, or another caller's task id
        control.granted(credit.read)

    def _answer(self, answer: ToolAnswerMessage, sender: str | None, topic: str) -> None:
        """A caller answered a question of its task's tool.

        Matched as a cancellation is: only the caller of the task can answer it, and only
        a question the call is waiting on.
        """
        key = record_key(caller(answer.source, sender), answer.task_id)
        control = self._controls.get(key)
        if control is None or answer.tool_id not in (None, self.tool_id):
            self._drops.drop(topic, f"answer for task {answer.task_id}, not a call in flight here")
            return
        if not control.answered(answer):
            self._drops.drop(topic, f"answer to no open question {answer.ask_id!r}")

    def _start(self, key: str, work: Coroutine[Any, Any, None], kind: str) -> asyncio.Task[None]:
        runner = asyncio.create_task(work, name=f"tool:{self.tool.name}:{kind}:{key}")
        self._tasks[key] = runner
        runner.add_done_callback(lambda _: self._tasks.pop(key, None))
        return runner

    def _pong(self, ping: ToolPingMessage, sender: str | None = None) -> None:
        """A manager asks whether this instance is alive: answer at once."""
        if ping.tool_id != self.tool_id or ping.reply_to is None:
            return
        if sender is not None and ping.reply_to != self.topics.reply(self.tool_id, sender):
            self._drops.drop(ping.reply_to, f"reply_to is not the inbox of user {sender!r}")
            return
        if not self.topics.is_reply_topic(ping.reply_to, self.tool_id):
            self._drops.drop(ping.reply_to, "reply_to is not one of this tool's reply topics")
            return
        pong = ToolPongMessage(
            source=self.messager.client_id, tool_id=self.tool_id, in_flight=len(self._tasks)
        )
        self.messager.spawn(self._publish_pong(ping.reply_to, pong), "pong")

    async def _publish_pong(self, topic: str, pong: ToolPongMessage) -> None:
        with contextlib.suppress(TimeoutError, BrokerError):
            async with asyncio.timeout(5):
                await self.messager.publish(topic, pong)


def caller(source: str | None, sender: str | None) -> str | None:
    """Who a task is from, for the task record.

    The broker user proven by the call topic it came on (if any), and the client id it
    claims.
    """
    return source if sender is None else f"{sender}\x00{source or ''}"


EARLY_TASKS = 256
"""Tasks a tool with a pinned id keeps while no manager has accepted it as the holder."""

ANSWER_WAIT = 1.0 / 3
"""How long a registration sent again, not yet confirmed, holds its slot of the
registration window while it waits for an answer (an attempt's wait by default)."""

MAX_HOLDER_WAIT = 10.0
"""Longest a registration waits, per attempt, for a manager checking whether the holder
of its pinned id still answers (the manager says how long; this bounds a wrong answer)."""

HOLDER_WAIT_SLACK = 1.0
"""Added to the manager's check time: its verdict still has to cross the broker."""


def registration_topic(topics: Topics, messager: Messager, owner: str | None = None) -> str:
    """The topic a tool process registers on: its own when it has a broker user.

    ``owner`` defaults to the connection's user name. With one, registrations,
    unregistrations and the Last Will go to ``{register}/{owner}/{client id}``, where a
    broker ACL lets only that user write, so no other client can retire or take over
    this process's tools. Without one (an open broker), the shared topic.
    """
    owner = owner if owner is not None else messager.username
    if owner:
        with contextlib.suppress(ValueError):
            return topics.owned_register(owner, messager.client_id)
    return topics.register
