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
  broker does not declare a busy process dead.

The versions these were written and tested against are pinned exactly in
``pyproject.toml``; :func:`check_internals` (run by the test suite) names every
attribute that an upgrade removed or changed.
"""

import asyncio
import collections
import contextlib
import ssl
from collections.abc import Callable
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
        ):
            if not hasattr(paho, name):
                problems.append(f"paho.mqtt.client.Client.{name}: missing")
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
) -> None:
    """Hook paho's callbacks on a client that has not connected yet.

    Args:
        client: The aiomqtt client.
        on_message: Receives every message, on the event loop.
        on_puback: Called with each acknowledged message id; returns False when the
            id is not one of ours, so aiomqtt's own handling runs.

    """
    paho = client._client
    paho.on_message = on_message
    fallback = paho.on_publish

    def on_publish(paho_client: Any, userdata: Any, mid: int, *rest: Any) -> None:
        if not on_puback(mid) and fallback is not None:
            fallback(paho_client, userdata, mid, *rest)

    paho.on_publish = on_publish
    paho.on_disconnect = _fail_pending_connect(client)
    _guard_write_watch(client)


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
