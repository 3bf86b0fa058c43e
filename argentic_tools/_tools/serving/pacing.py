"""How many registrations one connection has out at once: the registering side's pacing.

A process serving thousands of tools (an MCP bridge of a large server) registers them
all when it starts, again when a manager announces itself or the connection comes
back, and unregisters them all when it stops. Sent at once, they fill the queue the
broker keeps for each manager (mosquitto: ``max_queued_messages``, 1,000 by default),
which the manager's results share: the broker drops what does not fit, results
included, and a call to an unrelated tool times out.

So every registration and unregistration takes a slot of a window of
:data:`REGISTRATIONS_IN_FLIGHT` per connection, and holds it until a manager answers it
(a confirmation or a refusal), or, unanswered, for a bounded time: the attempt's wait
for a registration expecting an answer, :data:`PACE_SECONDS` for one that expects none
(a registration a manager already confirmed, an unregistration). The managers'
answers clock the registrations: a burst goes out as fast as the managers take it in,
never more than the window ahead of them, and a fleet with no manager still
registers, a window per attempt's wait.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator

from ..._transport import Messager

REGISTRATIONS_IN_FLIGHT = 128
"""Registrations (and unregistrations) one connection has out at once, unanswered.

Well within the 1,000 messages mosquitto queues for a manager by default, so a few
processes registering thousands of tools at once still leave room for its results."""

PACE_SECONDS = 0.05
"""How long a message that gets no answer holds its slot: at most
:data:`REGISTRATIONS_IN_FLIGHT` per this many seconds (2,560 a second) reach a manager
when a fleet registers again after its announcement, or a process unregisters."""


class RegistrationWindow:
    """The registration slots of one connection, shared by every tool served on it."""

    def __init__(self, size: int = REGISTRATIONS_IN_FLIGHT) -> None:
        self.size = size
        self._slots = asyncio.Semaphore(size)
        self.heard = False
        """Whether a manager has answered a registration on this connection yet."""

    @classmethod
    def of(cls, messager: Messager) -> "RegistrationWindow":
        """The window of ``messager``'s connection, created on first use."""
        return messager.attachment(cls, cls)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the block: send the message, then wait for its answer."""
        async with self._slots:
            yield
