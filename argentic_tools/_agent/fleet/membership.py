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

A pinned id held by another process of the same tool and broker user is a restart
whose old process may be gone (SIGKILLed before its Last Will counted, or frozen and
leaving none). The claim is not refused at once: the claimant hears that the holder is
being checked (``retry_after``), the holder is pinged, and silent for
:data:`HOLDER_PING_SECONDS` it is retired as if its Will had come (its calls end
``tool_offline``) and the claimant admitted; if it answers, the claim is refused.
"""

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

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
from .changes import Admitted, Change, ProcessGone, Removed
from .info import Entry, ToolInfo
from .liveness import Liveness
from .registry import HeldIdError, RegistrationRefusedError, ToolRegistry

WILL_GRACE_SECONDS = 0.25
"""How long a Last Will waits before it counts: a broker that stops gracefully publishes
every client's will just before it drops its connections, so a will followed by the loss
of our own connection within this time is the broker's shutdown, not a tool's death."""

REFUSAL_REPLIES_PER_SECOND = 50
"""Refused registrations answered on the status topic per second; a flood of forged
registrations must not turn into a flood of replies."""

HOLDER_PING_SECONDS = 1.0
"""How long the holder of a pinned id has to answer a ping when another process of the
same tool and broker user claims the id; silent that long, it is retired and the claimant
admitted. A live tool answers within milliseconds, even one busy with calls (pings are
answered on receipt); a loop blocked longer than this loses its id to its restart."""

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
class _Claim:
    """A registration for a pinned id another process holds, waiting on the holder's ping."""

    holder: Entry
    registration: RegisterToolMessage
    owner: str | None


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
        inbox: The manager's own level, where tools answer its announcements (and
            their pings).
        call_topic: Where the manager's pings go (``{call_base}/{tool_id}``, or the
            tenant's own level; see :class:`Liveness`).

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
        inbox: str | None = None,
        call_topic: Callable[[str], str] | None = None,
    ) -> None:
        self.registry = registry
        self.liveness = Liveness(
            registry, messager, topics, inbox, logger, tasks, call_topic, retire=self.retire
        )
        """Which instances answer: told of each sign of life, asked before a takeover,
        and retiring (through :meth:`retire`) instances silent to every ping."""
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
        self._claims: dict[str, _Claim] = {}

    def close(self) -> None:
        """Forget the Last Wills still waiting to count and the claims (the manager closes)."""
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self._claims.clear()

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
        except HeldIdError as exc:
            holder = exc.holder.info.source
            if exc.same_tool and self._claim(reg, owner, exc.holder):
                self.logger.info(
                    "%s claims tool id %s held by %s: asking the holder whether it answers",
                    reg.source,
                    reg.tool_id,
                    exc.holder.info.source,
                )
                self._refuse(
                    reg,
                    f"{exc}; asking it whether it still answers",
                    holder,
                    retry_after=HOLDER_PING_SECONDS,
                )
            else:
                self._refuse(reg, str(exc), holder)
            return
        except RegistrationRefusedError as exc:
            self._refuse(reg, str(exc))
            return
        for old in replaced:
            self._announce_removal(old.info, "replaced")
        self.liveness.alive(entry.info.id, entry.info.source)
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

    def _refuse(
        self,
        reg: RegisterToolMessage,
        error: str,
        holder: str | None = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        """Answer a registration with a refusal (final unless ``retry_after`` is given).

        ``holder``: the process holding the proposed id, when that is the reason.
        """
        refused = f"registration of {reg.tool_name!r} refused: {error}"
        self._drops.drop(self.topics.register, refused)
        topic = self._status_topic(reg.source, reg.protocol)
        # Refusals on the shared topic reach every process: a flood of forged
        # registrations must not become a flood there. A process's own topic reaches
        # only it, and a process registering thousands of tools paces itself by these
        # answers (see argentic_tools/_tools/serving/pacing.py).
        if topic == self.topics.status and not self._refusal_budget():
            return  # a flood: the registering side learns on its next attempt
        self._spawn(
            self._publish_quietly(
                topic,
                ToolRegistrationErrorMessage(
                    source=self.messager.client_id,
                    tool_name=str(reg.tool_name),
                    error=error,
                    tool_id=reg.tool_id,
                    target=reg.source,
                    holder=holder,
                    retry_after=retry_after,
                ),
            )
        )

    def _claim(self, reg: RegisterToolMessage, owner: str | None, holder: Entry) -> bool:
        """Take ``reg``'s claim on its id, and ask the holder; False when it cannot be asked.

        The latest claim on an id is the one admitted if the holder is silent; one
        ping per holder, however many claims come meanwhile.
        """
        if not self.liveness.can_ping(holder) or reg.tool_id is None:
            return False
        previous = self._claims.get(reg.tool_id)
        self._claims[reg.tool_id] = _Claim(holder, reg, owner)
        if previous is None or previous.holder is not holder:
            self._tasks.spawn(self._check_holder(reg.tool_id, holder), "holder-check", watcher=True)
        return True

    async def _check_holder(self, tool_id: str, holder: Entry) -> None:
        connection = self.messager.connections
        try:
            answered = await self.liveness.answers(holder, HOLDER_PING_SECONDS)
        except Exception:  # noqa: BLE001 (the ping could not be sent: decided below)
            answered = False
            connection = -1
        claim = self._claims.get(tool_id)
        if claim is None or claim.holder is not holder:
            return  # settled meanwhile: the holder left and the claimant was admitted
        del self._claims[tool_id]
        if not self.messager.is_connected() or self.messager.connections != connection:
            # Our own connection failed meanwhile: silence proves nothing. The claimant
            # registers again once its wait is over, and the holder is asked again.
            self.logger.info("could not ask the holder of tool id %s: no connection", tool_id)
            return
        if self.registry.get(tool_id) is holder:
            if answered:
                self._refuse(
                    claim.registration,
                    f"tool id {tool_id} is already used by tool {holder.info.name!r} "
                    f"from {holder.info.source}, which answers",
                    holder.info.source,
                )
                return
            self.logger.warning(
                "tool %r (%s) of %s did not answer within %g s; %s takes its id over",
                holder.info.name,
                tool_id,
                holder.info.source,
                HOLDER_PING_SECONDS,
                claim.registration.source,
            )
            self._remove(holder, "offline", retired=True)
        # The holder left, was retired, or registered again: decide the claim afresh.
        self._handle_register(claim.registration, claim.owner)

    def retire(self, entry: Entry) -> None:
        """Remove ``entry``, silent to every ping (see :mod:`.liveness`), as if its Will came.

        Its calls end ``tool_offline``. The removal is announced (reason ``silent``): a
        process that was only frozen reads it when it runs again and registers again.
        """
        self._remove(entry, "silent", offline=True)

    def _status_topic_of(self, entry: Entry) -> str:
        """The registering process's own status topic when it reads one, else the shared one."""
        return self._status_topic(entry.info.source, entry.protocol)

    def _status_topic(self, source: str | None, protocol: int | None) -> str:
        level = inbox_level(source or "")
        if protocol is None or protocol < 2 or level is None:
            return self.topics.status  # Argentic tools and older versions read only this
        return f"{self.topics.status}/{level}"

    def _remove(
        self, entry: Entry, reason: str, *, retired: bool = False, offline: bool = False
    ) -> None:
        if not self.registry.remove(entry):
            return
        # An unregistering tool finishes its in-flight calls (graceful shutdown); a dead
        # one never will.
        self._on_change(Removed(entry, offline=offline or reason == "offline"))
        # A holder ``retired`` for its silence may still be running (frozen): it is told,
        # so that, resumed, it runs no task meant for the process taking over its id.
        self._announce_removal(entry.info, reason, retired)
        claim = self._claims.get(entry.info.id)
        if claim is not None and claim.holder is entry:
            # It left (its Last Will, or it unregistered) while a claim waited on it.
            del self._claims[entry.info.id]
            self._handle_register(claim.registration, claim.owner)

    def _announce_removal(self, info: ToolInfo, reason: str, retired: bool = False) -> None:
        self.logger.info("removed tool %r (%s): %s", info.name, info.id, reason)
        self._spawn(
            self._publish_status(
                ToolUnregisteredMessage(
                    source=self.messager.client_id,
                    tool_id=info.id,
                    tool_name=info.name,
                    reason=reason,
                    target=info.source if retired else None,
                )
            )
        )

    async def _publish_status(self, message: Any) -> None:
        await self._publish_quietly(self.topics.status, message)

    async def _publish_quietly(self, topic: str, message: Any) -> None:
        await publish_quietly(self.messager, self.logger, topic, message)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(coro, "status")
