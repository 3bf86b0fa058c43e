"""The Messager against real brokers: connecting, failures, credentials, TLS and socket options."""

import logging
import subprocess
import sys
import tracemalloc
from pathlib import Path

import anyio
import anyio.abc
import pytest

from argentic_tools import (
    BrokerError,
    BrokerUnavailableError,
    IncomingMessage,
    Messager,
    PayloadTooLargeError,
    ToolManager,
    Topics,
)
from tests.support.brokers import Mosquitto, free_port, running_mosquitto, uncovered_env

pytestmark = pytest.mark.anyio


async def test_url_form_connects_and_round_trips(mosquitto: Mosquitto, prefix: str) -> None:
    received: list[IncomingMessage] = []
    done = anyio.Event()

    async def handler(message: IncomingMessage) -> None:
        received.append(message)
        done.set()

    async with Messager(mosquitto.url, will_topic=None) as messager:
        assert messager.is_connected()
        await messager.subscribe(f"{prefix}/+/x", handler)
        await messager.publish(f"{prefix}/a/x", b"payload")
        with anyio.fail_after(5):
            await done.wait()
    assert received[0].topic == f"{prefix}/a/x"
    assert received[0].payload == b"payload"
    assert not messager.is_connected()


async def test_subscribing_to_a_string_that_is_not_a_filter_is_refused_and_changes_nothing(
    mosquitto: Mosquitto, prefix: str
) -> None:
    received: list[IncomingMessage] = []
    done = anyio.Event()

    def handler(message: IncomingMessage) -> None:
        received.append(message)
        done.set()

    async with Messager(mosquitto.url, will_topic=None) as messager:
        with pytest.raises(ValueError, match=r"cannot subscribe to 'a/#/b': '#' may only"):
            await messager.subscribe("a/#/b", handler)
        # The connection goes on, and later subscriptions work (nothing half-added).
        await messager.subscribe(f"{prefix}/ok", handler)
        await messager.publish(f"{prefix}/ok", b"x")
        with anyio.fail_after(5):
            await done.wait()
    assert [m.topic for m in received] == [f"{prefix}/ok"]


async def test_settings_changed_after_construction_apply_to_the_next_connection() -> None:
    with running_mosquitto() as broker:
        messager = Messager(
            broker.url, client_id="settings-check", will_topic=None, persistent_session=False
        )
        messager.keepalive = 7
        messager.persistent_session = True
        async with messager:
            assert messager.is_connected()
        # mosquitto logs each connection's clean-session flag and keepalive.
        log = (broker.workdir / "mosquitto.log").read_text()
    assert "as settings-check (p2, c0, k7)" in log, log[-500:]


async def test_unreachable_broker_raises_a_clear_error() -> None:
    port = free_port()
    messager = Messager(f"mqtt://127.0.0.1:{port}", connect_timeout=3)
    with pytest.raises(BrokerUnavailableError, match=rf"127\.0\.0\.1:{port}") as raised:
        await messager.connect()
    assert not messager.is_connected()
    # The socket's own refusal stays attached, for a traceback that shows the root.
    cause = raised.value.__cause__
    assert cause is not None
    assert "refused" in str(cause).lower(), repr(cause)  # ECONNREFUSED, as the socket said


async def test_a_connection_cut_before_the_connack_fails_the_attempt_at_once() -> None:
    # A relay or load balancer in front of a stopped broker accepts TCP, then closes.
    async def accept_and_close(stream: anyio.abc.SocketStream) -> None:
        await stream.aclose()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, accept_and_close)
        # Without the fix the attempt waits out the whole connect timeout.
        messager = Messager(f"mqtt://127.0.0.1:{port}", connect_timeout=60)
        with anyio.fail_after(20):
            with pytest.raises(BrokerUnavailableError, match="closed before the broker answered"):
                await messager.connect()
        group.cancel_scope.cancel()


async def test_connecting_twice_is_an_error(mosquitto: Mosquitto) -> None:
    async with Messager(mosquitto.url) as messager:
        with pytest.raises(RuntimeError, match="already connected"):
            await messager.connect()


async def test_tcp_nodelay_is_set_on_the_client_socket(mosquitto: Mosquitto) -> None:
    messager = Messager(mosquitto.url)
    assert messager.tcp_nodelay is None  # no socket before connecting
    async with messager:
        assert messager.tcp_nodelay is True
    assert messager.tcp_nodelay is None


async def test_oversized_publish_is_refused_before_sending(mosquitto: Mosquitto) -> None:
    async with Messager(mosquitto.url, max_payload_bytes=100) as messager:
        with pytest.raises(PayloadTooLargeError, match="exceeds the limit of 100 bytes"):
            await messager.publish("x/y", b"z" * 101)


