"""Opening a connection: which broker, which session, and every subscription again.

Given several brokers (the nodes of a cluster), :class:`BrokerConnecting` tries them
in turn, starting after the one that just failed; a node that refuses a subscription
counts as down, and a kept session pinned to a dead node's queues is given up for a
fresh one. aiomqtt and paho failures become :class:`~argentic_tools.BrokerUnavailableError`
with the broker and the cause in the message.
"""

import asyncio
import contextlib
import logging
import socket
import ssl
from typing import Any

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


class BrokerConnecting:
    """Opens the connection of a :class:`Messager`, which inherits this.

    The attributes below are the Messager's.
    """

    brokers: list[BrokerURL]
    broker_address: str
    port: int
    client_id: str
    keepalive: int
    tls_context: ssl.SSLContext | None
    tls_params: dict[str, Any] | None
    will_topic: str | None
    attempt_timeout: float
    connect_timeout: float
    persistent_session: bool
    fresh_session_on_failover: bool
    logger: InstanceLogger
    _at: int
    _session_at: int | None
    _refusals: int
    _subscriptions: Subscriptions

    def _on_paho_message(self, _client: Any, _userdata: Any, message: Any) -> None:
        raise NotImplementedError

    def _on_puback(self, mid: int) -> bool:
        raise NotImplementedError

    def _new_client(
        self, broker: BrokerURL, will: aiomqtt.Will | None, *, clean_session: bool
    ) -> aiomqtt.Client:
        return aiomqtt.Client(
            broker.host,
            broker.port,
            identifier=self.client_id,
            username=broker.username,
            password=broker.password,
            keepalive=self.keepalive,
            will=will,
            clean_session=clean_session,
            tls_context=self.tls_context if broker.tls or self.tls_params else None,
            socket_options=_NODELAY,
            timeout=self.attempt_timeout,
            logger=_aiomqtt_logger,
            max_inflight_messages=0,  # unlimited, so paho skips its O(n) scan per PUBACK
        )

    async def _end_session(self, broker: BrokerURL | None = None) -> None:
        """Connect once more with a clean session: MQTT 3.1.1's only way to end one."""
        client = self._new_client(broker or self.brokers[self._at], None, clean_session=True)
        try:
            async with asyncio.timeout(min(self.attempt_timeout, 2.0)):
                await client.__aenter__()
                await client.__aexit__(None, None, None)
        except Exception as exc:  # noqa: BLE001 - best effort: the broker's expiry remains
            _internals.close_socket(client)
            self.logger.warning("could not end the MQTT session of %s: %s", self.client_id, exc)
        finally:
            _internals.settle(client)

    async def _open(self, *, after_loss: bool = False) -> aiomqtt.Client:
        """Connect to the first broker that accepts, starting with the current one.

        After a lost connection the next broker is tried first: the one that just
        failed is the least likely to be healthy.
        """
        count = len(self.brokers)
        start = (self._at + 1) % count if after_loss else self._at
        problems = []
        for step in range(count):
            index = (start + step) % count
            try:
                client = await self._open_at(index)
            except BrokerUnavailableError as exc:
                problems.append(str(exc))
                continue
            self._at = index
            broker = self.brokers[index]
            self.broker_address, self.port = broker.host, broker.port
            return client
        if count == 1:
            raise BrokerUnavailableError(problems[0])
        raise BrokerUnavailableError(
            f"cannot connect to any of the {count} MQTT brokers: " + "; ".join(problems)
        )

    async def _open_at(self, index: int) -> aiomqtt.Client:
        broker = self.brokers[index]
        if self.persistent_session and self.fresh_session_on_failover:
            moved = self._session_at is not None and self._session_at != index
            if moved or self._refusals >= REFUSALS_FOR_FRESH_SESSION:
                # The session may be pinned to a dead node's queues: start afresh here.
                self.logger.info("starting a fresh MQTT session on %s", broker)
                await self._end_session(broker)
                self._refusals = 0
        will = None
        if self.will_topic:
            will = aiomqtt.Will(
                self.will_topic, encode(ClientOfflineMessage(source=self.client_id)), qos=1
            )
        client = self._new_client(broker, will, clean_session=not self.persistent_session)
        # Dispatch straight from paho's callback (it runs on the event loop): no queue,
        # no task and no wait per message, which is most of a round trip's cost.
        _internals.install_callbacks(client, self._on_paho_message, self._on_puback)
        where = f"{broker.host}:{broker.port}"
        problem: str | None = None
        try:
            async with asyncio.timeout(self.attempt_timeout):
                await client.__aenter__()
        except TimeoutError:
            problem = f"no answer within {self.attempt_timeout:g} s"
        except aiomqtt.MqttError as exc:
            problem = describe_mqtt_error(exc)
        except (OSError, ssl.SSLError) as exc:
            problem = str(exc) or type(exc).__name__
        if problem is not None:
            _internals.close_socket(client)
            raise BrokerUnavailableError(
                f"cannot connect to the MQTT broker at {where}: {problem}"
            ) from None
        filters = self._subscriptions.filters()
        failure: str | None = None
        try:
            async with asyncio.timeout(self.connect_timeout):
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
        if self.persistent_session:
            self._session_at = index
        return client
