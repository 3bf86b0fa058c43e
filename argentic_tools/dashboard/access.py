"""Who may use the dashboard: loopback by default, a token when it is exposed.

The dashboard shows every call's arguments and results and calls any tool, so it
is a way into the fleet. By default it listens on loopback only, where a browser
on the same machine reaches it and nothing else does (other users of that machine
do). Any other address needs ``allow_remote`` and a token.

:class:`AccessGuard` wraps the application:

- with a token, every request needs it: ``Authorization: Bearer TOKEN``, the
  cookie the page gets when opened once as ``/?token=TOKEN``, or ``?token=TOKEN``
  itself (the event stream included); anything else gets 401;
- with a ``verifier`` (the MCP gateway's: an OAuth issuer's JWTs or API keys, see
  :mod:`argentic_tools.mcp.access.auth`), a bearer token it accepts is as good as the token;
- without a token, the ``Host`` header must name a loopback address or
  ``localhost``, so that a web page whose domain resolves to 127.0.0.1 (DNS
  rebinding) cannot read the dashboard from a browser on this machine (403);
- a request that changes something (``POST``) must send JSON and, when the browser
  names its ``Origin``, come from the dashboard's own origin: no other site can make
  a visitor's browser call a tool (415, 403).

Every answer carries headers that keep the page out of frames and its scripts to
its own files.
"""

import hmac
import ipaddress
import secrets
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_PARAMETER = "token"  # noqa: S105 - a parameter name
"""Query parameter that carries the token (``/?token=...``)."""

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        # data: for images and audio only: a result's content blocks, shown in place.
        b"default-src 'self'; img-src 'self' data:; media-src data:; object-src 'none'; "
        b"base-uri 'none'; "
        b"frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ``::1``)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_problem(host: str, allow_remote: bool) -> str | None:
    """Why the dashboard must not listen on ``host``, or None when it may."""
    if is_loopback(host) or allow_remote:
        return None
    return (
        f"{host} is not a loopback address: whoever reaches it would see every call's "
        "arguments and results and could call any tool. Add --allow-remote to accept "
        "that risk; a token then protects the dashboard (--token, or one is generated)"
    )


def new_token() -> str:
    """A random token for an exposed dashboard (about 190 bits)."""
    return secrets.token_urlsafe(24)


def cookie_name(port: int) -> str:
    """The token's cookie, one per port (cookies are shared by every port of a host)."""
    return f"argentic_dashboard_{port}"


class AccessGuard:
    """ASGI middleware enforcing the rules in the module's docstring.

    Args:
        app: The dashboard's application.
        token: The token every request must carry, or None for loopback without one.
        port: The port served, which names the token's cookie.

    """

    def __init__(self, app: ASGIApp, token: str | None, port: int, verifier: Any = None) -> None:
        self.app = app
        self.token = token
        self.cookie = cookie_name(port)
        self.verifier = verifier
        """Also accepts the bearer tokens it verifies (``verify_token(token)`` not None)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a refused request, or pass it on with the security headers."""
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # no websockets here
        send = _with_security_headers(send)
        refusal = self._refusal(scope, await self._verified(scope))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        given = connection.query_params.get(TOKEN_PARAMETER)
        opened = scope["method"] == "GET" and connection.url.path == "/"
        if self.token is not None and given is not None and opened:
            # Opened from the printed address: keep the token in a cookie, out of the
            # address bar, the history and the page's requests.
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _verified(self, scope: Scope) -> bool:
        """Whether the request's bearer token is one the verifier accepts."""
        if self.verifier is None:
            return False
        scheme, _, credentials = Headers(scope=scope).get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():
            return False
        return await self.verifier.verify_token(credentials.strip()) is not None

    def _refusal(self, scope: Scope, verified: bool = False) -> Response | None:
        connection = HTTPConnection(scope)
        headers = connection.headers
        if verified:
            pass  # a token the verifier accepts: no host check, no dashboard token needed
        elif self.token is None:
            if not is_loopback(_hostname(headers.get("host", ""))):
                return PlainTextResponse(
                    "This dashboard answers only to loopback host names.", status_code=403
                )
        elif not self._authorised(connection):
            return PlainTextResponse(
                "This dashboard needs its token: open the address it printed "
                "(/?token=...), or send 'Authorization: Bearer TOKEN'.",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="argentic-tools dashboard"'},
            )
        if scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            origin = headers.get("origin")
            if origin is not None and not _same_origin(origin, headers.get("host", "")):
                return PlainTextResponse("Cross-origin requests are refused.", status_code=403)
            if headers.get("content-type", "").split(";")[0].strip() != "application/json":
                return PlainTextResponse("Send JSON (application/json).", status_code=415)
        return None

    def _authorised(self, connection: HTTPConnection) -> bool:
        assert self.token is not None
        candidates = [
            connection.cookies.get(self.cookie),
            connection.query_params.get(TOKEN_PARAMETER),
        ]
        scheme, _, credentials = connection.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            candidates.append(credentials.strip())
        expected = self.token.encode()
        return any(
            candidate is not None and hmac.compare_digest(candidate.encode(), expected)
            for candidate in candidates
        )


def _hostname(host_header: str) -> str:
    """The host name of a ``Host`` header, without its port."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def _same_origin(origin: str, host_header: str) -> bool:
    return urlsplit(origin).netloc.lower() == host_header.lower()


def _with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = Headers(raw=message.get("headers", []))
            extra = [(k, v) for k, v in SECURITY_HEADERS if k.decode() not in headers]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
