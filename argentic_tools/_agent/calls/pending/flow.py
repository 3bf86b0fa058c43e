"""Flow control: never more tasks outstanding at a tool instance than it advertises."""

import asyncio
from collections import deque


class Window:
    """Tasks outstanding at one tool instance: at most the ``max_concurrency`` it advertises.

    A broker's queue per client is finite (mosquitto drops QoS 1 messages beyond
    ``max_queued_messages``, 1,000 by default), so a burst must not be handed to the
    broker all at once. The rest wait here, first come first served, each under its
    own deadline. A waiter is one future: a few hundred bytes. A waiter that gives up
    stays in the line until a release reaches it and passes over it, so giving up
    and releasing are both O(1) amortised, in whatever order thousands of waiters
    give up. (:class:`~..running.delivery.Delivery` keeps its sending turns in one too.)
    """

    __slots__ = ("_waiters", "capacity", "in_use")

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        """Tasks allowed outstanding at once; None: no limit (the tool advertises none)."""
        self.in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot (cancelled waiters not yet skipped included)."""
        return len(self._waiters)

    async def acquire(self) -> None:
        """Take a slot, waiting in line for one when all are in use."""
        if self.capacity is None or (self.in_use < self.capacity and not self._waiters):
            self.in_use += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as the wait ended: pass it on
            raise

    def release(self) -> None:
        """Give a slot back: to the first caller still waiting, or to the pool."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # handed over: in_use stays
                return
        self.in_use -= 1

    def resize(self, capacity: int | None) -> None:
        """The tool re-registered with another limit: apply it, waking waiters it admits."""
        self.capacity = capacity
        while self._waiters and (capacity is None or self.in_use < capacity):
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_use += 1
                waiter.set_result(None)
