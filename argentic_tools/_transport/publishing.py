"""Publishing on the connection: QoS 1 with a bounded window of unacknowledged messages.

paho's own bookkeeping of unacknowledged messages is quadratic with thousands in flight,
so :class:`AckedPublishing` keeps its own: one future per message id, resolved by its
PUBACK (or by the connection's end, when the publish is sent again on the next one),
and at most :data:`MAX_UNACKED` of them at once.
"""

import asyncio
from collections.abc import Callable

import aiomqtt

from .._errors import BrokerError, PayloadTooLargeError
from .._protocol.messages import BaseMessage, encode
from . import _internals

MAX_UNACKED = 256
"""QoS 1 publishes awaiting their PUBACK at once; more wait their turn.

paho keeps about 1 KB per unacknowledged message (a record with its own lock and
condition, and the packet). Unbounded, a burst of 10,000 calls held all of it at
once: 6.6 KB per pending call against 3.9 KB with this window, and the burst took
3.7 s against 2.8 s. On loopback a window of 64 already keeps the broker busy."""


class AckedPublishing:
    """Publishes for a :class:`Messager`, which inherits this; the attributes are its."""

    max_payload_bytes: int
    _client: aiomqtt.Client | None
    _connected: asyncio.Event
    _closing: bool
    _entered: bool
    _acks: dict[int, "asyncio.Future[None]"]
    """QoS 1 publishes awaiting their PUBACK, by message id."""
    _window: asyncio.Semaphore
    """At most MAX_UNACKED publishes awaiting their PUBACK."""

    async def publish(
        self,
        topic: str,
        payload: BaseMessage | bytes | bytearray | str | Callable[[], bytes],
        qos: int = 1,
        retain: bool = False,
    ) -> None:
        """Publish ``payload`` (a message model, or raw bytes) to ``topic``.

        While the connection is being re-established this waits for it; wrap
        the call in a deadline (``anyio.fail_after``) to bound that wait.

        ``payload`` may also be a function returning the bytes: it is called once the
        message can go out (its turn in the window of :data:`MAX_UNACKED`
        unacknowledged publishes), so thousands of queued publishes hold no payloads.
        What it raises, this raises.

        Raises:
            PayloadTooLargeError: The encoded payload exceeds ``max_payload_bytes``.
            BrokerError: The Messager is closed, or the broker rejected the publish.

        """
        data = None if callable(payload) else self._checked(topic, payload)
        while True:
            if self._closing or not self._entered:
                raise BrokerError("the MQTT connection is closed")
            client = self._client
            if client is not None and self._connected.is_set():
                try:
                    # Written out here, not in coroutines of its own (nor ``async with``):
                    # with thousands of publishes queued for the window, each frame a
                    # queued publish holds costs ~0.2 KB per publish.
                    if qos == 0:
                        if data is None:
                            data = self._checked(topic, payload)
                        _internals.publish_raw(client, topic, data, 0, retain)
                        return
                    await self._window.acquire()
                    try:
                        if data is None:
                            data = self._checked(topic, payload)
                        mid = self._publish_acked(client, topic, data, qos, retain)
                        if mid is not None:
                            ack = self._acks[mid]
                            try:
                                await ack
                            finally:
                                if self._acks.get(mid) is ack:
                                    del self._acks[mid]
                    finally:
                        self._window.release()
                    if client is self._client:
                        return
                    # Woken because that connection died, not by a PUBACK: send it again
                    # on the new one (at least once; tools ignore a task id seen before).
                    continue
                except aiomqtt.MqttError as exc:
                    if self._closing:
                        raise BrokerError(f"publishing to {topic!r} failed: {exc}") from None
                    # The connection dropped under us: wait for the reader to reconnect.
                    self._connected.clear()
            await self._connected.wait()

    def _checked(
        self, topic: str, payload: BaseMessage | bytes | bytearray | str | Callable[[], bytes]
    ) -> bytes:
        """The payload as bytes, within ``max_payload_bytes``."""
        if isinstance(payload, BaseMessage):
            data = encode(payload)
        elif isinstance(payload, str):
            data = payload.encode()
        elif callable(payload):
            data = payload()
        else:
            data = bytes(payload)  # the object itself when it is bytes already
        if len(data) > self.max_payload_bytes:
            raise PayloadTooLargeError(
                f"payload of {len(data)} bytes for {topic!r} exceeds the limit of "
                f"{self.max_payload_bytes} bytes"
            )
        return data

    def _publish_acked(
        self, client: aiomqtt.Client, topic: str, data: bytes, qos: int, retain: bool
    ) -> int | None:
        """Hand a QoS > 0 message to paho; its message id, or None if already sent.

        The future under that id in ``_acks`` resolves on its PUBACK or when the
        connection ends.
        """
        info = _internals.publish_raw(client, topic, data, qos, retain)
        if info.is_published():
            return None
        self._acks[info.mid] = asyncio.get_running_loop().create_future()
        return int(info.mid)

    def _on_puback(self, mid: int) -> bool:
        future = self._acks.pop(mid, None)
        if future is None:
            return False  # not one of ours
        if not future.done():
            future.set_result(None)
        return True

    def _release_acks(self) -> None:
        acks, self._acks = self._acks, {}
        for future in acks.values():
            if not future.done():
                future.set_result(None)
