"""Which tool processes are still there, when they left without a word.

A process that closes its connection cleanly (an MQTT DISCONNECT) leaves no Last Will,
and one that does so without unregistering its tools (a crash handler that closes the
socket, a peer that never unregisters) would stay in the registry for ever. So every
:data:`CHECK_SECONDS`, a manager asks each process it has heard nothing from for
:data:`QUIET_SECONDS` (no registration, result, report or pong) whether it is still
there: one ``TOOL_PING`` to one of its tools, answered by any live process at once,
idle or busy. A process that answers none of it for :data:`ANSWER_SECONDS` (while the
manager's own connection stayed up) is retired as if its Last Will had come: its tools
leave the registry, its calls end ``tool_offline``, and the removal is announced
(reason ``silent``), so a process that was only frozen registers again when it runs.

A process gone this way is retired within ``QUIET_SECONDS + CHECK_SECONDS +
ANSWER_SECONDS`` (50 s) of its last word. Tools that declare no protocol version
(argentic 0.16 and other plain Argentic tools) cannot answer a ping: they are never
retired for their silence, only by their unregistration, their Last Will, or their
process's, so an idle one stays registered as long as it lives.
"""

import asyncio
from collections.abc import Callable

from ..._lifecycle import TaskSet
from ..._logging import InstanceLogger
from ..._transport import Messager
from .info import Entry
from .liveness import Liveness
from .registry import ToolRegistry

QUIET_SECONDS = 30.0
"""How long a process may say nothing before a manager asks whether it is still there."""

CHECK_SECONDS = 5.0
"""How often a manager looks for processes quiet that long."""

ANSWER_SECONDS = 15.0
"""How long an asked process has to answer before it is retired (as long as a broker's
keepalive: a live process answers within milliseconds, even one busy with calls)."""


class Presence:
    """Asks quiet tool processes whether they are still there; retires those that are not.

    Args:
        registry: The manager's registry.
        liveness: Sends the pings and says when a process was last heard from.
        messager: The manager's connection (silence while it was down proves nothing).
        logger: The manager's logger.
        tasks: Owns the checking task (the manager cancels it on close).
        retire: Removes one instance as if its Will had come (the membership's).

    """

    def __init__(
        self,
        registry: ToolRegistry,
        liveness: Liveness,
        messager: Messager,
        logger: InstanceLogger,
        tasks: TaskSet,
        retire: Callable[[Entry], None],
    ) -> None:
        self.registry = registry
        self.liveness = liveness
        self.messager = messager
        self.logger = logger
        self._tasks = tasks
        self._retire = retire
        self._asking: set[str | None] = set()

    def start(self) -> None:
        """Start checking, in a task the manager's task set owns."""
        self._tasks.spawn(self._run(), "presence", watcher=True)

    def quiet(self, now: float) -> list[Entry]:
        """One pingable instance of each process quiet for :data:`QUIET_SECONDS`.

        Processes already being asked, and processes of plain Argentic tools (which
        cannot answer), are left out.
        """
        heard = self.liveness.heard_at
        chosen = []
        for source in self.registry.sources():
            if source in self._asking or now - heard.get(source, now) < QUIET_SECONDS:
                continue
            entry = next(
                (e for e in self.registry.from_source(source) if self.liveness.can_ping(e)),
                None,
            )
            if entry is not None:
                chosen.append(entry)
        return chosen

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            self.liveness.forget_except(set(self.registry.sources()))
            if not self.messager.is_connected():
                continue
            for entry in self.quiet(loop.time()):
                self._asking.add(entry.info.source)
                self._tasks.spawn(self._ask(entry), "presence-ask", watcher=True)

    async def _ask(self, entry: Entry) -> None:
        source = entry.info.source
        connection = self.messager.connections
        try:
            try:
                answered = await self.liveness.answers(entry, ANSWER_SECONDS)
            except Exception:  # noqa: BLE001 (the ping could not be sent: proves nothing)
                return
            if answered or self.registry.get(entry.info.id) is not entry:
                return  # there, or it registered again or left meanwhile
            if not self.messager.is_connected() or self.messager.connections != connection:
                return  # our connection failed meanwhile: its silence proves nothing
            gone = [
                e for e in self.registry.from_source(source) if e.info.owner == entry.info.owner
            ]
            self.logger.warning(
                "tool process %s said nothing for %.0f s and answered no ping for %.0f s "
                "(it closed its connection without unregistering?); retiring its %d tool(s)",
                source,
                QUIET_SECONDS,
                ANSWER_SECONDS,
                len(gone),
            )
            for each in gone:
                self._retire(each)
        finally:
            self._asking.discard(source)
