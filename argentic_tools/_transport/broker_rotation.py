"""Opening a connection: which broker, which session, and every subscription again.

Given several brokers (the nodes of a cluster), :class:`BrokerRotation` tries them in
turn, starting after the one that just failed; a node that refuses a subscription
counts as down, and a kept session pinned to a dead node's queues is given up for a
fresh one. aiomqtt and paho failures become :class:`~argentic_tools.BrokerUnavailableError`
with the broker and the cause in the message.
"""

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any, Protocol

import aiomqtt

from .._errors import BrokerUnavailableError
from .._logging import InstanceLogger
from .._protocol.fleet_messages import ClientOfflineMessage
from .._protocol.messages import encode
from . import _internals
from .routing import Subscriptions
from .url import BrokerURL

_aiomqtt_logger = logging.getLogger("argentic_tools.aiomqtt")
# aiomqtt warns about every publish beyond ten in flight; that is our normal load.
_aiomqtt_logger.setLevel(logging.ERROR)

_NODELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)


def describe_mqtt_error(exc: Exception) -> str:
    """Why a broker did not take a connection, in words (a refusal, or the error)."""
    if isinstance(exc, aiomqtt.MqttCodeError):
        rc = exc.rc
        text = str(rc)
        lowered = text.lower()
        if "not authori" in lowered or "bad user" in lowered or rc in (4, 5, 134, 135):
            return f"refused the connection: not authorised ({text})"
        return f"refused the connection ({text})"
    return str(exc) or type(exc).__name__


ATTEMPT_SECONDS = 3.0
"""With several brokers, how long one connection attempt may take before the next
address is tried (a node that is down but not refusing would otherwise hold the
whole ``connect_timeout``)."""

SUBSCRIBE_BATCH = 64
"""Filters per SUBSCRIBE packet when a connection is (re-)established: a process
serving a thousand tools subscribes again in a few round trips, not a thousand."""

REFUSALS_FOR_FRESH_SESSION = 2
"""Attempts in a row on which a broker refused a subscription before a kept session
is given up there: a session pinned to a dead node's queues can refuse for good."""


def suback_refused(codes: Any) -> bool:
    """True when a SUBACK refused a filter (return code 0x80 or any failure code)."""
    return any(getattr(code, "value", code) >= 0x80 for code in codes)


class ConnectionSettings(Protocol):
    """What a :class:`BrokerRotation` reads at every connection attempt (a Messager has it).

    ``connect_timeout`` also bounds subscribing again on a new connection;
    ``fresh_session_on_failover``: with a kept session, start a fresh one on another broker
    than the one it was last on, or on one that refused a subscription
    :data:`REFUSALS_FOR_FRESH_SESSION` times in a row.
    """

    keepalive: int
    tls_params: dict[str, Any] | None
    tls_context: ssl.SSLContext | None
    attempt_timeout: float
    connect_timeout: float
    persistent_session: bool
    fresh_session_on_failover: bool
    max_payload_bytes: int


