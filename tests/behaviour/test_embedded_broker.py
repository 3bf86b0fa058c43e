"""The embedded amqtt broker, exercised with plain aiomqtt clients."""

import signal
import socket
import sys
import textwrap
from collections.abc import AsyncIterator

import aiomqtt
import anyio
import pytest
from anyio.abc import Process

from argentic_tools import EmbeddedBroker
from tests.support.brokers import free_port

pytestmark = pytest.mark.anyio

# Generous bounds: they only matter when something is broken, and CI machines are slow.
TIMEOUT = 10


@pytest.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker() as running:
        yield running


def client(broker: EmbeddedBroker, **kwargs: object) -> aiomqtt.Client:
    return aiomqtt.Client(broker.host, broker.port, **kwargs)  # type: ignore[arg-type]


async def next_message(subscriber: aiomqtt.Client) -> aiomqtt.Message:
    with anyio.fail_after(TIMEOUT):
        return await anext(subscriber.messages)


async def test_listens_on_a_picked_loopback_port(broker: EmbeddedBroker) -> None:
    assert broker.running
    assert broker.host == "127.0.0.1"
    assert broker.port > 0
    assert broker.url == f"mqtt://127.0.0.1:{broker.port}"


async def test_qos1_round_trip(broker: EmbeddedBroker) -> None:
    async with client(broker) as subscriber, client(broker) as publisher:
        await subscriber.subscribe("agent/tools/call/echo", qos=1)
        await publisher.publish("agent/tools/call/echo", b'{"x": 1}', qos=1)

        message = await next_message(subscriber)

    assert message.topic.value == "agent/tools/call/echo"
    assert message.payload == b'{"x": 1}'
    assert message.qos == 1


async def test_retained_message_reaches_a_late_subscriber(broker: EmbeddedBroker) -> None:
    async with client(broker) as publisher:
        # QoS 1: the PUBACK tells us the broker has stored the message before we go on.
        await publisher.publish("agent/tools/register", b"calculator", qos=1, retain=True)

    async with client(broker) as late:
        await late.subscribe("agent/tools/register", qos=1)
        message = await next_message(late)

    assert message.payload == b"calculator"
    assert message.retain


WILL_CLIENT = textwrap.dedent(
    """
    import asyncio, sys
    import aiomqtt

    async def main(port):
        will = aiomqtt.Will("agent/status/info", b"tool offline", qos=1)
        async with aiomqtt.Client("127.0.0.1", port, will=will, keepalive=60):
            print("connected", flush=True)
            await asyncio.Event().wait()

    asyncio.run(main(int(sys.argv[1])))
    """
)


async def wait_for_line(process: Process, expected: bytes) -> None:
    assert process.stdout is not None
    received = b""
    with anyio.fail_after(TIMEOUT):
        async for chunk in process.stdout:
            received += chunk
            if expected in received:
                return
    raise AssertionError(f"the child exited without printing {expected!r}: {received!r}")


async def test_last_will_is_published_when_a_client_dies(broker: EmbeddedBroker) -> None:
    async with client(broker) as watcher:
        await watcher.subscribe("agent/status/info", qos=1)

        process = await anyio.open_process(
            [sys.executable, "-c", WILL_CLIENT, str(broker.port)],
            stderr=None,
        )
        killed = False
        try:
            await wait_for_line(process, b"connected")
            # SIGKILL: no DISCONNECT packet, the kernel just closes the socket.
            process.send_signal(signal.SIGKILL)
            killed = True
            message = await next_message(watcher)
        finally:
            # Signal the child only once: a second send_signal() polls the process and
            # can reap it behind asyncio's child watcher, which then reports exit 255.
            if not killed:
                process.kill()
            with anyio.fail_after(TIMEOUT):
                await process.wait()
            await process.aclose()

    assert process.returncode == -signal.SIGKILL
    assert message.topic.value == "agent/status/info"
    assert message.payload == b"tool offline"


async def test_missing_extra_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import amqtt.broker` raise ImportError,
    # which is what an environment without the extra does.
    monkeypatch.setitem(sys.modules, "amqtt", None)
    monkeypatch.setitem(sys.modules, "amqtt.broker", None)
    broker = EmbeddedBroker()

    with pytest.raises(RuntimeError) as raised:
        await broker.start()

    assert str(raised.value) == (
        "the embedded broker needs the 'broker' extra: pip install 'argentic-tools[broker]'"
    )
    assert isinstance(raised.value.__cause__, ImportError)
    assert not broker.running


async def test_restart_listens_on_the_same_port() -> None:
    broker = EmbeddedBroker()
    await broker.start()
    port = broker.port
    await broker.stop()
    assert not broker.running
    await broker.stop()  # stopping twice is harmless

    await broker.start()
    try:
        assert broker.port == port
        async with client(broker) as probe:
            await probe.publish("probe", b"", qos=1)
    finally:
        await broker.stop()


async def test_starting_twice_is_refused(broker: EmbeddedBroker) -> None:
    with pytest.raises(RuntimeError, match="already running"):
        await broker.start()


async def test_port_in_use_is_reported() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = EmbeddedBroker(port=port)

        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            await broker.start()

    assert not broker.running


async def test_serve_forever_runs_until_cancelled() -> None:
    broker = EmbeddedBroker()
    async with anyio.create_task_group() as tg:
        await tg.start(broker.serve_forever)
        assert broker.running
        async with client(broker) as probe:
            await probe.publish("probe", b"", qos=1)
        tg.cancel_scope.cancel()

    assert not broker.running


async def test_a_port_taken_after_it_was_picked_is_replaced_by_a_fresh_pick() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        # The race: another process binds the picked port before the broker does.
        picks = [int(taken.getsockname()[1]), free_port()]
        asked: list[str] = []

        def picker(host: str) -> int:
            asked.append(host)
            return picks[len(asked) - 1]

        async with EmbeddedBroker(port_picker=picker) as broker:
            assert asked == ["127.0.0.1", "127.0.0.1"]
            assert broker.port == picks[1]
            async with client(broker) as probe:
                await probe.publish("probe", b"", qos=1)


async def test_picking_only_taken_ports_gives_up_after_five_attempts() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        asked: list[str] = []

        def picker(host: str) -> int:
            asked.append(host)
            return port

        broker = EmbeddedBroker(port_picker=picker)
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            await broker.start()

    assert asked == ["127.0.0.1"] * 5
    assert not broker.running
