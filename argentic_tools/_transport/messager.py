"""The MQTT connection: one reader, dispatch by topic, reconnection with backoff.

:class:`Messager` owns one MQTT connection with one reader task that
dispatches every incoming message by topic. It reconnects with backoff when
the broker goes away, subscribes again, and tells its owners through
reconnect hooks so that they can register again. Given several brokers (the
nodes of a cluster), it tries them in turn and fails over to the next one when
its connection dies or a node refuses a subscription (see :mod:`.broker_rotation`).
QoS 1 publishes wait for their PUBACK in a bounded window (see :mod:`.ack_window`)
and go out again on the next connection when theirs dies first.
aiomqtt and paho exceptions never leave this package: they become
:class:`~argentic_tools.BrokerError`.
"""

import asyncio
import contextlib
import logging
import random
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import aiomqtt

from .._errors import BrokerError, BrokerUnavailableError, PayloadTooLargeError
from .._lifecycle import AsyncResource, TaskSet
from .._logging import InstanceLogger, LogLevel
from .._protocol.messages import DEFAULT_MAX_PAYLOAD_BYTES, BaseMessage, encode
from .._protocol.topics import DEFAULT_REGISTER_TOPIC
from .._telemetry import connection_reconnected
from . import _internals
from .ack_window import MAX_UNACKED, AckWindow
from .broker_rotation import ATTEMPT_SECONDS, BrokerRotation, suback_refused
from .routing import Handler, IncomingMessage, ReconnectHook, Subscriptions, filter_problem
from .url import build_tls_context, make_client_id, parse_brokers

logger = logging.getLogger("argentic_tools.transport")
_T = TypeVar("_T")

SUBSCRIBES_IN_FLIGHT = 64
"""SUBSCRIBE and UNSUBSCRIBE packets awaiting the broker's answer at once; more wait.

aiomqtt scans every pending call for each new one: a process subscribing the call
topics of thousands of tools at once spent minutes in that scan."""

RECONNECT_WARN_SECONDS = 10.0
"""While reconnecting fails, a warning at most this often (the first one at once)."""