class BrokerRotation:
    """Which broker a connection uses next, and opening a connection there.

    Remembers the broker in use, the one the kept session was last on, and how many
    attempts in a row a broker refused a subscription. Each connection it opens is
    subscribed to every filter of ``subscriptions`` and delivers to the callbacks.

    Args:
        brokers: Every broker, in the order they are tried; the first is tried first.
        client_id: The MQTT client id of every connection.
        settings: The connection's settings, read at every attempt (a
            :class:`ConnectionSettings`: the Messager's public attributes, which its
            user may change between connections).
        subscriptions: The filters to subscribe to on every new connection.
        on_message: paho's ``on_message`` callback: every message, on the event loop.
        on_puback: Called with each acknowledged message id; False when not ours.
        on_refused: Told of each incoming message whose payload exceeds the settings'
            ``max_payload_bytes``: its topic (None when not UTF-8) and size. Such a
            message is read past, never held in memory nor delivered.
        logger: Where fresh sessions and sessions that could not be ended are reported.

    """

    def __init__(
        self,
        brokers: list[BrokerURL],
        *,
        client_id: str,
        settings: "ConnectionSettings",
        subscriptions: Subscriptions,
        on_message: Callable[[Any, Any, Any], None],
        on_puback: Callable[[int], bool],
        on_refused: Callable[[str | None, int], None],
        logger: InstanceLogger,
    ) -> None:
        self.brokers = brokers
        """Every broker, in the order they are tried."""
        self._client_id = client_id
        self._settings = settings
        self._subscriptions = subscriptions
        self._on_message = on_message
        self._on_puback = on_puback
        self._on_refused = on_refused
        self._logger = logger
        self._at = 0
        self._session_at: int | None = None
        self._refusals = 0

    @property
    def current(self) -> BrokerURL:
        """The broker in use (or tried first)."""
        return self.brokers[self._at]

    def uses_tls(self, broker: BrokerURL) -> bool:
        """True when connections to ``broker`` use TLS."""
        return broker.tls or bool(self._settings.tls_params)

    async def open(self, will_topic: str | None, *, after_loss: bool = False) -> aiomqtt.Client:
        """Connect to the first broker that accepts, starting with the current one.

        After a lost connection the next broker is tried first: the one that just
        failed is the least likely to be healthy.

        Args:
            will_topic: Where the broker publishes this client's Last Will (a
                ``CLIENT_OFFLINE`` message); None for no will.
            after_loss: The current broker's connection was just lost.

        Raises:
            BrokerUnavailableError: No broker accepted; the message names each one
                and why.

        """
        count = len(self.brokers)
        start = (self._at + 1) % count if after_loss else self._at
        failures: list[BrokerUnavailableError] = []
        for step in range(count):
            index = (start + step) % count
            try:
                client = await self._open_at(index, will_topic)
            except BrokerUnavailableError as exc:
                failures.append(exc)
                continue
            self._at = index
            return client
        if count == 1:
            raise failures[0]  # it names the broker, with the socket's error as its cause
        raise BrokerUnavailableError(
            f"cannot connect to any of the {count} MQTT brokers: "
            + "; ".join(str(failure) for failure in failures)
        ) from failures[-1]

    async def end_session(self, broker: BrokerURL | None = None) -> None:
        """Connect once more with a clean session: MQTT 3.1.1's only way to end one.

        Best effort: on failure the broker's own expiry of the session remains.

        Args:
            broker: Where the session is; the current broker when None.

        """
        client = self._new_client(broker or self.current, None, clean_session=True)
        try:
            async with asyncio.timeout(min(self._settings.attempt_timeout, 2.0)):
                await client.__aenter__()
                await client.__aexit__(None, None, None)
        except Exception as exc:  # noqa: BLE001 - best effort: the broker's expiry remains
            _internals.close_socket(client)
            self._logger.warning("could not end the MQTT session of %s: %s", self._client_id, exc)
        finally:
            _internals.settle(client)

    def _new_client(
        self, broker: BrokerURL, will: aiomqtt.Will | None, *, clean_session: bool
    ) -> aiomqtt.Client:
        return aiomqtt.Client(
            broker.host,
            broker.port,
            identifier=self._client_id,
            username=broker.username,
            password=broker.password,
            keepalive=self._settings.keepalive,
            will=will,
            clean_session=clean_session,
            tls_context=self._settings.tls_context if self.uses_tls(broker) else None,
            socket_options=_NODELAY,
            timeout=self._settings.attempt_timeout,
            logger=_aiomqtt_logger,
            max_inflight_messages=0,  # unlimited, so paho skips its O(n) scan per PUBACK
        )

    async def _open_at(self, index: int, will_topic: str | None) -> aiomqtt.Client:
        broker = self.brokers[index]
        if self._settings.persistent_session and self._settings.fresh_session_on_failover:
            moved = self._session_at is not None and self._session_at != index
            if moved or self._refusals >= REFUSALS_FOR_FRESH_SESSION:
                # The session may be pinned to a dead node's queues: start afresh here.
                self._logger.info("starting a fresh MQTT session on %s", broker)
                await self.end_session(broker)
                self._refusals = 0
        will = None
        if will_topic:
            will = aiomqtt.Will(
                will_topic, encode(ClientOfflineMessage(source=self._client_id)), qos=1
            )
        client = self._new_client(broker, will, clean_session=not self._settings.persistent_session)
        # Dispatch straight from paho's callback (it runs on the event loop): no queue,
        # no task and no wait per message, which is most of a round trip's cost.
        _internals.install_callbacks(
            client,
            self._on_message,
            self._on_puback,
            _internals.Refusal(self._settings.max_payload_bytes, self._on_refused),
        )
        where = f"{broker.host}:{broker.port}"
        problem: str | None = None
        cause: BaseException | None = None
        try:
            async with asyncio.timeout(self._settings.attempt_timeout):
                await client.__aenter__()
        except TimeoutError as exc:
            problem, cause = f"no answer within {self._settings.attempt_timeout:g} s", exc
        except aiomqtt.MqttError as exc:
            problem, cause = describe_mqtt_error(exc), exc
        except (OSError, ssl.SSLError) as exc:
            problem, cause = str(exc) or type(exc).__name__, exc
        if problem is not None:
            _internals.close_socket(client)
            raise BrokerUnavailableError(
                f"cannot connect to the MQTT broker at {where}: {problem}"
            ) from cause
        filters = self._subscriptions.filters()
        failure: str | None = None
        try:
            async with asyncio.timeout(self._settings.connect_timeout):
                for first in range(0, len(filters), SUBSCRIBE_BATCH):
                    batch = filters[first : first + SUBSCRIBE_BATCH]
                    codes = await client.subscribe([(topic, 1) for topic in batch])
                    if suback_refused(codes):
                        refused = next(
                            topic
                            for topic, code in zip(batch, list(codes), strict=False)
                            if suback_refused([code])
                        )
                        failure = f"the broker at {where} refused the subscription to {refused!r}"
                        break
        except (aiomqtt.MqttError, TimeoutError) as exc:
            # RabbitMQ answers a subscription it cannot serve (a queue whose node is
            # down) by closing the connection or not at all: a refusal too.
            failure = f"subscribing at {where} failed: {exc or 'no answer'}"
        if failure is not None:
            # A node that cannot serve a subscription (a session pinned to a dead node,
            # a cluster still recovering) must not leave this client connected and deaf.
            self._refusals += 1
            with contextlib.suppress(Exception):
                await client.__aexit__(None, None, None)
            _internals.settle(client)
            raise BrokerUnavailableError(failure)
        self._refusals = 0
        if self._settings.persistent_session:
            self._session_at = index
        return client
