"""Who is on the bus: registrations, unregistrations and Last Wills on the register topic.

:class:`Membership` turns each message on the register topic into a registry
decision (admit, refuse, replace, remove) and answers on the status topic. What a
decision means for calls in flight it does not do itself: it hands its owner a
:data:`Change` (:class:`Admitted`, :class:`Removed`, :class:`ProcessGone`), and the
:class:`~argentic_tools.ToolManager` resizes windows, ends the calls of a tool whose
process died, and has tasks lost with a restarted broker, or with a tool's own lost
connection, sent again once their tool registers again.

Joining a fleet costs one message per tool: the manager's announcement names its
inbox, tools answer it on ``{register topic}/{inbox}`` for this manager alone, and
a registration that says it is already confirmed gets no confirmation back. The
confirmations that are sent go to the registering process's own status topic.
"""

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal

import anyio.to_thread

from ..._errors import ProtocolError
from ..._lifecycle import TaskSet
from ..._logging import DropLog, InstanceLogger
from ..._protocol.fleet_messages import (
    ClientOfflineMessage,
    RegisterToolMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
)
from ..._protocol.messages import BaseMessage
from ..._protocol.parsing import parse_message
from ..._protocol.topics import Topics, inbox_level
from ..._protocol.validation import SchemaValidator
from ..._transport import IncomingMessage, Messager
from ..publishing import publish_quietly
from .info import Entry, ToolInfo
from .liveness import Liveness
from .registry import RegistrationRefusedError, ToolRegistry

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


@dataclass(frozen=True, slots=True)
class Admitted:
    """A tool instance was admitted, new or again: its advertised limit applies from now.

    ``resend`` says which of its calls' tasks to send again: ``"lost"``, those that
    went out on a connection of ours older than the registration (a broker restart
    lost them); ``"all"``, every task it has not answered (its own process
    reconnected, and its broker node may have died with the tasks queued for it);
    ``"none"`` for a new instance. A tool runs a task id once: for a task it already
    ran it sends the recorded result again, and it ignores one still running.
    """

    entry: Entry
    resend: Literal["none", "lost", "all"]


@dataclass(frozen=True, slots=True)
class Removed:
    """A tool instance left the registry; ``offline``: its process died, so its calls end."""

    entry: Entry
    offline: bool


@dataclass(frozen=True, slots=True)
class ProcessGone:
    """A process's Last Will counted: calls to its tools (``source`` under ``owner``) end."""

    source: str | None
    owner: str | None


Change = Admitted | Removed | ProcessGone
"""What a register-topic message changed for the calls in flight."""


class Membership:
    """The register-topic side of one manager.

    Args:
        registry: The manager's registry.
        on_change: Applies each :data:`Change` to the calls in flight (the manager's).
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
        on_change: Callable[[Change], None],
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
        self._on_change = on_change
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
        self._timers: set[asyncio.TimerHandle] = set()

    def close(self) -> None:
        """Forget the Last Wills still waiting to count (the manager is closing)."""
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

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
        self._on_change(ProcessGone(source, owner))

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
        if self.liveness is not None:
            self.liveness.alive(entry.info.id)
        info = entry.info
        if is_new:
            self.logger.info("registered tool %r as %s (from %s)", info.name, info.id, info.source)
            self._on_change(Admitted(entry, "none"))
        elif (
            previous is not None
            and previous.connection is not None
            and entry.connection is not None
            and entry.connection > previous.connection
        ):
            self._on_change(Admitted(entry, "all"))
        else:
            self._on_change(Admitted(entry, "lost"))
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

    def _remove(self, entry: Entry, reason: str) -> None:
        if not self.registry.remove(entry):
            return
        # An unregistering tool finishes its in-flight calls (graceful shutdown); a dead
        # one never will.
        self._on_change(Removed(entry, offline=reason == "offline"))
        self._announce_removal(entry.info, reason)

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

    async def _publish_quietly(self, topic: str, message: Any) -> None:
        await publish_quietly(self.messager, self.logger, topic, message)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(coro, "status")
