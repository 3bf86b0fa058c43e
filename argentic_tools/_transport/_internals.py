"""Every reach into aiomqtt's and paho's private attributes, in one place.

aiomqtt hides the paho client it drives, and paho hides its socket bookkeeping;
four things here need them, each because the public API cannot do it:

- dispatch straight from paho's ``on_message`` callback (no queue, no task per
  message: most of a round trip's cost);
- O(1) PUBACK tracking through paho's ``publish`` and ``on_publish`` (aiomqtt scans
  every pending publish on each one);
- ending a connect attempt that the peer cut before its CONNACK (aiomqtt would wait
  out the whole connect timeout);
- adding paho's write watcher only while its socket is still open (EBADF after a
  broker death);
- a PINGREQ written from another thread while a tool blocks the event loop, so the
  broker does not declare a busy process dead;
- reading an oversized incoming PUBLISH into nothing: paho would hold it about three
  times over (its read buffer and two copies while parsing) before we could drop it.

The versions these were written and tested against are pinned exactly in
``pyproject.toml``; :func:`check_internals` (run by the test suite) names every
attribute that an upgrade removed or changed.
"""

import asyncio
import collections
import contextlib
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiomqtt
import paho.mqtt.client as mqtt

TESTED_VERSIONS = {"aiomqtt": "2.5", "paho-mqtt": "2.2"}
"""Major.minor of each MQTT library this module was tested against."""

PahoClient = mqtt.Client
MQTT_ERR_SUCCESS = mqtt.MQTT_ERR_SUCCESS


def check_internals() -> list[str]:
    """Problems with the private attributes this module uses; empty when all are as expected.

    Builds an unconnected aiomqtt client and inspects it: every problem names the
    attribute and what was expected of it.
    """
    problems: list[str] = []
    client = aiomqtt.Client("127.0.0.1", 1)
    paho = getattr(client, "_client", None)
    if not isinstance(paho, mqtt.Client):
        problems.append(
            f"aiomqtt.Client._client: expected the paho.mqtt.client.Client, got {type(paho)!r}"
        )
    for name in ("_connected", "_disconnected"):
        value = getattr(client, name, None)
        if not isinstance(value, asyncio.Future):
            problems.append(f"aiomqtt.Client.{name}: expected an asyncio.Future, got {value!r}")
    if isinstance(paho, mqtt.Client):
        for name, kind in (
            ("_registered_write", bool),
            ("_sock", type(None)),
            ("_out_packet", collections.deque),
            ("_in_packet", dict),
        ):
            if not hasattr(paho, name):
                problems.append(f"paho.mqtt.client.Client.{name}: missing")
            elif not isinstance(getattr(paho, name), kind):
                problems.append(
                    f"paho.mqtt.client.Client.{name}: expected {kind.__name__} before "
                    f"connecting, got {getattr(paho, name)!r}"
                )
        for name in (
            "on_message",
            "on_publish",
            "on_disconnect",
            "on_socket_register_write",
            "on_socket_unregister_write",
            "_sock_recv",
            "_send_puback",
        ):
            if not hasattr(paho, name):
                problems.append(f"paho.mqtt.client.Client.{name}: missing")
        in_packet = getattr(paho, "_in_packet", None)
        if isinstance(in_packet, dict) and set(in_packet) != _IN_PACKET_KEYS:
            problems.append(
                f"paho.mqtt.client.Client._in_packet: expected the keys {sorted(_IN_PACKET_KEYS)}, "
                f"got {sorted(in_packet)}"
            )
    return problems


def paho_of(client: aiomqtt.Client) -> mqtt.Client:
    """The paho client that ``client`` drives."""
    return client._client


def disconnected(client: aiomqtt.Client) -> "asyncio.Future[None]":
    """A future that ends (with an exception when unclean) when the connection ends."""
    return client._disconnected


def settle(client: aiomqtt.Client) -> None:
    """Mark a dropped client's end as seen, so asyncio never reports it as unretrieved.

    aiomqtt stores a lost connection's error on a future that its ``__aexit__`` leaves
    alone when the connection is already gone; a client dropped while subscribing (a
    cluster node dying under it) would log "Future exception was never retrieved".
    """
    future = client._disconnected
    if future.done() and not future.cancelled():
        future.exception()


