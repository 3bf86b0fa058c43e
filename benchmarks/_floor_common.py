"""What the floor's requester and responder share: the aiomqtt client settings."""

import logging
import socket
import uuid

import aiomqtt

NODELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)

# aiomqtt warns about every publish beyond ten awaiting their PUBACK: normal load here
# (argentic-tools' Messager silences the same warning the same way).
QUIET = logging.getLogger("benchmarks.floor.aiomqtt")
QUIET.setLevel(logging.ERROR)


def client(port: int, role: str) -> aiomqtt.Client:
    """An aiomqtt client with TCP_NODELAY and (practically) unbounded QoS 1 in-flight window."""
    return aiomqtt.Client(
        "127.0.0.1",
        port,
        identifier=f"bench-floor-{role}-{uuid.uuid4().hex[:8]}",
        socket_options=NODELAY,
        max_inflight_messages=65535,
        keepalive=60,
        logger=QUIET,
    )
