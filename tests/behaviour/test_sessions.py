"""Broker sessions: clients that crash or exit leave nothing queueing on the broker.

The broker's own ``$SYS`` counters are the witness: ``clients/disconnected`` counts the
sessions it keeps for clients that are gone, each one collecting the messages of its
subscriptions for nobody.
"""

import asyncio
from collections.abc import Iterator

import anyio
import pytest

from argentic_tools import IncomingMessage, Messager, Topics
from tests.support.brokers import Mosquitto, running_mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ToolProcess, ready
from tests.support.requirements import require_mosquitto

pytestmark = pytest.mark.anyio

TIMEOUT = 20


@pytest.fixture
def counted_mosquitto() -> Iterator[Mosquitto]:
    """A mosquitto of this test alone that publishes its ``$SYS`` counters every second."""
    require_mosquitto()
    with running_mosquitto("sys_interval 1") as broker:
        yield broker


class BrokerClients:
    """The broker's client counters, as it last published them on ``$SYS``."""

    TOPICS = (
        "$SYS/broker/clients/connected",
        "$SYS/broker/clients/disconnected",
        "$SYS/broker/uptime",
    )

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.ticks = 0
        self._changed = asyncio.Event()

    async def watch(self, messager: Messager) -> None:
        for topic in self.TOPICS:
            await messager.subscribe(topic, self._on_message)

    def _on_message(self, message: IncomingMessage) -> None:
        name = message.topic.rsplit("/", 1)[-1]
        if name == "uptime":
            self.ticks += 1
        else:
            self.counts[name] = int(message.payload)
        self._changed.set()
        self._changed = asyncio.Event()

    async def sessions_left(self, connected: int) -> int:
        """Sessions kept for gone clients, once only ``connected`` clients remain."""
        with anyio.fail_after(TIMEOUT):
            while True:
                # Each tick publishes the uptime, then the counters that changed: two
                # uptimes from now, the counters of a tick that began after now are in.
                tick = self.ticks
                while self.ticks < tick + 2:
                    await self._changed.wait()
                if self.counts.get("connected") == connected:
                    return self.counts["disconnected"]


async def test_killed_and_stopped_tool_processes_and_managers_leave_no_session(
    counted_mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    url = counted_mosquitto.url
    clients = BrokerClients()
    async with Messager(url, will_topic=None) as observer:
        await clients.watch(observer)
        async with (
            messager_for(url, topics) as messager,
            manager_for(messager, topics, default_timeout=TIMEOUT) as manager,
        ):
            for stop in ("kill", "terminate"):
                async with ToolProcess("tests.support.tool_proc", url, prefix) as tool_process:
                    await ready(manager, ("echo",))
                    info = manager.tools_by_name["echo"]
                    result = await manager.execute_tool("echo", {"message": stop})
                    assert result.ok, result
                    if stop == "kill":
                        await anyio.to_thread.run_sync(tool_process.kill)
                    else:
                        await tool_process.stop()
                    await manager.wait_for_tool_removed(info["id"], timeout=TIMEOUT)
        assert await clients.sessions_left(connected=1) == 0


async def test_only_a_stable_client_id_keeps_its_session_after_disconnecting(
    counted_mosquitto: Mosquitto, prefix: str
) -> None:
    url = counted_mosquitto.url
    clients = BrokerClients()
    stable_id = f"{prefix}-stable"
    async with Messager(url, will_topic=None) as observer:
        await clients.watch(observer)
        # Asked for explicitly, a generated id's session serves reconnections only:
        # nobody can resume it once this Messager is closed.
        async with Messager(url, will_topic=None, persistent_session=True) as generated:
            assert generated.persistent_session
        async with Messager(url, client_id=stable_id, will_topic=None) as stable:
            assert stable.persistent_session
        assert await clients.sessions_left(connected=1) == 1
        async with Messager(url, client_id=stable_id, will_topic=None, persistent_session=False):
            pass
        assert await clients.sessions_left(connected=1) == 0
