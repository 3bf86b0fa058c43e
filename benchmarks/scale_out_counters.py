"""mosquitto's own counters of a scale-out run, from its ``$SYS`` topics.

The $SYS reader is a client of the broker too: the $SYS messages delivered to it are
subtracted from ``sent`` exactly (mosquitto counts a message when it queues it, so the
reader's own deliveries before each counter message are known).
"""

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass
from typing import Any

import aiomqtt

QUIET_INTERVALS = 2
QUIET_TIMEOUT = 90.0

SYS_COUNTERS = {
    "$SYS/broker/publish/messages/received": "pub_received",
    "$SYS/broker/publish/messages/sent": "pub_sent",
    "$SYS/broker/messages/received": "all_received",
    "$SYS/broker/messages/sent": "all_sent",
}


@dataclass(frozen=True)
class Snapshot:
    """mosquitto's counters at one $SYS update, ``*_sent`` without the reader's own."""

    index: int
    at: float
    pub_received: int
    pub_sent: int
    all_received: int
    all_sent: int

    @property
    def publishes(self) -> tuple[int, int]:
        return self.pub_received, self.pub_sent


class SysReader:
    """Follows mosquitto's $SYS counters; one snapshot per update.

    ``publish/messages/sent`` comes with every update (this reader's own deliveries
    change it each time), so its arrival marks an update; the other counters are
    published only when they changed, so their latest value is current then.
    """

    def __init__(self, port: int) -> None:
        self.client = aiomqtt.Client("127.0.0.1", port, identifier=f"sys-reader-{os.getpid()}")
        self.snapshots: list[Snapshot] = []
        self._latest: dict[str, int] = {}
        self._own = 0
        self._update = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> "SysReader":
        await self.client.__aenter__()
        for topic in SYS_COUNTERS:
            await self.client.subscribe(topic, qos=0)
        self._reader = asyncio.create_task(self._read(), name="sys-reader")
        await self.next(timeout=10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        with contextlib.suppress(Exception):
            await self.client.__aexit__(None, None, None)

    async def _read(self) -> None:
        async for message in self.client.messages:
            own_before = self._own
            self._own += 1
            key = SYS_COUNTERS.get(message.topic.value)
            if key is None or not isinstance(message.payload, bytes | str):
                continue
            value = int(message.payload)
            # Counted when queued: the deliveries to this reader so far are in the value.
            self._latest[key] = value - own_before if key.endswith("sent") else value
            if key == "pub_sent":
                self.snapshots.append(
                    Snapshot(
                        index=len(self.snapshots),
                        at=time.monotonic(),
                        pub_received=self._latest.get("pub_received", 0),
                        pub_sent=self._latest["pub_sent"],
                        all_received=self._latest.get("all_received", 0),
                        all_sent=self._latest.get("all_sent", 0),
                    )
                )
                self._update.set()
                self._update = asyncio.Event()

    async def next(self, timeout: float = 10) -> Snapshot:
        """The next snapshot."""
        async with asyncio.timeout(timeout):
            await self._update.wait()
        return self.snapshots[-1]

    async def quiet(self, since: int, timeout: float = QUIET_TIMEOUT) -> tuple[Snapshot, bool]:
        """The first snapshot (from index ``since`` on) after which the PUBLISH counters
        did not move for ``QUIET_INTERVALS`` updates; the latest one and False at ``timeout``.
        """
        try:
            async with asyncio.timeout(timeout):
                while True:
                    recent = self.snapshots[since:][-(QUIET_INTERVALS + 1) :]
                    if len(recent) == QUIET_INTERVALS + 1 and all(
                        s.publishes == recent[0].publishes for s in recent
                    ):
                        return recent[-1], True
                    await self.next(timeout=10)
        except TimeoutError:
            return self.snapshots[-1], False


def delta(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    received = after.pub_received - before.pub_received
    sent = after.pub_sent - before.pub_sent
    return {
        "publish_received": received,
        "publish_sent": sent,
        "publish_total": received + sent,
        "all_received": after.all_received - before.all_received,
        "all_sent": after.all_sent - before.all_sent,
        "window_s": after.at - before.at,
    }