class Messager(AsyncResource):
    """One MQTT connection shared by a manager and/or tools in a process.

    Create it, then either ``await messager.connect()`` ... ``await
    messager.disconnect()`` or use ``async with Messager(...) as messager:``.
    Nothing connects in ``__init__``.

    Args:
        broker_address: Host name, or a URL such as ``mqtt://user:pw@host:1883``
            or ``mqtts://host:8883`` (the URL's port, credentials and TLS win).
            Several brokers (the nodes of a cluster): a list, or the addresses
            separated by commas (``mqtt://a:1883,mqtt://b:1883``); they are tried in
            turn, each for at most ``attempt_timeout`` seconds, and a connection
            that dies, or a node that refuses a subscription, fails over to the next.
        port: Broker port when ``broker_address`` is a plain host.
        client_id: MQTT client id; a unique one is generated when empty. Give a
            stable one (the same on every start) to keep a session across restarts.
        username: User name for the broker.
        password: Password for the broker.
        keepalive: MQTT keepalive in seconds; the broker declares a silent
            client dead after 1.5 times this.
        tls_params: TLS settings (``ca_certs``, ``certfile``, ``keyfile``,
            ``insecure``, ``ciphers``); giving them turns TLS on.
        log_level: Level of this connection's logger.
        will_topic: Where the broker publishes this client's Last Will (a
            ``CLIENT_OFFLINE`` message) when the process dies; None for no will.
        max_payload_bytes: Largest payload sent or accepted.
        connect_timeout: Seconds to wait for the first connection.
        persistent_session: Keep the MQTT session (subscriptions and queued
            QoS 1 messages) on the broker while disconnected. None (the default)
            keeps it only for a ``client_id`` the caller gave: a generated id is
            never used again once this process ends, so its session would stay on
            the broker, queueing messages for nobody (until the broker's
            ``persistent_client_expiration``, forever without it). A session kept
            for a generated id (True) is ended by :meth:`disconnect`.
        attempt_timeout: Seconds one connection attempt to one broker may take;
            default ``connect_timeout`` for one broker, :data:`ATTEMPT_SECONDS`
            (at most ``connect_timeout``) for several.
        fresh_session_on_failover: With a kept session: connecting to another broker
            than the one the session was last on, or to one that refused a
            subscription twice in a row, starts a fresh session there (a session
            pinned to a dead node's queues can block re-subscribing). Tasks lost with
            the old session are sent again by managers once the tool registers.

    """

    def __init__(
        self,
        broker_address: str | Sequence[str] = "localhost",
        port: int = 1883,
        client_id: str = "",
        username: str | None = None,
        password: str | None = None,
        keepalive: int = 15,
        tls_params: dict[str, Any] | None = None,
        log_level: LogLevel | str = LogLevel.INFO,
        *,
        will_topic: str | None = DEFAULT_REGISTER_TOPIC,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        connect_timeout: float = 10.0,
        persistent_session: bool | None = None,
        attempt_timeout: float | None = None,
        fresh_session_on_failover: bool = True,
    ) -> None:
        self.brokers = parse_brokers(broker_address, port, username, password)
        """Every broker this connection may use, in the order they are tried."""
        first = self.brokers[0]
        self.broker_address = first.host
        """Host of the broker in use (or tried first)."""
        self.port = first.port
        """Port of the broker in use (or tried first)."""
        username, password = first.username, first.password
        self.client_id = client_id or make_client_id()
        self._stable_id = bool(client_id)
        self.username = username
        self.password = password
        self.keepalive = keepalive
        self.tls_params = tls_params
        self.tls_context = build_tls_context(
            tls_params, enabled=any(broker.tls for broker in self.brokers)
        )
        self.will_topic = will_topic
        self.max_payload_bytes = max_payload_bytes
        self.connect_timeout = connect_timeout
        self.attempt_timeout = (
            attempt_timeout
            if attempt_timeout is not None
            else connect_timeout
            if len(self.brokers) == 1
            else min(connect_timeout, ATTEMPT_SECONDS)
        )
        self.fresh_session_on_failover = fresh_session_on_failover
        self.persistent_session = (
            self._stable_id if persistent_session is None else persistent_session
        )
        self.logger = InstanceLogger(logger, log_level, {"client_id": self.client_id})
        self._subscriptions = Subscriptions()
        self._client: aiomqtt.Client | None = None
        self._connected = asyncio.Event()
        self._closing = False
        self._entered = False
        self._runner: asyncio.Task[None] | None = None
        self._reconnect_hooks: list[ReconnectHook] = []
        self.connections = 0
        """How many times a connection was established (1 after connect)."""
        # Work started by the connection or on its behalf (handlers, hooks, attachments'
        # work): tracked here because it is started from paho's callback, where a task
        # group cannot be entered; disconnect() cancels and awaits all of it.
        self._tasks = TaskSet(self.logger, self.client_id)
        self._attachments: dict[object, Any] = {}
        self._window = AckWindow(MAX_UNACKED)
        self._subscribing = asyncio.Semaphore(SUBSCRIBES_IN_FLIGHT)
        # It reads this Messager's public settings at every attempt (a user may change
        # them between connections); the will topic, which a ToolService sets after
        # construction, is passed to every open.
        self._rotation = BrokerRotation(
            self.brokers,
            client_id=self.client_id,
            settings=self,
            subscriptions=self._subscriptions,
            on_message=self._on_paho_message,
            on_puback=self._window.on_puback,
            on_refused=self._on_refused,
            logger=self.logger,
        )

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> "Messager":
        """Create a Messager from ``mqtt://[user:pass@]host[:port]`` (or ``mqtts://``)."""
        return cls(url, **kwargs)

    @property
    def url(self) -> str:
        """The address of the broker in use (or tried first) as a URL, without credentials."""
        scheme = "mqtts" if self._rotation.uses_tls(self._rotation.current) else "mqtt"
        return f"{scheme}://{self.broker_address}:{self.port}"

    @property
    def max_unacked(self) -> int:
        """QoS 1 publishes that may await their PUBACK at once; more wait their turn.

        Callers that keep their own queue of messages can size it from this.
        """
        return self._window.size

    @property
    def stable_id(self) -> bool:
        """True when the client id was given (the same on every start), not generated."""
        return self._stable_id

    def is_connected(self) -> bool:
        """True while the connection to the broker is up."""
        return self._connected.is_set()

    @property
    def tcp_nodelay(self) -> bool | None:
        """Whether the live connection's socket has Nagle's algorithm off (``TCP_NODELAY``).

        Read from the socket itself, so it reports what the operating system applies;
        None while not connected. Calls and results are small messages: with Nagle's
        algorithm on, each one could wait for the acknowledgement of the one before.
        """
        client = self._client
        if client is None or not self.is_connected():
            return None
        sock = _internals.socket_of(client)
        if not isinstance(sock, socket.socket):
            return None
        return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    def ping_while_blocked(self) -> bool:
        """Send a keepalive ping from another thread while this event loop is blocked.

        For a watchdog thread that knows the loop is stuck (see ``LoopWatchdog``):
        the broker hears from the process and does not drop it. Returns False when
        no ping could be sent safely (not connected, TLS, or a packet half-written).
        """
        client = self._client
        if client is None or not self.is_connected():
            return False
        return _internals.ping_from_another_thread(client)

    async def wait_connected(self) -> None:
        """Return once the connection is up (at once when it is); bound it with a deadline."""
        await self._connected.wait()

    async def _open_resource(self) -> None:
        await self.connect()

    async def _close_resource(self) -> None:
        await self.disconnect()

    async def connect(self) -> bool:
        """Connect to the broker and start the reader.

        Returns:
            True (kept for Argentic compatibility; failures raise).

        Raises:
            BrokerUnavailableError: The broker cannot be reached within
                ``connect_timeout`` or refused the connection (bad credentials,
                TLS failure); the message names the broker and the cause.
            RuntimeError: This Messager is already connected.

        """
        if self._entered:
            raise RuntimeError("this Messager is already connected; create another one")
        self._entered = True
        self._closing = False
        try:
            self._client = await self._open()
        except BaseException:
            self._entered = False
            raise
        self.connections += 1
        self._connected.set()
        self._runner = asyncio.create_task(self._run(), name=f"mqtt-reader:{self.client_id}")
        self.logger.debug("connected to %s as %s", self.url, self.client_id)
        return True

    async def disconnect(self) -> None:
        """Close the connection cleanly (no Last Will) and stop the reader.

        A session kept for a generated client id is ended too: nobody can resume it.
        """
        if not self._entered:
            return
        self._closing = True
        self._connected.clear()
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.wait([self._runner])
        await self._tasks.aclose()
        client, self._client = self._client, None
        self._window.wake_all()  # their publish() calls then see the closed connection
        if client is not None:
            with contextlib.suppress(Exception):
                await client.__aexit__(None, None, None)
            _internals.settle(client)
            if self.persistent_session and not self._stable_id:
                await self._rotation.end_session()
        self._runner = None
        self._entered = False

    async def stop(self) -> None:
        """Alias of :meth:`disconnect`."""
        await self.disconnect()

    def attachment(self, key: object, factory: Callable[[], _T]) -> _T:
        """The object kept on this connection under ``key``, made by ``factory`` on first use.

        For state that belongs to one connection and is shared by everything on it
        (the tool side's status router): it lives exactly as long as the Messager.
        """
        try:
            value: _T = self._attachments[key]
        except KeyError:
            value = self._attachments[key] = factory()
        return value

    def spawn(self, work: Awaitable[Any], name: str) -> "asyncio.Task[Any]":
        """Run ``work`` as a named task owned by this connection.

        Failures are logged; :meth:`disconnect` cancels and awaits whatever still runs.
        """
        return self._tasks.spawn(work, name)

    def add_reconnect_hook(self, hook: ReconnectHook) -> None:
        """Run ``hook`` after every reconnection (not after the first connect)."""
        self._reconnect_hooks.append(hook)

    def remove_reconnect_hook(self, hook: ReconnectHook) -> None:
        """Stop running ``hook`` after reconnections."""
        with contextlib.suppress(ValueError):
            self._reconnect_hooks.remove(hook)

    async def subscribe(self, topic: str, handler: Handler) -> None:
        """Deliver messages matching ``topic`` (wildcards allowed) to ``handler``.

        Several handlers may share a topic; each receives every message. The
        subscription is restored after reconnections.

        Raises:
            ValueError: ``topic`` is not an MQTT topic filter (nothing is subscribed).
            BrokerError: The broker refused the subscription, or the connection failed.

        """
        problem = filter_problem(topic)
        if problem is not None:
            raise ValueError(f"cannot subscribe to {topic!r}: {problem}")
        is_new = self._subscriptions.add(topic, handler)
        if is_new and self._client is not None and self._connected.is_set():
            try:
                async with self._subscribing:
                    client = self._client
                    if client is None or not self._connected.is_set():
                        return  # lost meanwhile: the reconnect path subscribes it
                    codes = await client.subscribe(topic, qos=1)
            except aiomqtt.MqttError as exc:
                # The reconnect path subscribes again; report, do not lose the handler.
                raise BrokerError(f"subscribing to {topic!r} failed: {exc}") from exc
            if suback_refused(codes):
                # Never ignored: a client that believes it subscribed would wait forever.
                self._subscriptions.remove(topic, handler)
                raise BrokerError(
                    f"the broker at {self.url} refused the subscription to {topic!r} "
                    "(not authorised by its ACL, or a filter it does not support)"
                )

    async def unsubscribe(self, topic: str, handler: Handler | None = None) -> None:
        """Remove ``handler`` (or every handler) from ``topic``; unsubscribe when none is left."""
        if (
            self._subscriptions.remove(topic, handler)
            and self._client is not None
            and self.is_connected()
        ):
            with contextlib.suppress(aiomqtt.MqttError):
                async with self._subscribing:
                    client = self._client
                    if client is not None and self.is_connected():
                        await client.unsubscribe(topic)

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
        message can go out (its turn in the window of :attr:`max_unacked`
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
                        mid = self._window.send(client, topic, data, qos, retain)
                        if mid is not None:
                            ack = self._window.ack(mid)
                            try:
                                await ack
                            finally:
                                self._window.forget(mid, ack)
                    finally:
                        self._window.release()
                    if client is self._client:
                        return
                    # Woken because that connection died, not by a PUBACK: send it again
                    # on the new one (at least once; tools ignore a task id seen before).
                    continue
                except aiomqtt.MqttError as exc:
                    if self._closing:
                        raise BrokerError(f"publishing to {topic!r} failed: {exc}") from exc
                    # The connection dropped under us: wait for the reader to reconnect.
                    self._connected.clear()
            await self._connected.wait()

    # -- internals ---------------------------------------------------------

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

    async def _open(self, *, after_loss: bool = False) -> aiomqtt.Client:
        """A new connection from the rotation; the broker it is on becomes the one in use."""
        client = await self._rotation.open(self.will_topic, after_loss=after_loss)
        broker = self._rotation.current
        self.broker_address, self.port = broker.host, broker.port
        return client

    async def _run(self) -> None:
        backoff = 0.05
        failures = 0
        warned_at = -RECONNECT_WARN_SECONDS
        lost = False
        while not self._closing:
            client = self._client
            if client is not None:
                try:
                    await self._read(client)
                except aiomqtt.MqttError as exc:
                    if self._closing:
                        return
                    self.logger.warning("lost the connection to %s: %s", self.url, exc)
                lost = True
                self._connected.clear()
                self._client = None
                # Publishes waiting for PUBACKs that can never come: wake them to resend.
                self._window.wake_all()
                with contextlib.suppress(Exception):
                    await client.__aexit__(None, None, None)
                _internals.settle(client)
            try:
                self._client = await self._open(after_loss=lost)
            except BrokerUnavailableError as exc:
                failures += 1
                lost = False  # a full round failed: start from the current one again
                now = time.monotonic()
                if now - warned_at >= RECONNECT_WARN_SECONDS:
                    warned_at = now
                    self.logger.warning(
                        "cannot reconnect (attempt %d): %s; still trying", failures, exc
                    )
                else:
                    self.logger.debug("reconnect failed: %s; retrying in %.2f s", exc, backoff)
                await asyncio.sleep(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, 2.0)
                continue
            backoff = 0.05
            lost = False
            self.connections += 1
            self._connected.set()
            connection_reconnected()
            after = f" after {failures} failed attempt(s)" if failures else ""
            failures = 0
            self.logger.info("reconnected to %s%s", self.url, after)
            for hook in list(self._reconnect_hooks):
                self.spawn(self._run_hook(hook), "mqtt-reconnect-hook")

    async def _run_hook(self, hook: ReconnectHook) -> None:
        try:
            await hook()
        except Exception:
            self.logger.exception("a reconnect hook failed")

    async def _read(self, client: aiomqtt.Client) -> None:
        # Messages are dispatched by _on_paho_message; this only waits for the end.
        # Shielded: disconnect() cancels this reader, and a cancelled wait would cancel
        # aiomqtt's own future, after which its __aexit__ believes the connection gone
        # and neither sends DISCONNECT nor closes the socket (the client stayed
        # connected, subscribed and queueing until the process exited).
        try:
            await asyncio.shield(_internals.disconnected(client))
        except aiomqtt.MqttError:
            raise  # already ours to report
        except Exception as exc:  # paho reports socket errors raw
            raise aiomqtt.MqttError(str(exc) or type(exc).__name__) from exc
        if not self._closing:
            raise aiomqtt.MqttError("the broker closed the connection")

    def _on_paho_message(self, _client: Any, _userdata: Any, message: Any) -> None:
        payload = message.payload
        try:
            topic = message.topic
        except UnicodeDecodeError:
            self.logger.warning("dropped a message whose topic is not UTF-8")
            return
        if len(payload) > self.max_payload_bytes:
            self.logger.warning(
                "dropped message on %r: payload of %d bytes exceeds %d",
                topic,
                len(payload),
                self.max_payload_bytes,
            )
            return
        incoming = IncomingMessage(topic, payload, bool(message.retain))
        for handler in self._subscriptions.handlers_for(topic):
            self._dispatch(handler, incoming)

    def _on_refused(self, topic: str | None, size: int) -> None:
        self.logger.warning(
            "dropped message on %r: packet of %d bytes exceeds the payload limit of %d "
            "(read past without keeping it)",
            topic,
            size,
            self.max_payload_bytes,
        )

    def _dispatch(self, handler: Handler, message: IncomingMessage) -> None:
        try:
            outcome = handler(message)
        except Exception:
            self.logger.exception("handler for %r failed; the message was dropped", message.topic)
            return
        if outcome is not None:
            self.spawn(outcome, f"handler:{message.topic}")
