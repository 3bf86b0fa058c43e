"""A stopping gateway's door: new calls are refused with 503, the rest goes on.

After SIGTERM the gateway lets the calls in flight finish (see
:meth:`~argentic_tools.mcp.gateway.McpGateway.serve_http`); a request that would
start another one gets ``503 Service Unavailable`` with ``Retry-After``, so a load
balancer or a client's retry goes to another gateway. Everything else still reaches
the MCP app: the calls in flight need their streams, a 2026-07-28 call continues with
``requestState`` and a client checks a result against ``tools/list``.
"""

import json
from collections.abc import Callable
from typing import Any

from ..asgi import read_body, replay, send_response

RETRY_AFTER_SECONDS = 1
"""What a refused client is told to wait before trying again (``Retry-After``)."""

STOPPING_CODE = -32000
"""The JSON-RPC error code of a refused request (implementation-defined server error)."""

STOPPING_MESSAGE = "the gateway is stopping: call again (another gateway will answer)"


def refused_call(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error answering ``body`` when it would start a call, else None.

    A ``tools/call`` without ``requestState`` starts a call; one with it continues a
    call already in flight. A batch is refused when any of its requests starts one.
    """
    try:
        message = json.loads(body)
    except ValueError:
        return None  # not ours to judge: the MCP app answers it
    requests = message if isinstance(message, list) else [message]
    for request in requests:
        if not isinstance(request, dict) or request.get("method") != "tools/call":
            continue
        params = request.get("params")
        if isinstance(params, dict) and params.get("requestState") is not None:
            continue
        error = {"code": STOPPING_CODE, "message": STOPPING_MESSAGE}
        return {"jsonrpc": "2.0", "id": request.get("id"), "error": error}
    return None


class StopGuard:
    """ASGI middleware refusing new calls on ``path`` once ``stopping()`` is true.

    Until then it only passes requests on; after, it reads a POST's body to decide,
    and hands the body on unchanged when the request may go through.
    """

    def __init__(self, app: Any, path: str, stopping: Callable[[], bool]) -> None:
        self.app = app
        self.path = path
        self.stopping = stopping

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI connection: pass it on, or refuse a new call while stopping."""
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"].rstrip("/") != self.path.rstrip("/")
            or not self.stopping()
        ):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        error = refused_call(body)
        if error is not None:
            content = json.dumps(error).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
            ]
            await send_response(send, 503, headers, content)
            return
        await self.app(scope, replay(body, receive), send)
