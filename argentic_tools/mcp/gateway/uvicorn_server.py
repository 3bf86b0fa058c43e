"""The gateway's uvicorn server: signals left to its owner, and the port it bound."""

import contextlib
from collections.abc import Iterator
from typing import Any


def uvicorn_server(config: Any) -> Any:
    """A uvicorn server that leaves SIGINT and SIGTERM to whoever runs the gateway.

    uvicorn's own handlers would stop it at once and raise the signal again once it
    stopped: the command line, which also hears the first one, took that second signal
    for an impatient user and cancelled everything, cutting short the graceful stop
    (``stop``) that lets calls finish and leaves MCP tasks to a restarted gateway.
    """
    import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return _Server(config)


def bound_port(server: Any, default: int) -> int:
    """The port a started uvicorn server listens on (``default`` when it cannot tell)."""
    with contextlib.suppress(Exception):
        for listener in server.servers:
            for sock in listener.sockets:
                return int(sock.getsockname()[1])
    return default
