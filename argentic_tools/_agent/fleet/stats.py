"""What the tool processes have served: :class:`FleetStats` asks them and gathers the answers.

A ``STATS_REQUEST`` on the status topic reaches every tool process; each answers once,
with ``TOOL_STATS``, on a reply topic of one of its tools below the manager's inbox.
No manager keeps these figures: they come from the processes themselves.
"""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from ..._protocol.fleet_messages import StatsRequestMessage, ToolStatsMessage
from .registry import ToolRegistry
from .settling import Settling


class FleetStats:
    """The stats requests of one manager in progress (several may run at once).

    Args:
        registry: Which processes registered tools (those are waited for).
        settling: Whether the registry is still settling after a start.
        publish: Publishes a stats request on the status topic.
        source: The manager's client id.
        inbox: The manager's own level, where the answers come.

    """

    def __init__(
        self,
        registry: ToolRegistry,
        settling: Settling,
        publish: Callable[[StatsRequestMessage], Awaitable[None]],
        source: str,
        inbox: str,
    ) -> None:
        self._registry = registry
        self._settling = settling
        self._publish = publish
        self._source = source
        self._inbox = inbox
        # Requests in progress: (answers by source, sources expected, all in).
        self._open: list[tuple[dict[str, ToolStatsMessage], set[str], asyncio.Event]] = []

    def answered(self, answer: ToolStatsMessage) -> None:
        """A process answered (the manager's handler for TOOL_STATS)."""
        if answer.source is None:
            return
        for answers, expected, done in self._open:
            answers.setdefault(answer.source, answer)
            if expected <= set(answers):
                done.set()

    async def gather(self, wait: float) -> list[ToolStatsMessage]:
        """Ask, and return the answers once all expected came, or after ``wait`` s."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + wait
        # Just started: the live tools are still answering the announcement.
        await asyncio.sleep(min(self._settling.remaining(), wait))
        # Processes of protocol 2 and later answer; Argentic tools and older ones cannot.
        expected = {
            e.info.source
            for e in self._registry.entries()
            if e.info.source and e.protocol is not None and e.protocol >= 2
        }
        answers: dict[str, ToolStatsMessage] = {}
        done = asyncio.Event()
        request = (answers, expected, done)
        self._open.append(request)
        try:
            # Within ``wait`` in all: a publish waits for a lost connection to return.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(give_up):
                    await self._publish(StatsRequestMessage(source=self._source, inbox=self._inbox))
                    if expected:
                        await done.wait()
                    else:
                        await asyncio.sleep(wait)  # nothing registered: take what answers
        finally:
            self._open.remove(request)
        return sorted(answers.values(), key=lambda answer: answer.source or "")