def publish_raw(
    client: aiomqtt.Client, topic: str, data: bytes, qos: int, retain: bool
) -> mqtt.MQTTMessageInfo:
    """Publish through paho directly: no per-publish bookkeeping in aiomqtt.

    Raises:
        aiomqtt.MqttCodeError: paho refused the publish (not connected, queue full).

    """
    info = client._client.publish(topic, data, qos, retain)
    if info.rc != mqtt.MQTT_ERR_SUCCESS:
        raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
    return info


def install_callbacks(
    client: aiomqtt.Client,
    on_message: Callable[[Any, Any, Any], None],
    on_puback: Callable[[int], bool],
    refuse: "Refusal | None" = None,
) -> None:
    """Hook paho's callbacks on a client that has not connected yet.

    Args:
        client: The aiomqtt client.
        on_message: Receives every message, on the event loop.
        on_puback: Called with each acknowledged message id; returns False when the
            id is not one of ours, so aiomqtt's own handling runs.
        refuse: Incoming messages past its payload size are read into nothing and
            reported to it, never delivered (None: paho reads everything).

    """
    paho = client._client
    if refuse is not None:
        _refuse_oversized(paho, refuse)
    paho.on_message = on_message
    fallback = paho.on_publish

    def on_publish(paho_client: Any, userdata: Any, mid: int, *rest: Any) -> None:
        if not on_puback(mid) and fallback is not None:
            fallback(paho_client, userdata, mid, *rest)

    paho.on_publish = on_publish
    paho.on_disconnect = _fail_pending_connect(client)
    _guard_write_watch(client)


_IN_PACKET_KEYS = {
    "command",
    "have_remaining",
    "remaining_count",
    "remaining_mult",
    "remaining_length",
    "packet",
    "to_process",
    "pos",
}
"""paho's state of the packet it is reading (reset between packets)."""

PUBLISH = 0x30
"""The packet type of an MQTT PUBLISH, in the high nibble of its first byte."""

HEAD_BYTES = 2 + 65535 + 2
"""The most a PUBLISH's variable header can take: topic length, topic, message id."""

DRAIN_CHUNK = 64 * 1024
"""Bytes of an oversized message read (and dropped) per receive."""

