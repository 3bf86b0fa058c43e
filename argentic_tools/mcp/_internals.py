"""Every reach into the MCP SDK's private attributes, in one place.

Two things need it, both because ``ServerRequestContext`` exposes no connection in
mcp 2.3: a handshake-era connection's server session, kept to send it
``notifications/tools/list_changed`` later, must be dropped when the connection
ends, and only the connection knows that; and the log level a client chose with
``logging/setLevel`` belongs to its connection. :func:`check_internals`, run by the
tests, names what an SDK upgrade removed. The CLI's HTTP client side takes the SDK's own
HTTP client factory (its timeouts), which lives in a private module.
"""

import inspect
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared import _httpx_utils

TESTED_VERSIONS = {"mcp": "2.3"}
"""Major.minor of the MCP SDK this module was tested against."""


def follow_session(ctx: ServerRequestContext[Any], sessions: set[ServerSession]) -> None:
    """Add the request's session to ``sessions`` for as long as its connection lasts.

    Stateless HTTP connections have no channel for messages the server starts, so
    they are not added.
    """
    connection = ctx.session._connection
    if not connection.has_standalone_channel:
        return
    sessions.add(ctx.session)
    connection.exit_stack.callback(sessions.discard, ctx.session)


def connection_of(ctx: ServerRequestContext[Any]) -> Connection:
    """The connection a request came on (one per stdio client or HTTP session)."""
    connection: Connection = ctx.session._connection
    return connection


def mcp_http_client(headers: dict[str, str]) -> Any:
    """The SDK's HTTP client for streamable HTTP (its timeouts), sending ``headers``."""
    return _httpx_utils.create_mcp_http_client(headers=headers)


def check_internals() -> list[str]:
    """Problems with the private attributes used here; empty when all are as expected."""
    problems = []
    if "self._connection" not in inspect.getsource(ServerSession.__init__):
        problems.append("mcp ServerSession: no longer keeps its connection in _connection")
    for name in ("has_standalone_channel", "exit_stack"):
        if name not in inspect.getsource(Connection):
            problems.append(f"mcp Connection.{name}: missing")
    if not callable(getattr(_httpx_utils, "create_mcp_http_client", None)):
        problems.append("mcp.shared._httpx_utils.create_mcp_http_client: missing")
    return problems
