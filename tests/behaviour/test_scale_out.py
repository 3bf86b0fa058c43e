"""Many managers, several brokers, and replicas that die without a Last Will.

Real brokers (mosquitto; amqtt where a broker must refuse a subscription), real TCP
relays that are frozen and killed, tools served in this process so the library's own
code is measured.
"""

import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import anyio
import pytest

from argentic_tools import (
    BrokerError,
    IncomingMessage,
    Messager,
    TaskMessage,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools._agent.fleet import liveness
from argentic_tools._protocol.messages import encode
from tests.support.brokers import Mosquitto, free_port, running_mosquitto, wait_for_port
from tests.support.clients import manager_for, messager_for

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


class Relay:
    """A TCP relay to a broker (``benchmarks.soak_proxy``) that a test can freeze and kill."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.soak_proxy", str(self.port), str(self.upstream)],
            cwd=ROOT,
        )
        wait_for_port(self.port)

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: the relayed data in flight is lost, both sides see the link drop."""
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def relay(mosquitto: Mosquitto) -> Iterator[Relay]:
    proxy = Relay(mosquitto.port)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.kill()


class Spy:
    """Every message under a topic prefix, as (topic, parsed payload)."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def until(self, predicate: Any, timeout: float = 15) -> tuple[str, dict[str, Any]]:
        for topic, message in self.seen:
            if predicate(topic, message):
                return topic, message
        with anyio.fail_after(timeout):
            async for raw in self.client.messages:
                item = (raw.topic.value, json.loads(raw.payload))
                self.seen.append(item)
                if predicate(*item):
                    return item
        raise AssertionError("unreachable")


@pytest.fixture
async def spy(mosquitto: Mosquitto, prefix: str) -> AsyncIterator[Spy]:
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as client:
        await client.subscribe(f"{prefix}/#", qos=1)
        yield Spy(client)


@tool
def double(x: int) -> int:
    """Return twice x."""
    return 2 * x


async def test_a_result_reaches_only_the_manager_that_made_the_call(
    mosquitto: Mosquitto, topics: Topics, spy: Spy
) -> None:
    async with (
        ToolService(mosquitto.url, [double], topics=topics),
        messager_for(mosquitto.url, topics) as first_connection,
        manager_for(first_connection, topics) as first,
        messager_for(mosquitto.url, topics) as second_connection,
        manager_for(second_connection, topics) as second,
    ):
        info = await first.wait_for_tool("double", timeout=15)
        await second.wait_for_tool("double", timeout=15)
        result = await first.execute_tool("double", {"x": 21})
        assert result.ok and result.result == 42
        sentinel = f"{topics.response_base}/sentinel"
        await first_connection.publish(sentinel, b'{"end": true}')
        await spy.until(lambda topic, _: topic == sentinel)
        answers = [t for t, m in spy.seen if m.get("task_id") == result.task_id and "status" in m]
        # One answer, on the caller's own reply topic: the other manager's subscriptions
        # (its inbox and the shared topic of Argentic tools) never match it.
        assert answers == [topics.reply(info.id, first_connection.client_id)]
        assert first.inbox == first_connection.client_id
        assert second.inbox is not None and second.inbox != first.inbox


async def test_a_task_cannot_point_a_tool_anywhere_but_its_own_reply_topics(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, spy: Spy
) -> None:
    async with ToolService(mosquitto.url, [double], topics=topics):
        info = await manager.wait_for_tool("double", timeout=15)
        task = TaskMessage(
            source="intruder",
            task_id="aimed-at-the-register-topic",
            tool_id=info.id,
            tool_name="double",
            arguments={"x": 1},
            reply_to=topics.register,
        )
        await manager.messager.publish(topics.call(info.id), encode(task))
        topic, reply = await spy.until(
            lambda _, m: m.get("task_id") == task.task_id and "status" in m
        )
    # Answered on the tool's shared response topic, not where the task pointed.
    assert topic == topics.response(info.id)
    assert reply["result"] == 2
    assert not [t for t, m in spy.seen if t == topics.register and "status" in m]


async def test_joining_a_fleet_costs_one_message_per_tool(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, spy: Spy
) -> None:
    fleet = []
    for index in range(20):

        @tool(name=f"tool_{index}")
        def numbered(x: int) -> int:
            """A tool of a larger fleet."""
            return x

        fleet.append(numbered)
    async with ToolService(mosquitto.url, fleet, topics=topics) as service:
        with anyio.fail_after(15):
            for endpoint in service.endpoints:
                await endpoint.confirmed.wait()
        # Everything the fleet's start caused has passed the broker before this.
        started = f"{topics.status}/started"
        await manager.messager.publish(started, b'{"end": true}')
        await spy.until(lambda topic, _: topic == started)
        seen_before = len(spy.seen)
        async with (
            messager_for(mosquitto.url, topics) as connection,
            manager_for(connection, topics) as joining,
        ):
            with anyio.fail_after(15):
                while len(joining.get_tool_names()) < 20:
                    await joining._registry.changed()
            # Whatever the joining manager sends about those registrations comes before
            # this, in order, on its one connection.
            sentinel = f"{topics.status}/sentinel"
            await connection.publish(sentinel, b'{"end": true}')
            await spy.until(lambda topic, _: topic == sentinel)
        joined = spy.seen[seen_before:]
        kinds: dict[str, int] = {}
        for topic, message in joined:
            if topic == sentinel:
                continue
            addressed = topic.startswith(topics.register) and topic.endswith(f"/{joining.inbox}")
            kind = f"{message['type']}{' addressed' if addressed else ''}"
            kinds[kind] = kinds.get(kind, 0) + 1
        # The announcement, then one registration per tool to the joining manager alone; no
        # broadcast registration, no confirmation (the tools were confirmed before).
        assert kinds == {"MANAGER_ONLINE": 1, "REGISTER_TOOL addressed": 20}


async def test_a_replica_that_misses_a_deadline_is_skipped_until_it_answers(
    mosquitto: Mosquitto, topics: Topics, relay: Relay, manager: ToolManager
) -> None:
    @tool(name="who")
    def near() -> str:
        """Which replica answered."""
        return "near"

    @tool(name="who")
    def far() -> str:
        """Which replica answered."""
        return "far"

    # The far replica reaches the broker through a relay and leaves no Last Will: when
    # the relay freezes, it is gone as a replica on a dead cluster node is.
    async with (
        ToolService(mosquitto.url, [near], topics=topics),
        ToolService(relay.url, [far], topics=topics, will_topic=None),
    ):
        with anyio.fail_after(15):
            while len(_instances(manager)) < 2:
                await manager._registry.changed()
        relay.freeze()
        outcomes: dict[str, int] = {}
        for _ in range(8):
            # 3 s: the frozen replica's one call costs that; the others must fit in it.
            result = await manager.execute_tool("who", {}, timeout=3)
            key = str(result.result) if result.ok else str(getattr(result, "error_code", None))
            outcomes[key] = outcomes.get(key, 0) + 1
        # The round robin sent one call to the frozen replica; after it timed out, every
        # call went to the replica that answers.
        assert outcomes == {"timeout": 1, "near": 7}
        relay.thaw()
        served: set[str] = set()
        with anyio.fail_after(15):
            while served != {"near", "far"}:
                result = await manager.execute_tool("who", {}, timeout=5)
                assert result.ok, result.error
                served.add(str(result.result))


async def test_a_replica_silent_to_every_ping_is_retired_and_registers_again_once_it_runs(
    mosquitto: Mosquitto,
    topics: Topics,
    relay: Relay,
    manager: ToolManager,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(liveness, "RETIRE_SECONDS", 1.0)

    @tool(name="who")
    def near() -> str:
        """Which replica answered."""
        return "near"

    @tool(name="who")
    def far() -> str:
        """Which replica answered."""
        return "far"

    async with (
        ToolService(mosquitto.url, [near], topics=topics),
        ToolService(relay.url, [far], topics=topics, will_topic=None) as far_service,
    ):
        with anyio.fail_after(15):
            while len(_instances(manager)) < 2:
                await manager._registry.changed()
        far_id = next(
            tool_id
            for tool_id in _instances(manager)
            if manager.tools_by_id[tool_id]["source_client_id"] == far_service.messager.client_id
        )
        relay.freeze()
        missed = await manager.execute_tool(far_id, {}, timeout=0.5)
        assert getattr(missed, "error_code", None) == "timeout"
        # Suspect, and silent to every ping: retired, and a call waiting on it ends at
        # once, as it would on its Last Will, not at its 60 s timeout.
        with anyio.fail_after(20):
            waiting = await manager.execute_tool(far_id, {}, timeout=60)
        assert getattr(waiting, "error_code", None) == "tool_offline", waiting
        assert far_id not in manager.tools_by_id
        served = await manager.execute_tool("who", {}, timeout=5)
        assert served.ok and served.result == "near"
        # Running again, it reads its retirement and registers again.
        relay.thaw()
        with anyio.fail_after(15):
            while far_id not in manager.tools_by_id:
                await manager._registry.changed()
        back = await manager.execute_tool(far_id, {}, timeout=5)
        assert back.ok and back.result == "far"


def _instances(manager: ToolManager) -> list[str]:
    return [tool_id for tool_id, t in manager.tools_by_id.items() if t["name"] == "who"]


async def test_a_task_lost_with_a_tools_connection_is_sent_again_when_it_registers(
    mosquitto: Mosquitto, topics: Topics, relay: Relay, manager: ToolManager, spy: Spy
) -> None:
    runs: list[int] = []

    @tool
    def once(x: int) -> int:
        """Count the runs."""
        runs.append(x)
        return x

    async with ToolService(relay.url, [once], topics=topics, will_topic=None) as service:
        info = await manager.wait_for_tool("once", timeout=15)
        relay.freeze()
        async with anyio.create_task_group() as group:
            results: list[Any] = []

            async def call() -> None:
                results.append(await manager.execute_tool("once", {"x": 7}, timeout=30))

            group.start_soon(call)
            # The task is on the broker, on its way into the frozen link ...
            await spy.until(lambda topic, m: topic == topics.call(info.id) and "task_id" in m)
            # ... and the link dies with it: the tool reconnects and registers again.
            relay.kill()
            relay.start()
        assert service.messager.connections == 2
    assert results[0].ok and results[0].result == 7
    assert runs == [7]


async def test_a_connection_fails_over_to_the_next_broker_and_calls_resume(
    prefix: str,
) -> None:
    topics = Topics.with_prefix(prefix)
    with running_mosquitto() as first, running_mosquitto() as second:
        both = f"{first.url},{second.url}"
        async with (
            ToolService(both, [double], topics=topics) as service,
            messager_for(both, topics) as connection,
            manager_for(connection, topics) as manager,
        ):
            await manager.wait_for_tool("double", timeout=15)
            assert (await manager.execute_tool("double", {"x": 1})).result == 2
            assert connection.url == service.messager.url == first.url
            first.kill()
            with anyio.fail_after(30):
                while True:
                    result = await manager.execute_tool("double", {"x": 2}, timeout=2)
                    if result.ok:
                        break
            assert result.result == 4
            assert connection.url == service.messager.url == second.url


async def test_a_refused_subscription_is_never_ignored(mosquitto: Mosquitto) -> None:
    from amqtt.broker import Broker

    port = free_port()
    # amqtt's taboo plugin refuses subscriptions to "prohibited" (SUBACK 0x80).
    broker = Broker(
        {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True},
                "amqtt.plugins.topic_checking.TopicTabooPlugin": {},
            },
        }
    )
    await broker.start()
    try:
        received = anyio.Event()

        def arrived(_: IncomingMessage) -> None:
            received.set()

        async with Messager(f"mqtt://127.0.0.1:{port}", will_topic=None) as alone:
            with pytest.raises(BrokerError, match="refused the subscription to 'prohibited'"):
                await alone.subscribe("prohibited", arrived)
        # Connecting with that subscription: the refusing broker fails the attempt and the
        # next one is used.
        both = Messager(f"mqtt://127.0.0.1:{port},{mosquitto.url}", will_topic=None)
        await both.subscribe("prohibited", arrived)
        async with both:
            assert both.url == mosquitto.url
            await both.publish("prohibited", b"{}")
            with anyio.fail_after(10):
                await received.wait()
    finally:
        await broker.shutdown()


async def test_fleet_stats_returns_within_its_wait_while_the_broker_is_down(
    private_mosquitto: Mosquitto, topics: Topics
) -> None:
    async with (
        messager_for(private_mosquitto.url, topics) as connection,
        manager_for(connection, topics) as manager,
    ):
        private_mosquitto.kill()
        with anyio.fail_after(5):
            assert await manager.fleet_stats(wait=0.5) == []
        private_mosquitto.start()
