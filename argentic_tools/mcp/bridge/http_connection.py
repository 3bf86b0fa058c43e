"""An MCP server reached over streamable HTTP, with the headers its owner asks for.

``list --mcp URL``, ``call --mcp URL`` and ``mcp bridge --url URL`` reach a server
that may want credentials (an ``--auth`` gateway wants ``Authorization: Bearer KEY``);
:class:`HttpConnection` sends the given headers with every request of the session, and
keeps the status of a refusal (401, 403), which the SDK's error does not carry.
"""

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from .._internals import mcp_http_client

REFUSALS = {401: "401 Unauthorized", 403: "403 Forbidden"}


class HttpConnection:
    """A streamable HTTP MCP server at ``url``; each request carries ``headers``."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.refused: str | None = None
        """The server's refusal of the last session's credentials (``401 Unauthorized``)."""

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        """The streams of a session with the server, for an MCP ``Client``.

        The HTTP client is the SDK's own (its timeouts: 300 s to read, as a response
        stream may stay open), made with the headers; the SDK leaves a client it is
        given open, so it is closed here.
        """
        self.refused = None
        async with mcp_http_client(self.headers) as http:
            http.event_hooks["response"].append(self._note)
            async with streamable_http_client(self.url, http_client=http) as streams:
                yield streams

    async def _note(self, response: httpx2.Response) -> None:
        self.refused = REFUSALS.get(response.status_code, self.refused)

    def refusal(self) -> str | None:
        """Why the server refused the session, in words, or None if it did not."""
        if self.refused is None:
            return None
        sent = any(name.lower() == "authorization" for name in self.headers)
        if sent:
            return f"it refused the credentials sent (HTTP {self.refused})"
        return f"it wants credentials (HTTP {self.refused}): give them as a bearer token or header"
