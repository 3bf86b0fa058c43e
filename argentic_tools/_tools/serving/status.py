"""One status-topic subscription per connection, shared by the tools served on it.

Each status message is parsed once and handed only to the endpoints whose tool it
names; with a thousand tools in one process, per-endpoint subscriptions would parse
every confirmation a thousand times. Managers confirm this package's tools on the
connection's own status topic, ``{status}/{client id}``, so a confirmation reaches the
one process it is about; Argentic managers confirm on the shared one. The router
belongs to its connection (a :class:`Messager` attachment), and the work it starts
is owned by that connection, so closing the connection cancels and awaits it. It routes
to any :class:`StatusRecipient` (a tool endpoint is one), and never imports the endpoints.
"""

import asyncio
import contextlib
import os
import socket
import time
from typing import Protocol

from ..._errors import BrokerError, ProtocolError
from ..._protocol.fleet_messages import (
    ManagerOnlineMessage,
    StatsRequestMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolStatsEntry,
    ToolStatsMessage,
    ToolUnregisteredMessage,
)
from ..._protocol.messages import BaseMessage
from ..._protocol.parsing import parse_message
from ..._protocol.topics import Topics, inbox_level
from ..._transport import IncomingMessage, Messager
from ..records.stats import STARTED


class StatusRecipient(Protocol):
    """What the router hands status messages to: one tool served on its connection."""

    @property
    def tool_name(self) -> str:
        """The name status messages about the tool carry."""

    @property
    def tool_id(self) -> str:
        """The id the tool is served under."""

    @property
    def topics(self) -> Topics:
        """The protocol topics it is served under."""

    async def register_again(self, inbox: str | None = None) -> None:
        """Publish the registration again (to one manager's ``inbox`` when given)."""

    async def handle_status(self, parsed: BaseMessage) -> None:
        """React to a confirmation or a refusal naming the tool."""

    def retired(self, removal: ToolUnregisteredMessage) -> None:
        """A manager removed the tool; act at once if it retired this process's pinned id."""

    def unregistered(self, removal: ToolUnregisteredMessage) -> None:
        """A manager announced the removal of a tool of this name (an unregistration's answer)."""

    def stats(self) -> ToolStatsEntry:
        """What the tool has served, for a stats request."""


class StatusRouter:
    """Routes status messages on one topic of one connection to the endpoints they name."""

    def __init__(self, messager: Messager, topic: str) -> None:
        self.messager = messager
        self.topic = topic
        self.by_name: dict[str, list[StatusRecipient]] = {}

    @classmethod
    def of(cls, messager: Messager, topic: str) -> "StatusRouter":
        """The router of ``topic`` on ``messager``, created on first use."""
        return messager.attachment((cls, topic), lambda: cls(messager, topic))

    @property
    def own_topic(self) -> str | None:
        """The connection's own status topic (None when its client id cannot be a level)."""
        level = inbox_level(self.messager.client_id)
        return None if level is None else f"{self.topic}/{level}"

    async def add(self, endpoint: StatusRecipient) -> None:
        """Route status messages naming ``endpoint``'s tool to it."""
        first = not self.by_name
        self.by_name.setdefault(endpoint.tool_name, []).append(endpoint)
        if first:
            await self.messager.subscribe(self.topic, self._on_status)
            if self.own_topic is not None:
                await self.messager.subscribe(self.own_topic, self._on_status)

    async def remove(self, endpoint: StatusRecipient) -> None:
        """Stop routing to ``endpoint``; unsubscribe when no endpoint is left."""
        name = endpoint.tool_name
        remaining = [e for e in self.by_name.get(name, ()) if e is not endpoint]
        if remaining:
            self.by_name[name] = remaining
        else:
            self.by_name.pop(name, None)
        if not self.by_name:
            await self.messager.unsubscribe(self.topic, self._on_status)
            if self.own_topic is not None:
                await self.messager.unsubscribe(self.own_topic, self._on_status)

    def _on_status(self, message: IncomingMessage) -> None:
        try:
            parsed = parse_message(message.payload, self.messager.max_payload_bytes)
        except ProtocolError:
            return  # the status topic is shared; other peers' chatter is not ours to judge
        if isinstance(parsed, ManagerOnlineMessage):
            # Answer that manager alone when it says where; an Argentic manager does not.
            inbox = None if parsed.inbox is None else inbox_level(parsed.inbox)
            endpoints = [e for group in self.by_name.values() for e in group]
            self.messager.spawn(
                asyncio.gather(*(e.register_again(inbox) for e in endpoints)),
                "status:re-register",
            )
        elif isinstance(parsed, StatsRequestMessage):
            inbox = inbox_level(parsed.inbox)
            if inbox is not None and self.by_name:
                self.messager.spawn(self._answer_stats(inbox), "status:stats")
        elif isinstance(parsed, ToolRegisteredMessage | ToolRegistrationErrorMessage):
            for endpoint in self.by_name.get(parsed.tool_name, ()):
                self.messager.spawn(endpoint.handle_status(parsed), f"status:{parsed.type}")
        elif isinstance(parsed, ToolUnregisteredMessage) and parsed.target is not None:
            # Synchronously, before the next message is read: a holder retired while it was
            # frozen must not run the tasks already queued behind this message for its
            # successor.
            for endpoint in self.by_name.get(parsed.tool_name or "", ()):
                endpoint.retired(parsed)
        elif isinstance(parsed, ToolUnregisteredMessage) and parsed.reason == "silent":
            # A manager retired this id because it answered no ping (this process was
            # frozen, or its link was): it reads this once it runs again, so it answers
            # now, and registers again.
            for endpoint in self.by_name.get(parsed.tool_name or "", ()):
                if endpoint.tool_id == parsed.tool_id:
                    self.messager.spawn(endpoint.register_again(), "status:re-register")
        elif isinstance(parsed, ToolUnregisteredMessage):
            # The answer to an unregistration: it paces the next (see .pacing).
            for endpoint in self.by_name.get(parsed.tool_name or "", ()):
                endpoint.unregistered(parsed)

    async def _answer_stats(self, inbox: str) -> None:
        """Tell the asker what every tool on this connection has served."""
        endpoints = [e for group in self.by_name.values() for e in group]
        first = endpoints[0]
        answer = ToolStatsMessage(
            source=self.messager.client_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            version=_version(),
            uptime_seconds=round(time.time() - STARTED, 3),
            tools=[endpoint.stats() for endpoint in endpoints],
        )
        with contextlib.suppress(TimeoutError, BrokerError):
            async with asyncio.timeout(5):
                await self.messager.publish(first.topics.reply(first.tool_id, inbox), answer)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("argentic-tools")
    except metadata.PackageNotFoundError:
        return "0.0.0"