async def test_a_payload_built_at_its_turn_is_built_once_checked_and_delivered(
    mosquitto: Mosquitto, prefix: str
) -> None:
    received: list[bytes] = []
    done = anyio.Event()
    builds: list[str] = []

    def build(text: str) -> bytes:
        builds.append(text)
        return text.encode()

    def unbuildable() -> bytes:
        raise ValueError("cannot build this one")

    def handler(message: IncomingMessage) -> None:
        received.append(message.payload)
        if len(received) == 3:
            done.set()

    async with Messager(mosquitto.url, will_topic=None, max_payload_bytes=100) as messager:
        await messager.subscribe(f"{prefix}/built", handler)
        await messager.publish(f"{prefix}/built", lambda: build("first"))
        await messager.publish(f"{prefix}/built", lambda: build("at most once"), qos=0)
        await messager.publish(f"{prefix}/built", bytearray(b"bytes-like"))  # not a builder
        with pytest.raises(PayloadTooLargeError, match="exceeds the limit of 100 bytes"):
            await messager.publish(f"{prefix}/built", lambda: build("z" * 101))
        with pytest.raises(ValueError, match="cannot build this one"):
            await messager.publish(f"{prefix}/built", unbuildable)
        with anyio.fail_after(5):
            await done.wait()
    assert builds == ["first", "at most once", "z" * 101]
    assert received == [b"first", b"at most once", b"bytes-like"]


PUBLISH_HUGE_THEN_MARKER = """
import sys
import paho.mqtt.client as mqtt

port, topic, size = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
client.connect("127.0.0.1", port)
client.loop_start()
client.publish(topic, b"x" * size, qos=1).wait_for_publish(60)
client.publish(topic, b"marker", qos=1).wait_for_publish(60)
client.disconnect()
client.loop_stop()
"""


async def test_a_huge_message_on_a_managers_inbox_is_read_past_without_holding_it(
    mosquitto: Mosquitto, topics: Topics, caplog: pytest.LogCaptureFixture
) -> None:
    # The session's broker has no packet size limit (like a default mosquitto, or the
    # embedded broker): the manager's own transport must refuse the message.
    size = 50 * 1024 * 1024
    marker = anyio.Event()

    def on_inbox(message: IncomingMessage) -> None:
        if message.payload == b"marker":
            marker.set()

    async with (
        Messager(mosquitto.url, will_topic=None) as messager,
        ToolManager(messager, topics=topics) as manager,
    ):
        assert manager.inbox is not None
        inbox = topics.reply("some-tool", manager.inbox)
        await messager.subscribe(inbox, on_inbox)
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            with caplog.at_level(logging.WARNING, logger="argentic_tools.transport"):
                # Another process publishes it, so that only the manager's side is measured.
                await anyio.run_process(
                    [
                        sys.executable,
                        "-c",
                        PUBLISH_HUGE_THEN_MARKER,
                        str(mosquitto.port),
                        inbox,
                        str(size),
                    ],
                    env=uncovered_env(),
                )
                with anyio.fail_after(60):
                    await marker.wait()  # the huge one came before it, on the same topic
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert messager.connections == 1  # read past, not a reason to reconnect
    # paho alone would have held it three times over (150 MB) before it could be dropped.
    assert peak - before < 5 * 1024 * 1024
    refused = [
        r.getMessage() for r in caplog.records if "exceeds the payload limit" in r.getMessage()
    ]
    assert len(refused) == 1
    assert repr(inbox) in refused[0]


def test_client_ids_are_unique_across_processes_started_together() -> None:
    code = "from argentic_tools import Messager; print(Messager().client_id)"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=uncovered_env())
        for _ in range(4)
    ]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 4


async def test_credentials_reach_the_broker(tmp_path: Path) -> None:
    passwd = tmp_path / "passwd"
    await anyio.run_process(["mosquitto_passwd", "-b", "-c", str(passwd), "agent", "right"])
    with running_mosquitto(f"password_file {passwd}\n", anonymous=False) as broker:
        async with Messager(f"mqtt://agent:right@127.0.0.1:{broker.port}") as messager:
            await messager.publish("auth/check", b"ok")
        with pytest.raises(BrokerUnavailableError, match="not authori"):
            await Messager(f"mqtt://agent:wrong@127.0.0.1:{broker.port}").connect()
        with pytest.raises(BrokerUnavailableError, match="not authori"):
            await Messager(f"mqtt://127.0.0.1:{broker.port}").connect()


async def test_tls_settings_reach_the_client(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    ca_file, cert_file, key_file = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    server.cert_chain_pems[0].write_to_path(str(cert_file))
    server.private_key_pem.write_to_path(str(key_file))
    tls = f"cafile {ca_file}\ncertfile {cert_file}\nkeyfile {key_file}\n"
    with running_mosquitto(tls) as broker:
        url = f"mqtts://127.0.0.1:{broker.port}"
        async with Messager(url, tls_params={"ca_certs": str(ca_file)}) as messager:
            await messager.publish("tls/check", b"ok")
            assert messager.tcp_nodelay is True  # under TLS too
        # Without our CA the server certificate is not trusted: a clear error, not a hang.
        with pytest.raises(BrokerUnavailableError, match=r"127\.0\.0\.1"):
            await Messager(url, connect_timeout=5).connect()


async def test_publishing_on_a_closed_messager_is_a_clear_error(mosquitto: Mosquitto) -> None:
    messager = Messager(mosquitto.url)
    with pytest.raises(BrokerError, match="closed"):
        await messager.publish("x", b"y")
    async with messager:
        pass
    with pytest.raises(BrokerError, match="closed"), anyio.fail_after(5):
        await messager.publish("x", b"y")
