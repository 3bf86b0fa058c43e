"""The MQTT transport: the only package that imports aiomqtt or paho.

Everything above it speaks :class:`Messager` (publish, subscribe by topic,
reconnect hooks) and :class:`BrokerURL`; every reach into the MQTT libraries'
private attributes lives in :mod:`._internals`.
"""

from .messager import Messager
from .routing import Handler, IncomingMessage, ReconnectHook, topic_matches
from .url import BrokerURL, build_tls_context, make_client_id, parse_brokers

__all__ = [
    "BrokerURL",
    "Handler",
    "IncomingMessage",
    "Messager",
    "ReconnectHook",
    "build_tls_context",
    "make_client_id",
    "parse_brokers",
    "topic_matches",
]
