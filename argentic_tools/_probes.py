"""Health and readiness probes for the HTTP servers (MCP gateway, dashboard): :class:`Probes`.

- ``GET /healthz`` (and its alias ``/livez``): 200 ``{"status": "ok"}`` while the
  process runs and its event loop answers;
- ``GET /readyz``: 200 ``{"status": "ready"}`` while the broker connection is up and
  the registry has settled, else 503 ``{"status": "unavailable", "reason": ...}``.

They are answered before anything else sees the request (authentication, the
dashboard's access rules, the MCP SDK's host check): a load balancer or an
orchestrator asks without a token. They reveal nothing but that state.

Plain ASGI, so both the gateway and the dashboard wrap their own app with it.
"""

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from ._agent.manager import ToolManager

HEALTH_PATHS = frozenset({"/healthz", "/livez"})
"""Answered 200 while the process runs."""

READY_PATH = "/readyz"
"""Answered 200 when ready, 503 with the reason otherwise."""

Readiness = Callable[[], str | None]
"""Why the server is not ready (a short sentence), or None when it is."""


class Probes:
    """Answers the probes ahead of ``app``; every other request goes to ``app`` unchanged.

    Args:
        app: The server's application (with its own authentication, if any).
        not_ready: Returns why the server is not ready, or None when it is.

    """

    def __init__(self, app: ASGIApp, not_ready: Readiness) -> None:
        self.app = app
        self.not_ready = not_ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a probe, or pass the request on."""
        path = scope.get("path") if scope["type"] == "http" else None
        if path not in HEALTH_PATHS and path != READY_PATH:
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _answer(send, scope, 405, {"status": "method not allowed"}, allow=True)
            return
        if path in HEALTH_PATHS:
            await _answer(send, scope, 200, {"status": "ok"})
            return
        reason = self.not_ready()
        if reason is None:
            await _answer(send, scope, 200, {"status": "ready"})
        else:
            await _answer(send, scope, 503, {"status": "unavailable", "reason": reason})


def manager_not_ready(manager: "ToolManager") -> str | None:
    """Why a server over ``manager`` is not ready (None: it is).

    Not ready while the manager's broker connection is down, or while its registry is
    still settling after a start or a reconnection.
    """
    if not manager.messager.is_connected():
        return "broker connection down"
    if not manager.settled:
        return "registry settling"
    return None


async def _answer(
    send: Send, scope: Scope, status: int, body: dict[str, str], *, allow: bool = False
) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if allow:
        headers.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else data})
