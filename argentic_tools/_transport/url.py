"""Broker addresses and TLS: ``mqtt://[user:pass@]host[:port]`` and ``mqtts://``."""

import os
import ssl
import uuid
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
