"""Who is on the bus: registrations, unregistrations and Last Wills on the register topic.

:class:`Membership` turns each message on the register topic into a registry
decision (admit, refuse, replace, remove), answers on the status topic, ends the
calls of a tool whose process died, and re-sends tasks lost with a restarted
broker, or with a tool's own lost connection, once their tool registers again.

Joining a fleet costs one message per tool: the manager's announcement names its
inbox, tools answer it on ``{register topic}/{inbox}`` for this manager alone, and
a registration that says it is already confirmed gets no confirmation back. The
confirmations that are sent go to the registering process's own status topic.
"""

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any

import anyio.to_thread

from .._errors import BrokerError, ProtocolError
from .._lifecycle import TaskSet
from .._logging import DropLog, InstanceLogger
from .._protocol.fleet_messages import (
    ClientOfflineMessage,
    RegisterToolMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
)
from .._protocol.messages import BaseMessage, TaskErrorMessage
from .._protocol.parsing import parse_message
from .._protocol.topics import Topics, inbox_level
from .._protocol.validation import SchemaValidator
from .._transport import IncomingMessage, Messager
from .calls import CallBook
from .info import ToolInfo
from .liveness import Liveness
from .pending import CallSpec, Pending
from .policy import ToolPolicy
from .registry import Entry, RegistrationRefusedError, ToolRegistry

REGISTRY_SETTLE_SECONDS = 2.0
"""After a reconnection, how long a call to a name not (yet) registered waits for its tool
to register again before it ends ``not_found`` (within the call's own timeout)."""

STARTUP_SETTLE_SECONDS = 0.5
"""After a manager starts, how long a call to a name not (yet) registered waits for the
live tools to answer its announcement before it ends ``not_found`` (within the call's own
timeout): a script that calls a tool right after starting its manager finds it."""

WILL_GRACE_SECONDS = 0.25
"""How long a Last Will waits before it counts: a broker that stops gracefully publishes
every client's will just before it drops its connections, so a will followed by the loss
of our own connection within this time is the broker's shutdown, not a tool's death."""

REFUSAL_REPLIES_PER_SECOND = 50
"""Refused registrations answered on the status topic per second; a flood of forged
registrations must not turn into a flood of replies."""

MAX_BACKLOG = 10_000
"""Register-topic messages held while new schemas compile; more are dropped (a flood)."""


def _compile_all(keys: list[str]) -> list[tuple[str, SchemaValidator]]:
    compiled = []
    for key in keys:
        try:
            compiled.append((key, SchemaValidator(json.loads(key))))
        except ValueError:
            continue  # admit() refuses it, saying why
    return compiled


async def publish_quietly(
    messager: Messager,
    logger: "logging.Logger | InstanceLogger",
    topic: str,
    message: Any,
) -> None:
    """Publish within 10 s, or log why not: for messages nobody waits on."""
    try:
        async with asyncio.timeout(10):
            await messager.publish(topic, message)
    except (TimeoutError, BrokerError) as exc:
        logger.warning("could not publish %s: %s", getattr(message, "type", "a task"), exc)


