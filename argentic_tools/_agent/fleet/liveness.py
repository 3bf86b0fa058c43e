"""Which tool instances still answer, when no Last Will can say that one is gone.

A broker node that dies takes its clients' Last Wills with it: no engine publishes
them. A replica whose process lived on such a node, and does not come back, would
keep getting its share of the calls until each one timed out. So an instance that
lets a call run past its deadline without a word becomes *suspect*: calls by name
skip it while another replica is not suspect (:meth:`ToolRegistry.lookup`). It is
cleared by any sign of life: a result, a progress report, a registration, or the
answer to the ``TOOL_PING`` this sends it every :data:`PROBE_SECONDS` (tools that
declare no protocol version cannot answer one; they are given another chance after
:data:`PARDON_SECONDS`).

A suspect that answers none of its pings for :data:`RETIRE_SECONDS` is retired: the
owner removes it from the registry as if its Last Will had come (its calls end
``tool_offline``), so that it holds no calls and stops counting as a replica. Silence
while our own connection was down proves nothing: the count starts again then.

The same ping settles a claim on a pinned id: :meth:`Liveness.answers` asks the
holder once and says whether its process answered in time.
"""

import asyncio
import contextlib
from collections.abc import Callable

from ..._lifecycle import TaskSet
from ..._logging import InstanceLogger
from ..._protocol.fleet_messages import ToolPingMessage
from ..._protocol.messages import encode
from ..._protocol.topics import Topics
from ..._transport import Messager
from .info import Entry
from .registry import ToolRegistry

PROBE_SECONDS = 1.0
"""How often a suspect instance is asked whether it is alive."""

PARDON_SECONDS = 30.0
"""How long a suspect plain Argentic instance (which cannot answer a ping) is skipped."""

RETIRE_SECONDS = 15.0
"""How long a suspect that can answer a ping may leave every ping unanswered before it is
retired from the registry (as long as a broker's keepalive: a live process answers its
first ping within milliseconds)."""

WARN_AFTER_SECONDS = 5.0
"""A suspect silent this long is reported as a warning (a slow tool answers its first
ping within milliseconds and is never reported)."""


