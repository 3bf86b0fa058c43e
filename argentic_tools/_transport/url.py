"""Broker addresses and TLS: ``mqtt://[user:pass@]host[:port]`` and ``mqtts://``."""

import os
import re
import ssl
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class BrokerURL:
    """A parsed broker address: ``mqtt://[user:pass@]host[:port]`` or ``mqtts://...``."""

    host: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: bool = False

    @classmethod
    def parse(cls, url: str) -> "BrokerURL":
        """Parse a broker URL.

        Raises:
            ValueError: The URL has another scheme, no host, or a bad port.

        """
        parts = urlsplit(url if "://" in url else f"mqtt://{url}")
        if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
            raise ValueError(
                f"unsupported broker URL scheme {parts.scheme!r} in {url!r}; "
                "use mqtt://host:port or mqtts://host:port"
            )
        if not parts.hostname:
            raise ValueError(f"broker URL {url!r} has no host")
        tls = parts.scheme in ("mqtts", "ssl")
        try:
            port = parts.port or (8883 if tls else 1883)
        except ValueError:
            raise ValueError(f"broker URL {url!r} has an invalid port") from None
        return cls(
            host=parts.hostname,
            port=port,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            tls=tls,
        )

    def __str__(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


_HOST_PORT = re.compile(r"^(\[[^\]]+\]|[^:/\[\]@]+):\d{1,5}$")
"""``host:port`` (or ``[v6]:port``) typed without a scheme."""


def parse_brokers(
    broker_address: "str | Sequence[str]",
    port: int = 1883,
    username: str | None = None,
    password: str | None = None,
) -> list[BrokerURL]:
    """The brokers in ``broker_address``: one address, a comma-separated list, or a list.

    Each is a URL (``mqtt://user:pw@host:1883``, ``mqtts://host``), ``host:port``, or a
    plain host on ``port``; credentials in a URL win over ``username``/``password``.

    Raises:
        ValueError: No address, or one that cannot be parsed (the message says which).

    """
    items = broker_address.split(",") if isinstance(broker_address, str) else broker_address
    brokers = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        if "://" in item or _HOST_PORT.match(item):
            url = BrokerURL.parse(item)
            brokers.append(
                BrokerURL(
                    url.host,
                    url.port,
                    url.username or username,
                    url.password or password,
                    url.tls,
                )
            )
        else:
            brokers.append(BrokerURL(item, port, username, password, False))
    if not brokers:
        raise ValueError(f"no broker address in {broker_address!r}")
    return brokers


def make_client_id(prefix: str = "argentic-tools") -> str:
    """A client id unique per process and per call (pid plus random bits)."""
    return f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


class _ClosingSSLSocket(ssl.SSLSocket):
    """Closes itself when the handshake fails (paho would leave it open)."""

    def do_handshake(self, block: bool = False) -> None:
        try:
            super().do_handshake(block)
        except BaseException:
            self.close()
            raise


def build_tls_context(tls_params: dict[str, Any] | None, *, enabled: bool) -> ssl.SSLContext | None:
    """Build the TLS context from Argentic-style ``tls_params``.

    Recognised keys: ``ca_certs``, ``certfile``, ``keyfile``, ``insecure``
    (skip hostname and certificate checks) and ``ciphers``.
    """
    if not tls_params and not enabled:
        return None
    params = tls_params or {}
    context = ssl.create_default_context(cafile=params.get("ca_certs"))
    context.sslsocket_class = _ClosingSSLSocket
    if params.get("certfile"):
        context.load_cert_chain(params["certfile"], params.get("keyfile"))
    if params.get("ciphers"):
        context.set_ciphers(params["ciphers"])
    if params.get("insecure"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