DRAIN_CHUNKS_PER_READ = 64
"""Receives per call before the event loop gets its turn (4 MiB at most)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """What :func:`install_callbacks` refuses: payloads above ``max_payload_bytes``.

    ``report`` is called with the message's topic (None when it is not UTF-8) and the
    size of the refused packet, once the packet has been read past.
    """

    max_payload_bytes: int
    report: Callable[[str | None, int], None]


def _refuse_oversized(paho: mqtt.Client, refusal: Refusal) -> None:
    """Make ``paho`` read an incoming PUBLISH larger than the limit into nothing.

    paho reads the whole packet into a buffer, then copies it twice while parsing,
    before any callback could look at its size: a 200 MB message cost 600 MB. Here the
    packet's remaining length, known before its body is read, decides: an oversized
    PUBLISH is read in small chunks and dropped, keeping only its variable header for
    the PUBACK a QoS 1 message needs (the broker would resend it otherwise).
    ``_sock_recv`` is the one seam: paho calls it for the body once the length is
    known, and a ``BlockingIOError`` makes it return and wait for the socket.
    """
    receive = paho._sock_recv
    limit = refusal.max_payload_bytes + HEAD_BYTES

    def guarded(bufsize: int) -> bytes:
        packet = paho._in_packet
        if (
            not packet["have_remaining"]
            or packet["command"] & 0xF0 != PUBLISH
            or packet["remaining_length"] <= limit
        ):
            return receive(bufsize)
        head: bytearray = packet["packet"]
        for _ in range(DRAIN_CHUNKS_PER_READ):
            data = receive(min(packet["to_process"], DRAIN_CHUNK))
            if not data:
                return data  # paho: the connection is lost
            head += data[: max(0, HEAD_BYTES - len(head))]
            packet["to_process"] -= len(data)
            if packet["to_process"] <= 0:
                _drop_publish(paho, refusal)
                break
        raise BlockingIOError  # paho returns and reads on when the socket is readable

    paho._sock_recv = guarded  # type: ignore[method-assign]


def _drop_publish(paho: mqtt.Client, refusal: Refusal) -> None:
    """The oversized PUBLISH is read: acknowledge it, report it, and start afresh."""
    packet = paho._in_packet
    head = bytes(packet["packet"])
    size = packet["remaining_length"]
    qos = (packet["command"] & 0x06) >> 1
    paho._in_packet = {
        "command": 0,
        "have_remaining": 0,
        "remaining_count": [],
        "remaining_mult": 1,
        "remaining_length": 0,
        "packet": bytearray(b""),
        "to_process": 0,
        "pos": 0,
    }
    length = int.from_bytes(head[:2], "big")
    try:
        topic: str | None = head[2 : 2 + length].decode()
    except UnicodeDecodeError:
        topic = None
    if qos == 1:
        # Acknowledged, as paho does once on_message returns: unacknowledged, the broker
        # would send it again on every reconnect of a kept session.
        paho._send_puback(int.from_bytes(head[2 + length : 4 + length], "big"))
    refusal.report(topic, size)


def close_socket(client: aiomqtt.Client) -> None:
    """Close the socket of a failed connect (paho keeps it open)."""
    paho = client._client
    with contextlib.suppress(Exception):
        sock = paho.socket()
        if sock is not None:
            sock.close()


PINGREQ = b"\xc0\x00"
"""An MQTT 3.1.1 PINGREQ packet."""


def ping_from_another_thread(client: aiomqtt.Client) -> bool:
    """Write a PINGREQ on the client's socket while its event loop is blocked.

    Safe only in that state: the loop thread, which owns the socket, is stuck in
    user code, and nothing of paho's is half-written (packets queued but not begun,
    such as the PUBACK of the task that is blocking, may wait: the ping goes first).
    Plain TCP only: a TLS connection's state must not be touched from two threads.
    The broker's PINGRESP is read by paho once the loop runs again.

    Returns:
        True when the ping was written.

    """
    paho = client._client
    sock = paho._sock
    if sock is None or isinstance(sock, ssl.SSLSocket):
        return False
    queued = paho._out_packet
    if queued and queued[0]["pos"] != 0:
        return False
    try:
        return bool(sock.send(PINGREQ) == len(PINGREQ))
    except OSError:
        return False


def socket_of(client: aiomqtt.Client) -> Any:
    """The connected socket (or None)."""
    return client._client.socket()


def _guard_write_watch(client: aiomqtt.Client) -> None:
    """Register paho's write interest safely when it may be gone by the time it runs.

    aiomqtt schedules the watcher from paho's callback and adds it later, unchecked.
    By then the socket may be closed (after a broker died: the event loop fails with
    EBADF), or paho may have written everything and withdrawn its interest, leaving a
    watcher nobody removes, which fires for whatever socket reuses the descriptor.
    """
    paho = client._client
    loop = asyncio.get_running_loop()

    def register_write(_paho: Any, _userdata: Any, sock: Any) -> None:
        def on_writable() -> None:
            try:
                paho.loop_write()
            except Exception as exc:  # noqa: BLE001 - a broken pipe ends the connection
                if not client._disconnected.done():
                    client._disconnected.set_exception(exc)

        fd = sock.fileno()

        def add() -> None:
            # Skip when paho has written everything and withdrawn its interest meanwhile
            # (a watcher added now would never be removed), or when the socket closed.
            if sock.fileno() == fd >= 0 and paho._registered_write and paho._sock is sock:
                with contextlib.suppress(OSError, ValueError):
                    loop.add_writer(fd, on_writable)

        loop.call_soon_threadsafe(add)

    def unregister_write(_paho: Any, _userdata: Any, sock: Any) -> None:
        fd = sock.fileno()
        if fd >= 0:
            with contextlib.suppress(OSError, ValueError):
                loop.remove_writer(fd)

    paho.on_socket_register_write = register_write
    paho.on_socket_unregister_write = unregister_write


def _fail_pending_connect(client: aiomqtt.Client) -> Callable[..., None]:
    """Paho's on_disconnect, also ending a connect attempt the peer cut before its CONNACK.

    aiomqtt ignores a disconnection before the CONNACK, so the attempt would wait out
    the whole connect timeout. That happens whenever something in front of the broker
    (a relay, a load balancer, a TLS terminator) accepts the TCP connection while the
    broker behind it is down: reconnecting after a broker restart then took 10 s.
    """
    original = client._client.on_disconnect

    def on_disconnect(*args: Any) -> None:
        connected = client._connected
        if not connected.done():
            connected.set_exception(
                aiomqtt.MqttError("the connection was closed before the broker answered")
            )
        if original is not None:
            original(*args)

    return on_disconnect
