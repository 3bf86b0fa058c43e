"""An embedded MQTT broker for development, demos and tests.

The broker runs inside the current asyncio event loop and is built on
[amqtt](https://github.com/Yakifo/amqtt), a pure-Python MQTT 3.1.1 broker, so a
working setup needs nothing but ``pip install 'argentic-tools[broker]'``.

It is meant for a laptop, a notebook or a test suite. For production use
mosquitto (see ``mosquitto.conf`` and ``mosquitto-secure.conf`` in the repository):
it is much faster, it persists sessions across restarts and it enforces
per-user topic ACLs.

Example:
    ```python
    async with EmbeddedBroker() as broker:
        async with aiomqtt.Client(broker.host, broker.port) as client:
            ...
    ```

"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from anyio.abc import TaskStatus

from ._lifecycle import AsyncResource

__all__ = ["EmbeddedBroker"]

_MISSING_EXTRA = (
    "the embedded broker needs the 'broker' extra: pip install 'argentic-tools[broker]'"
)

# amqtt logs every connection and packet at INFO, and `transitions` (the state machine
# library amqtt uses for sessions) logs every state change at INFO. Left alone, they
# drown the application's own output.
_CHATTY_LOGGERS = ("amqtt", "transitions")

# When the port is picked by us, another process may grab it between the pick and the
# bind; a couple of fresh picks make that race practically impossible to lose.
_BIND_ATTEMPTS = 5


def _quiet_chatty_loggers() -> None:
    """Raise amqtt's loggers to WARNING unless the application configured them itself."""
    for name in _CHATTY_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


@contextlib.contextmanager
def _silenced(name: str) -> Iterator[None]:
    """Drop ``name``'s log records below CRITICAL for the duration of the block."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _pick_free_port(host: str) -> int:
    """Return a TCP port that nothing listens on right now on ``host``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _is_address_in_use(exc: BaseException) -> bool:
    """Tell whether a broker start failed because the port is taken."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno == errno.EADDRINUSE:
            return True
        cause = cause.__cause__
    return False


class EmbeddedBroker(AsyncResource):
    """An MQTT 3.1.1 broker running in the current event loop.

    Use it as an async context manager, or call `start` and `stop` yourself. The
    broker accepts TCP connections on ``host:port``; with the default port ``0`` it
    picks a free port when it starts, and `port` and `url` report the port chosen.

    What to expect from amqtt compared with mosquitto:

    * Retained messages and Last Will messages work. A will is published only when a
      client disappears without sending DISCONNECT, as MQTT requires.
    * Sessions live in memory only: retained messages and sessions are gone after
      `stop`.
    * With ``allow_anonymous=True`` every session counts as anonymous, and amqtt
      neither queues messages for, nor keeps the subscriptions of, anonymous clients
      that are offline, even when they connected with ``clean_session=False``.
    * With ``allow_anonymous=False`` a client must send a user name, but the
      password is not checked: do not rely on it for security. Such clients do get
      persistent sessions; QoS 1 and 2 messages queued while they were offline
      arrive with the retain flag set.
    * A message is delivered with the QoS of the subscription, even when it was
      published with a lower QoS.

    Args:
        host: Address to listen on. The default accepts connections from this
            machine only; use ``"0.0.0.0"`` to accept them from the network.
        port: TCP port to listen on, or ``0`` to pick a free port at start.
        allow_anonymous: Accept clients that send no user name.
        port_picker: With ``port=0``, how the port is picked: called with ``host``,
            it returns a port to listen on (for instance one from a range a firewall
            allows). When another process takes that port before the broker binds
            it, the picker is called again, up to five times in all. The default
            returns a port that nothing listens on at the time of the call.

    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_anonymous: bool = True,
        port_picker: Callable[[str], int] | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._allow_anonymous = allow_anonymous
        self._pick_port = port_picker or _pick_free_port
        self._broker: Any = None

    @property
    def host(self) -> str:
        """Address the broker listens on."""
        return self._host

    @property
    def port(self) -> int:
        """TCP port the broker listens on.

        When ``0`` was given, this is ``0`` until the first `start` and the picked port
        afterwards. A stopped broker keeps its port and listens on it again when
        restarted.
        """
        return self._port

    @property
    def url(self) -> str:
        """Broker URL for clients, such as ``"mqtt://127.0.0.1:1883"``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"mqtt://{host}:{self._port}"

    @property
    def running(self) -> bool:
        """Whether the broker is accepting connections."""
        return self._broker is not None

    def _config(self, port: int) -> dict[str, Any]:
        """Build the amqtt configuration for listening on ``port``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return {
            "listeners": {"default": {"type": "tcp", "bind": f"{host}:{port}"}},
            # Listing the plugins explicitly replaces amqtt's defaults, which add packet
            # and event loggers and the $SYS plugin (its loading emits a
            # DeprecationWarning about psutil, and it publishes statistics nobody reads).
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {
                    "allow_anonymous": self._allow_anonymous,
                },
            },
        }

    async def start(self) -> None:
        """Start listening for MQTT connections.

        Raises:
            RuntimeError: The broker is already running, or amqtt is not installed.
            OSError: The broker cannot listen on ``host:port``.

        """
        if self._broker is not None:
            raise RuntimeError("the embedded broker is already running")
        try:
            from amqtt.broker import Broker
            from amqtt.errors import BrokerError
        except ImportError as exc:
            raise RuntimeError(_MISSING_EXTRA) from exc
        _quiet_chatty_loggers()

        attempts_left = _BIND_ATTEMPTS
        while True:
            # A restarted broker listens on the port it had before, so clients can
            # reconnect to the same URL; only a port that was never chosen is picked.
            picked = self._port == 0
            port = self._port or self._pick_port(self._host)
            broker = Broker(self._config(port))
            try:
                # amqtt logs a failed start with its traceback; the error raised here
                # says the same in one line.
                with _silenced("amqtt.broker"):
                    await broker.start()
            except BrokerError as exc:
                attempts_left -= 1
                if picked and attempts_left > 0 and _is_address_in_use(exc):
                    continue
                raise OSError(
                    f"the embedded broker cannot listen on {self._host}:{port}: {exc}"
                ) from exc
            self._broker = broker
            self._port = port
            return

    async def stop(self) -> None:
        """Disconnect every client and stop listening. Does nothing when not running."""
        broker, self._broker = self._broker, None
        if broker is None:
            return
        # Shutting down must finish even when the caller is being cancelled, or the
        # listening socket and amqtt's background tasks would outlive the broker.
        with anyio.CancelScope(shield=True):
            await broker.shutdown()

    async def serve_forever(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the broker until the calling task is cancelled, then stop it.

        Starts the broker first when it is not running yet. With
        ``await task_group.start(broker.serve_forever)``, the caller resumes once
        the broker accepts connections.

        Args:
            task_status: Set by `anyio.abc.TaskGroup.start`; do not pass it yourself.

        """
        if self._broker is None:
            await self.start()
        try:
            task_status.started()
            await anyio.sleep_forever()
        finally:
            await self.stop()

    async def _open_resource(self) -> None:
        await self.start()

    async def _close_resource(self) -> None:
        await self.stop()