class Membership:
    """The register-topic side of one manager.

    Args:
        registry: The manager's registry.
        calls: The manager's pending calls.
        messager: The manager's connection.
        topics: The manager's topics.
        logger: The manager's logger.
        drops: Where rejected messages are logged (rate-limited).
        tasks: Owns the publishes this starts (the manager cancels them on close).
        liveness: Told when a tool instance shows it is alive.
        inbox: The manager's own level, where tools answer its announcements.

    """

    def __init__(
        self,
        registry: ToolRegistry,
        calls: CallBook,
        messager: Messager,
        topics: Topics,
        logger: InstanceLogger,
        drops: DropLog,
        tasks: TaskSet,
        liveness: Liveness | None = None,
        inbox: str | None = None,
    ) -> None:
        self.registry = registry
        self.liveness = liveness
        self.inbox = inbox
        self.calls = calls
        self.messager = messager
        self.topics = topics
        self.logger = logger
        self._drops = drops
        self._tasks = tasks
        # Messages waiting behind a registration whose schemas compile off the loop, in
        # arrival order (an unregistration must not overtake its registration).
        self._backlog: deque[tuple[BaseMessage, list[str], str]] = deque()
        self._draining = False
        self._refusals_since = 0.0
        self._refusals = 0
        self._settle_until: float | None = None
        self._timers: set[asyncio.TimerHandle] = set()

    def close(self) -> None:
        """Forget the Last Wills still waiting to count (the manager is closing)."""
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    def started(self) -> None:
        """The manager just announced itself: live tools are registering again."""
        self._settle_until = asyncio.get_running_loop().time() + STARTUP_SETTLE_SECONDS

    def reconnected(self) -> None:
        """The manager's connection is back: tools may take a moment to register again."""
        self._settle_until = asyncio.get_running_loop().time() + REGISTRY_SETTLE_SECONDS

    def settle_remaining(self) -> float:
        """Seconds until the registry has settled after a start or reconnection (0: now)."""
        if self._settle_until is None:
            return 0.0
        return max(self._settle_until - asyncio.get_running_loop().time(), 0.0)

    def settling(self) -> bool:
        """True while disconnected or just reconnected: tools may not be back yet."""
        if not self.messager.is_connected():
            return True
        if self._settle_until is None:
            return False
        return asyncio.get_running_loop().time() < self._settle_until

    async def after_settling(
        self, spec: CallSpec, not_found: TaskErrorMessage, policy: ToolPolicy
    ) -> "Pending | TaskErrorMessage":
        """Wait (within the call's timeout) for a tool to come back after a reconnection."""
        loop = asyncio.get_running_loop()
        patience = spec.wait
        if patience is None:
            watch = spec.watch
            patience = watch.idle if watch is not None and watch.idle is not None else 0.0
        deadline = loop.time() + patience
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(deadline):
                await self.messager.wait_connected()
            settle = self._settle_until or loop.time()
            async with asyncio.timeout_at(min(deadline, max(settle, loop.time()))):
                await self.registry.wait_for(spec.name)
        remaining = deadline - loop.time()
        if remaining <= 0 or self.registry.lookup(spec.name) is None:
            return not_found
        if spec.wait is not None:
            spec.wait = remaining
        return self.calls.prepare(spec, policy)

    def _resend_lost(self, entry: Entry) -> None:
        """Send again the tasks to a tool that went out on an earlier connection.

        The tool runs a task id once: for a task it already ran it sends the recorded
        result again, and it ignores one still running.
        """
        topic = self.topics.call(entry.info.id)
        for pending in self.calls.lost(entry):
            self._tasks.spawn(self._resend(topic, pending), "resend")

    @property
    def addressed_filters(self) -> list[str]:
        """Where tools answer this manager's announcements.

        ``{register}/{inbox}`` from tools on the shared topic,
        ``{register}/{owner}/{client}/{inbox}`` from owners.
        """
        if self.inbox is None:
            return []
        register = self.topics.register
        return [f"{register}/{self.inbox}", f"{register}/+/+/{self.inbox}"]

    def on_addressed(self, message: IncomingMessage) -> None:
        """Handle a registration sent to this manager alone (an answer to its announcement).

        It counts as if it came on the topic it was sent below (the shared topic, or the
        owner's own), so ownership is proven by the same ACL rule.
        """
        base = message.topic.rpartition("/")[0]
        self.on_register_topic(IncomingMessage(base, message.payload, message.retain))

    def on_register_topic(self, message: IncomingMessage) -> None:
        """Handle one message on the register topic (the Messager's handler)."""
        try:
            parsed = parse_message(message.payload, self.messager.max_payload_bytes)
        except ProtocolError as exc:
            self._drops.drop(message.topic, str(exc))
            return
        keys = (
            self.registry.uncompiled_schemas(parsed)
            if isinstance(parsed, RegisterToolMessage)
            else []
        )
        if keys or self._backlog:
            self._enqueue(parsed, keys, message.topic)
        else:
            self._apply(parsed, message.topic)

    def _enqueue(self, parsed: BaseMessage, keys: list[str], topic: str) -> None:
        if len(self._backlog) >= MAX_BACKLOG:
            self._drops.drop(topic, "too many registrations are waiting to be checked")
            return
        self._backlog.append((parsed, keys, topic))
        if not self._draining:
            self._draining = True
            self._tasks.spawn(self._drain(), "registrations")

    async def _drain(self) -> None:
        """Compile new schemas in a worker thread, then apply the messages in order.

        Compiling a schema takes about a millisecond, a large one far more; on the
        event loop, a flood of registrations with new schemas would delay every result.
        """
        try:
            while self._backlog:
                parsed, keys, topic = self._backlog[0]
                if keys:
                    compiled = await anyio.to_thread.run_sync(_compile_all, keys)
                    self.registry.add_compiled(compiled)
                self._backlog.popleft()
                self._apply(parsed, topic)
                await asyncio.sleep(0)  # a long backlog must not hold the loop either
        finally:
            self._draining = False

    def _refusal_budget(self) -> bool:
        """True while refusals are answered at most REFUSAL_REPLIES_PER_SECOND a second."""
        now = time.monotonic()
        if now - self._refusals_since >= 1.0:
            self._refusals_since, self._refusals = now, 0
        self._refusals += 1
        return self._refusals <= REFUSAL_REPLIES_PER_SECOND

    def _apply(self, parsed: BaseMessage, topic: str) -> None:
        # On a client's own registration topic the broker's ACL proves who sent the
        # message: owner and client id come from the topic, not from the payload.
        owned = self.topics.owner_of(topic)
        owner, source = owned if owned is not None else (None, parsed.source)
        if isinstance(parsed, RegisterToolMessage):
            if owned is not None:
                parsed = parsed.model_copy(update={"source": source})
            self._handle_register(parsed, owner)
        elif isinstance(parsed, UnregisterToolMessage):
            entry = self.registry.get(parsed.tool_id)
            if entry is None:
                self.logger.debug("unregistration of unknown tool id %s", parsed.tool_id)
            elif entry.info.owner != owner or (
                source is not None and entry.info.source not in (None, source)
            ):
                self._drops.drop(
                    topic,
                    f"{source} (broker user {owner}) cannot unregister tool "
                    f"{parsed.tool_id} of {entry.info.source} (broker user {entry.info.owner})",
                )
            else:
                self._remove(entry, "unregistered")
        elif isinstance(parsed, ClientOfflineMessage):
            # A broker that stops gracefully publishes every client's Last Will just
            # before it closes its connections, ours included. Act on a will only when
            # our own connection outlives it by WILL_GRACE_SECONDS.
            connection = self.messager.connections

            def confirm() -> None:
                self._timers.discard(timer)
                self._confirm_offline(source, owner, connection)

            timer = asyncio.get_running_loop().call_later(WILL_GRACE_SECONDS, confirm)
            self._timers.add(timer)
        else:
            self._drops.drop(topic, f"unexpected {parsed.type} message")

    def _confirm_offline(self, source: str | None, owner: str | None, connection: int) -> None:
        if not self.messager.is_connected() or self.messager.connections != connection:
            # Our connection went down with the tool's: the broker stopped, which proves
            # nothing about the tool. It registers again when it is back; calls to it
            # wait for that within their timeouts.
            self.logger.info("ignored the Last Will of %s: the broker went down", source)
            return
        # A claim on the shared topic retires only tools registered there; an owner's
        # tools only by a message on its own topic.
        for entry in self.registry.from_source(source):
            if entry.info.owner == owner:
                self._remove(entry, "offline")
        # Calls to tools that already unregistered but were still finishing.
        self.calls.fail(lambda p: p.source == source and p.entry.info.owner == owner)

    def _handle_register(self, reg: RegisterToolMessage, owner: str | None) -> None:
        previous = self.registry.get(reg.tool_id) if reg.tool_id is not None else None
        try:
            entry, is_new, replaced = self.registry.admit(
                reg, self.messager.connections, owner=owner
            )
        except RegistrationRefusedError as exc:
            self._drops.drop(
                self.topics.register, f"registration of {reg.tool_name!r} refused: {exc}"
            )
            if not self._refusal_budget():
                return  # a flood: the registering side learns on its next attempt
            self._spawn(
                self._publish_status(
                    ToolRegistrationErrorMessage(
                        source=self.messager.client_id,
                        tool_name=str(reg.tool_name),
                        error=str(exc),
                        tool_id=reg.tool_id,
                        target=reg.source,
                    )
                )
            )
            return
        for old in replaced:
            self._announce_removal(old.info, "replaced")
        self.calls.admitted(entry)
        if self.liveness is not None:
            self.liveness.alive(entry.info.id)
        info = entry.info
        if is_new:
            self.logger.info("registered tool %r as %s (from %s)", info.name, info.id, info.source)
        elif (
            previous is not None
            and previous.connection is not None
            and entry.connection is not None
            and entry.connection > previous.connection
        ):
            self._resend_all(entry)
        else:
            self._resend_lost(entry)
        if reg.confirmed:
            return  # a manager confirmed it before: nothing to tell it
        confirmation = ToolRegisteredMessage(
            source=self.messager.client_id,
            tool_id=info.id,
            tool_name=info.name,
            target=info.source,
        )
        self._spawn(self._publish_quietly(self._status_topic_of(entry), confirmation))

    def _status_topic_of(self, entry: Entry) -> str:
        """The registering process's own status topic when it reads one, else the shared one."""
        level = inbox_level(entry.info.source or "")
        if entry.protocol is None or entry.protocol < 2 or level is None:
            return self.topics.status  # Argentic tools and older versions read only this
        return f"{self.topics.status}/{level}"

    def _resend_all(self, entry: Entry) -> None:
        """The tool's process reconnected: send it again every task still waiting on it.

        Its broker node may have died with the tasks queued for it. The tool runs a task
        id once: one it already ran gets its recorded reply, one still running is ignored.
        """
        topic = self.topics.call(entry.info.id)
        waiting = self.calls.sent_to(entry.info.id)
        if waiting:
            self.logger.info(
                "tool %r (%s) reconnected; sending %d pending task(s) again",
                entry.info.name,
                entry.info.id,
                len(waiting),
            )
        for pending in waiting:
            self._tasks.spawn(self._resend(topic, pending), "resend")

    def _remove(self, entry: Entry, reason: str) -> None:
        if not self.registry.remove(entry):
            return
        info = entry.info
        self.calls.drop_lost(info.id)
        if reason == "offline":
            # An unregistering tool finishes its in-flight calls (graceful shutdown);
            # a dead one never will.
            self.calls.fail(lambda pending: pending.tool_id == info.id)
        self._announce_removal(info, reason)

    def _announce_removal(self, info: ToolInfo, reason: str) -> None:
        self.logger.info("removed tool %r (%s): %s", info.name, info.id, reason)
        self._spawn(
            self._publish_status(
                ToolUnregisteredMessage(
                    source=self.messager.client_id,
                    tool_id=info.id,
                    tool_name=info.name,
                    reason=reason,
                )
            )
        )

    async def _publish_status(self, message: Any) -> None:
        await self._publish_quietly(self.topics.status, message)

    async def _resend(self, topic: str, pending: Pending) -> None:
        # Built again here: a pending call never keeps its task's bytes (CallBook.encoded).
        await self._publish_quietly(topic, self.calls.encoded(pending))

    async def _publish_quietly(self, topic: str, message: Any) -> None:
        await publish_quietly(self.messager, self.logger, topic, message)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(coro, "status")
