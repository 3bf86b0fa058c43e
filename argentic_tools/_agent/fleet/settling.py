"""Whether the registry may still be filling: :class:`Settling`.

Right after a manager starts, live tools are answering its announcement; right after
its connection comes back, the broker may have forgotten them until they register
again. Meanwhile a call to a name not registered yet waits for it (within the call's
own deadline) instead of ending ``not_found`` at once, and a stats request waits for
the fleet to answer.
"""

import asyncio
import contextlib

from ..._transport import Messager
from .registry import ToolRegistry

REGISTRY_SETTLE_SECONDS = 2.0
"""After a reconnection, how long a call to a name not (yet) registered waits for its tool
to register again before it ends ``not_found`` (within the call's own timeout)."""

STARTUP_SETTLE_SECONDS = 0.5
"""After a manager starts, how long a call to a name not (yet) registered waits for the
live tools to answer its announcement before it ends ``not_found`` (within the call's own
timeout): a script that calls a tool right after starting its manager finds it."""


class Settling:
    """When one manager's registry has settled after a start or a reconnection.

    Args:
        messager: The manager's connection (while it is down, nothing has settled).
        registry: The manager's registry.

    """

    __slots__ = ("_messager", "_registry", "until")

    def __init__(self, messager: Messager, registry: ToolRegistry) -> None:
        self._messager = messager
        self._registry = registry
        self.until: float | None = None
        """Event-loop time at which the registry counts as settled (None: it always has)."""

    def started(self) -> None:
        """The manager just announced itself: live tools are registering again."""
        self.until = asyncio.get_running_loop().time() + STARTUP_SETTLE_SECONDS

    def reconnected(self) -> None:
        """The manager's connection is back: tools may take a moment to register again."""
        self.until = asyncio.get_running_loop().time() + REGISTRY_SETTLE_SECONDS

    def remaining(self) -> float:
        """Seconds until the registry has settled after a start or reconnection (0: now)."""
        if self.until is None:
            return 0.0
        return max(self.until - asyncio.get_running_loop().time(), 0.0)

    def active(self) -> bool:
        """True while disconnected or just (re)connected: tools may not be back yet."""
        if not self._messager.is_connected():
            return True
        return self.until is not None and asyncio.get_running_loop().time() < self.until

    async def wait_for(self, name: str) -> None:
        """Wait for the connection, then until ``name`` is registered or the registry settled.

        Waiting for the connection has no bound of its own: bound it with the call's
        deadline.
        """
        await self._messager.wait_connected()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(max(self.until or loop.time(), loop.time())):
                await self._registry.wait_for(name)
