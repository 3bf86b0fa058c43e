"""The window of QoS 1 publishes awaiting their PUBACK.

paho's own bookkeeping of unacknowledged messages is quadratic with thousands in flight,
so :class:`AckWindow` keeps its own: one future per message id, resolved by its PUBACK
(or by the connection's end, when the publish is sent again on the next one), and at
most :data:`MAX_UNACKED` of them at once.
"""

import asyncio

import aiomqtt

from . import _internals

MAX_UNACKED = 256
"""QoS 1 publishes awaiting their PUBACK at once; more wait their turn.

paho keeps about 1 KB per unacknowledged message (a record with its own lock and
condition, and the packet). Unbounded, a burst of 10,000 calls held all of it at
once: 6.6 KB per pending call against 3.9 KB with this window, and the burst took
3.7 s against 2.8 s. On loopback a window of 64 already keeps the broker busy."""


class AckWindow:
    """QoS 1 publishes awaiting their PUBACK, by message id, at most ``size`` at once.

    A publisher takes a place with ``await window.acquire()``, hands the message to
    paho with :meth:`send`, awaits :meth:`ack` of the message id it got, then calls
    :meth:`forget` and gives the place back with :meth:`release`. The connection's
    owner routes every PUBACK to :meth:`on_puback` and calls :meth:`wake_all` when the
    connection ends.

    Args:
        size: Publishes that may await their PUBACK at once.

    """

    __slots__ = ("_acks", "acquire", "release", "size")

    def __init__(self, size: int = MAX_UNACKED) -> None:
        self.size = size
        """Publishes that may await their PUBACK at once; more wait their turn."""
        places = asyncio.Semaphore(size)
        # The semaphore's own methods, not coroutines of ours: a publish queued for its
        # turn then holds no frame of this class (thousands may be queued at once).
        self.acquire = places.acquire
        """Wait for a place in the window (a coroutine function)."""
        self.release = places.release
        """Give a place back."""
        # aiomqtt's bookkeeping scans every pending call on each publish, and paho's
        # in-flight limit scans every unacknowledged message on each PUBACK: both
        # quadratic with thousands of calls in flight. This map is O(1); paho's limit is
        # off and the semaphore bounds the window.
        self._acks: dict[int, asyncio.Future[None]] = {}

    def send(
        self, client: aiomqtt.Client, topic: str, data: bytes, qos: int, retain: bool
    ) -> int | None:
        """Hand a QoS > 0 message to paho; its message id, or None if already sent.

        The future :meth:`ack` returns for that id resolves on its PUBACK or when the
        connection ends.

        Raises:
            aiomqtt.MqttCodeError: paho refused the publish (not connected, queue full).

        """
        info = _internals.publish_raw(client, topic, data, qos, retain)
        if info.is_published():
            return None
        self._acks[info.mid] = asyncio.get_running_loop().create_future()
        return int(info.mid)

    def ack(self, mid: int) -> "asyncio.Future[None]":
        """The future of message ``mid``, just returned by :meth:`send`."""
        return self._acks[mid]

    def forget(self, mid: int, ack: "asyncio.Future[None]") -> None:
        """Drop ``ack`` if it is still the one under ``mid`` (its waiter gave up early)."""
        if self._acks.get(mid) is ack:
            del self._acks[mid]

    def on_puback(self, mid: int) -> bool:
        """Resolve the future of message ``mid``; False when the id is not one of ours."""
        future = self._acks.pop(mid, None)
        if future is None:
            return False
        if not future.done():
            future.set_result(None)
        return True

    def wake_all(self) -> None:
        """Resolve every future: the connection their messages went out on has ended."""
        acks, self._acks = self._acks, {}
        for future in acks.values():
            if not future.done():
                future.set_result(None)