class Liveness:
    """Suspects the instances that miss deadlines, and probes them until they answer.

    Args:
        registry: The manager's registry.
        messager: The manager's connection.
        topics: The manager's topics.
        inbox: The manager's own level, where pongs come back (None: no probes).
        logger: The manager's logger.
        tasks: Owns the probing task (the manager cancels it on close).
        call_topic: Where pings to a tool id go (None: ``topics.call``).
        retire: Removes an instance silent for :data:`RETIRE_SECONDS` (None: none is).

    """

    def __init__(
        self,
        registry: ToolRegistry,
        messager: Messager,
        topics: Topics,
        inbox: str | None,
        logger: InstanceLogger,
        tasks: TaskSet,
        call_topic: Callable[[str], str] | None = None,
        retire: Callable[[Entry], None] | None = None,
    ) -> None:
        self.registry = registry
        self._retire = retire
        self.messager = messager
        self.topics = topics
        self.inbox = inbox
        self.logger = logger
        self._tasks = tasks
        self.call_topic = call_topic or topics.call
        self._suspects: dict[str, Entry] = {}
        # Who answers() waits to hear from: (tool id, process client id) -> waiters.
        self._asked: dict[tuple[str, str | None], set[asyncio.Future[None]]] = {}
        self._warned: set[str] = set()
        # The connection (its count) each suspect's silence was measured on.
        self._connection: dict[str, int] = {}
        self._prober: asyncio.Task[None] | None = None
        self.heard_at: dict[str | None, float] = {}
        """Loop time of the last message from each tool process (by client id)."""

    @property
    def suspects(self) -> list[str]:
        """Ids of the instances skipped right now."""
        return [tool_id for tool_id, entry in self._suspects.items() if self._current(entry)]

    def missed(self, entry: Entry) -> None:
        """A call to ``entry`` ran past its deadline without a word from the tool."""
        if not self._current(entry) or entry.suspect_since is not None:
            return
        entry.suspect_since = asyncio.get_running_loop().time()
        self._suspects[entry.info.id] = entry
        self._connection[entry.info.id] = self.messager.connections
        self.logger.info(
            "tool %r instance %s missed a deadline; calls go to its other replicas until "
            "it answers",
            entry.info.name,
            entry.info.id,
        )
        if self._prober is None or self._prober.done():
            self._prober = self._tasks.spawn(self._probe(), "liveness", watcher=True)

    def can_ping(self, entry: Entry) -> bool:
        """Whether ``entry`` can be asked (it declares a protocol, and pongs can reach us)."""
        return entry.protocol is not None and self.inbox is not None

    async def answers(self, entry: Entry, within: float) -> bool:
        """Ping ``entry`` and say whether its process answers within ``within`` seconds.

        Any message from the process under the instance's id counts (a pong, a result, a
        progress report); one from another process serving the same id does not.
        """
        key = (entry.info.id, entry.info.source)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._asked.setdefault(key, set()).add(waiter)
        ping = ToolPingMessage(
            source=self.messager.client_id,
            tool_id=entry.info.id,
            reply_to=None if self.inbox is None else self.topics.reply(entry.info.id, self.inbox),
        )
        try:
            async with asyncio.timeout(within):
                await self.messager.publish(self.call_topic(entry.info.id), encode(ping))
                await waiter
        except TimeoutError:
            return False
        finally:
            waiters = self._asked.get(key)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._asked[key]
        return True

    def alive(self, tool_id: str | None, source: str | None = None) -> None:
        """Something came from ``tool_id`` (sent by the process ``source``): it answers."""
        if source is not None:
            self.heard_at[source] = asyncio.get_running_loop().time()
        if tool_id is None:
            return
        if self._asked:
            for waiter in self._asked.get((tool_id, source), ()):
                if not waiter.done():
                    waiter.set_result(None)
        if not self._suspects:
            return
        entry = self._suspects.pop(tool_id, None)
        self._connection.pop(tool_id, None)
        if entry is not None and entry.suspect_since is not None:
            entry.suspect_since = None
            if tool_id in self._warned:
                self._warned.discard(tool_id)
                self.logger.warning("tool %r instance %s answers again", entry.info.name, tool_id)

    def forget_except(self, sources: set[str | None]) -> None:
        """Forget when processes other than ``sources`` (those still registered) spoke."""
        for source in [s for s in self.heard_at if s not in sources]:
            del self.heard_at[source]

    def _current(self, entry: Entry) -> bool:
        return self.registry.get(entry.info.id) is entry

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while self._suspects:
            for tool_id, entry in list(self._suspects.items()):
                if not self._current(entry) or entry.suspect_since is None:
                    # Registered again (a new entry, not suspect) or removed.
                    self._suspects.pop(tool_id, None)  # alive() may have been first
                    self._connection.pop(tool_id, None)
                    self._warned.discard(tool_id)
                    continue
                connection = self.messager.connections
                if not self.messager.is_connected() or self._connection.get(tool_id) != connection:
                    # Pings could not reach it, nor pongs us: its silence counts from now.
                    entry.suspect_since = loop.time()
                    self._connection[tool_id] = connection
                silent = loop.time() - entry.suspect_since
                if silent >= WARN_AFTER_SECONDS and tool_id not in self._warned:
                    self._warned.add(tool_id)
                    self.logger.warning(
                        "tool %r instance %s has not answered for %.0f s (its process or "
                        "its broker node may be gone); calls skip it while another replica "
                        "answers",
                        entry.info.name,
                        tool_id,
                        silent,
                    )
                if entry.protocol is None or self.inbox is None:
                    if silent >= PARDON_SECONDS:
                        self.alive(tool_id)
                elif silent >= RETIRE_SECONDS and self._retire is not None:
                    self._suspects.pop(tool_id, None)
                    self._connection.pop(tool_id, None)
                    self._warned.discard(tool_id)
                    self.logger.warning(
                        "tool %r instance %s answered no ping for %.0f s; retired as if "
                        "its Last Will had come (its calls end tool_offline)",
                        entry.info.name,
                        tool_id,
                        silent,
                    )
                    self._retire(entry)
                else:
                    ping = ToolPingMessage(
                        source=self.messager.client_id,
                        tool_id=tool_id,
                        reply_to=self.topics.reply(tool_id, self.inbox),
                    )
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(PROBE_SECONDS):
                            await self.messager.publish(self.call_topic(tool_id), encode(ping))
            await asyncio.sleep(PROBE_SECONDS)
