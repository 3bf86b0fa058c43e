"""A gateway a team shares: who calls it, what each caller sees, how much it may call.

:class:`TeamAccess` joins :mod:`~argentic_tools.mcp.access.auth` (who),
:mod:`~argentic_tools.mcp.access.views` (what) and
:mod:`~argentic_tools.mcp.access.limits` (how much) for
:class:`~argentic_tools.mcp.gateway.McpGateway`:

- over HTTP, the streamable-HTTP app is protected with the ``mcp`` SDK's bearer
  middleware and protected-resource metadata (RFC 9728, served at
  ``/.well-known/oauth-protected-resource`` and at its path-inserted address); the
  endpoint's guard answers 401 (no, bad, expired or foreign token: ``WWW-Authenticate``
  with ``resource_metadata`` and the scopes), 403 ``insufficient_scope``, and 429
  with ``Retry-After`` for a ``tools/call`` over a rate limit;
- in a call, the caller's subject becomes ``CallContext.user_id`` (what tools see and
  what the manager records), the view filters the list and refuses a call outside
  it, the concurrency limits hold a place, and a span ``mcp.tools/call`` records the
  caller (``enduser.id``, ``enduser.scope``) as the parent of the call's spans.

Without authentication (stdio, or HTTP without ``--auth``) the caller is
:data:`LOCAL`: views and limits still apply to it.
"""

import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ListenHandler, SubscriptionBus, ToolsListChanged
from mcp.shared.auth import ProtectedResourceMetadata
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import _internals
from ..asgi import read_body, replay, send_response
from .auth import bearer_challenge
from .limits import RETRY_META, LimitExceededError, Limits, retry_after_header
from .views import Caller, Views

LOCAL = Caller(subject="local")
"""The caller of a gateway without authentication (stdio, or HTTP without ``--auth``)."""

ADMITTED = "argentic.admitted"
"""ASGI scope key: the HTTP guard already counted this request against the rate limits."""

SEEN = "argentic.seen"
"""ASGI scope key: the tool the HTTP guard checked against the caller's view, and whether
the caller sees it (so a call's view is checked once)."""

_TRACER = trace.get_tracer("argentic_tools.mcp")

ToolFacts = Callable[[str], tuple[tuple[str, ...], tuple[str, ...]] | None]
"""A tool's MCP name -> its names (fleet, MCP) and tags; None when it is not registered."""


@dataclass
class Protection:
    """How the HTTP endpoint is protected: the verifier, the resource and its scopes."""

    verifier: TokenVerifier
    resource: str
    """The gateway's resource URL (what the protected-resource metadata names)."""
    authorization_servers: Sequence[str]
    scopes: Sequence[str] = ()
    """Scopes every request needs."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A call let in: who calls, and the tool's names (fleet, MCP) and tags."""

    caller: Caller
    names: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass
class TeamAccess:
    """Authentication, views and limits for one gateway (each optional)."""

    protection: Protection | None = None
    views: Views | None = None
    limits: Limits = field(default_factory=Limits)
    facts: ToolFacts = field(default=lambda name: None)
    _sessions: dict[Any, tuple[Caller, frozenset[str]]] = field(default_factory=dict)

    # -- who -----------------------------------------------------------------------

    def caller(self, ctx: ServerRequestContext[Any]) -> Caller:
        """Who sent this request (:data:`LOCAL` without authentication)."""
        request = getattr(ctx, "request", None)
        user = getattr(request, "scope", {}).get("user") if request is not None else None
        if isinstance(user, AuthenticatedUser):
            return Caller.of(user.access_token)
        token = get_access_token()
        return LOCAL if token is None else Caller.of(token)

    def user_id(self, caller: Caller) -> str | None:
        """What goes into ``CallContext.user_id``: the subject, when there is a real one."""
        return None if caller is LOCAL else caller.subject

    # -- what ----------------------------------------------------------------------

    def sees(self, caller: Caller, mcp_name: str) -> bool:
        """Whether ``mcp_name`` is in the caller's view."""
        return self.views is None or self.in_view(caller, self.facts(mcp_name))

    def in_view(
        self, caller: Caller, facts: tuple[tuple[str, ...], tuple[str, ...]] | None
    ) -> bool:
        """Whether the tool of ``facts`` (None: not registered) is in the caller's view."""
        if self.views is None:
            return True
        if facts is None:
            return False
        names, tags = facts
        return self.views.allows(caller, names, tags)

    def visible(self, ctx: ServerRequestContext[Any], tools: list[types.Tool]) -> list[types.Tool]:
        """The tools of ``tools`` in the view of the request's caller."""
        if self.views is None:
            return tools
        caller = self.caller(ctx)
        return [tool for tool in tools if self.sees(caller, tool.name)]

    def view_key(self, ctx: ServerRequestContext[Any]) -> Any:
        """What the caller's view depends on (part of a listing's cache key)."""
        return None if self.views is None else self.caller(ctx).key

    def follow(self, ctx: ServerRequestContext[Any], listed: Sequence[str]) -> None:
        """Remember a handshake-era connection's caller and view, for list-changed."""
        if self.views is None:
            return
        caller = self.caller(ctx)
        self._sessions[ctx.session] = (caller, self._view_of(caller, listed))
        with contextlib.suppress(AttributeError):
            stack = _internals.connection_of(ctx).exit_stack
            stack.callback(self._sessions.pop, ctx.session, None)

    def _view_of(self, caller: Caller, listed: Sequence[str]) -> frozenset[str]:
        return frozenset(name for name in listed if self.sees(caller, name))

    def view_changed(self, session: Any, listed: Sequence[str]) -> bool:
        """Whether the session's view changed since it was last told (updates it)."""
        known = self._sessions.get(session)
        if known is None:
            return True
        caller, before = known
        now = self._view_of(caller, listed)
        self._sessions[session] = (caller, now)
        return now != before

    def listen_handler(self, bus: SubscriptionBus, listed: Callable[[], Sequence[str]]) -> Any:
        """The ``subscriptions/listen`` handler (2026-07-28).

        With views, a listener hears ``tools/list_changed`` only when its caller's view changed.
        """
        if self.views is None:
            return ListenHandler(bus)

        async def listen(
            ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
        ) -> types.SubscriptionsListenResult:
            caller = self.caller(ctx)
            seen = [self._view_of(caller, listed())]

            def changed() -> bool:
                now = self._view_of(caller, listed())
                if now == seen[0]:
                    return False
                seen[0] = now
                return True

            return await ListenHandler(_ViewBus(bus, changed))(ctx, params)

        return listen

    # -- how much ------------------------------------------------------------------

    def admit(
        self, ctx: ServerRequestContext[Any], mcp_name: str
    ) -> "Admission | types.CallToolResult":
        """Let a call in: its caller, the view checked once, the rate limits (else isError).

        A call outside the view raises an unknown tool's error. The HTTP guard may have
        checked the view and the rate limits already (:data:`SEEN`, :data:`ADMITTED`).
        """
        caller = self.caller(ctx)
        facts = self.facts(mcp_name)
        scope = _scope_of(ctx)
        verdict = scope.get(SEEN)
        if verdict is not None and verdict[0] == mcp_name:
            seen = verdict[1]
        else:
            seen = self.in_view(caller, facts)
        if not seen:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {mcp_name}")
        names, tags = facts or ((mcp_name,), ())
        admission = Admission(caller, names, tags)
        if not self.limits or scope.get(ADMITTED):
            return admission
        try:
            self.limits.admit(caller, names[0], names, tags)
        except LimitExceededError as exc:
            return refused(exc)
        return admission

    def hold(self, admission: "Admission") -> contextlib.ExitStack:
        """A place under the concurrency limits, and the call's span; raises LimitExceededError."""
        caller, names, tags = admission.caller, admission.names, admission.tags
        stack = contextlib.ExitStack()
        if self.limits:
            stack.enter_context(self.limits.slot(caller, names[0], names, tags))
        stack.enter_context(self._span(caller, names[0]))
        return stack

    @contextlib.contextmanager
    def _span(self, caller: Caller, tool: str) -> Iterator[None]:
        with _TRACER.start_as_current_span(
            "mcp.tools/call",
            kind=trace.SpanKind.SERVER,
            attributes={
                "gen_ai.tool.name": tool,
                "enduser.id": caller.subject,
                "enduser.scope": " ".join(sorted(caller.scopes)),
            },
        ):
            yield

    # -- HTTP ----------------------------------------------------------------------

    def app_options(self) -> dict[str, Any]:
        """Options for the SDK's ``streamable_http_app``: its bearer auth, and the metadata.

        The protected-resource metadata is served here rather than by the SDK, whose
        model adds a slash to an issuer without a path (RFC 8414 compares issuers as
        strings: ``http://idp`` is not ``http://idp/``).
        """
        if self.protection is None:
            return {}
        protection = self.protection
        servers = list(protection.authorization_servers)
        settings = AuthSettings(
            issuer_url=AnyHttpUrl(servers[0] if servers else protection.resource),
            resource_server_url=None,
            required_scopes=list(protection.scopes),
        )
        metadata = {
            "resource": protection.resource,
            "authorization_servers": list(protection.authorization_servers),
            "bearer_methods_supported": ["header"],
            "resource_name": "argentic-tools MCP gateway",
        }
        if protection.scopes:
            metadata["scopes_supported"] = list(protection.scopes)
        if servers:
            ProtectedResourceMetadata.model_validate(metadata)  # the shape RFC 9728 gives it

        async def serve_metadata(request: Request) -> Response:
            return JSONResponse(metadata, headers={"Cache-Control": "public, max-age=3600"})

        at = urlsplit(self.metadata_url() or "").path
        paths = dict.fromkeys([at, "/.well-known/oauth-protected-resource"]) if servers else {}
        routes = [Route(path, serve_metadata, methods=["GET"]) for path in paths]
        verifier = protection.verifier
        return {"auth": settings, "token_verifier": verifier, "custom_starlette_routes": routes}

    def guard(self, app: Any, path: str) -> None:
        """Put :class:`EndpointGuard` on the endpoint of the SDK's app (in place of its own)."""
        if self.protection is None and not self.limits:
            return
        for route in app.routes:
            if isinstance(route, Route) and route.path == path:
                inner = route.app
                if isinstance(inner, RequireAuthMiddleware):
                    inner = inner.app
                route.app = EndpointGuard(inner, self)
                return
        raise RuntimeError(f"the MCP app has no route {path}")  # pragma: no cover

    def metadata_url(self) -> str | None:
        """The protected-resource metadata's address (the 401 challenge points at it).

        None without an authorization server (API keys): there is nothing to discover.
        """
        if self.protection is None or not self.protection.authorization_servers:
            return None
        return str(build_resource_metadata_url(AnyHttpUrl(self.protection.resource)))


class _ViewBus:
    """A subscription bus that hides a list change from a listener whose view is the same."""

    def __init__(self, bus: SubscriptionBus, changed: Callable[[], bool]) -> None:
        self._bus = bus
        self._changed = changed

    async def publish(self, event: Any) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        def deliver(event: Any) -> None:
            if not isinstance(event, ToolsListChanged) or self._changed():
                listener(event)

        return self._bus.subscribe(deliver)


def refused(exc: LimitExceededError) -> types.CallToolResult:
    """The ``isError`` result of a call over a limit, with its retry hint."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=str(exc))],
        is_error=True,
        _meta={RETRY_META: round(exc.retry_after, 3)},
    )


def _scope_of(ctx: ServerRequestContext[Any]) -> Mapping[str, Any]:
    """The ASGI scope of an HTTP request (empty over stdio)."""
    request = getattr(ctx, "request", None)
    return getattr(request, "scope", {}) if request is not None else {}


class EndpointGuard:
    """The MCP endpoint's door: a token with the scopes, then the rate limits.

    401 for a request without a valid token (``WWW-Authenticate``: ``invalid_token``
    when one was sent, the scopes, ``resource_metadata``); 403 ``insufficient_scope``;
    429 with ``Retry-After`` for a ``tools/call`` over a rate limit.
    """

    def __init__(self, app: ASGIApp, access: TeamAccess) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request, or pass it on."""
        protection = self.access.protection
        user = scope.get("user")
        if protection is not None:
            scopes = list(protection.scopes)
            if not isinstance(user, AuthenticatedUser):
                sent = any(key.lower() == b"authorization" for key, _ in scope.get("headers", []))
                error = "invalid_token" if sent else None
                description = "The token is not valid here" if sent else "Authentication required"
                challenge = self._challenge(error, description, scopes)
                await _answer(send, 401, error or "unauthorized", description, challenge)
                return
            missing = [s for s in scopes if s not in user.scopes]
            if missing:
                description = f"Required scope: {' '.join(scopes)}"
                challenge = self._challenge("insufficient_scope", description, scopes)
                await _answer(send, 403, "insufficient_scope", description, challenge)
                return
        if self.access.limits and scope.get("method") == "POST":
            body = await read_body(receive)
            refusal, seen = self._rate_refusal(body, user)
            if refusal is not None:
                await refusal(send)
                return
            scope = (
                {**scope, ADMITTED: True} if seen is None else {**scope, ADMITTED: True, SEEN: seen}
            )
            receive = replay(body, receive)
        await self.app(scope, receive, send)

    def _challenge(self, error: str | None, description: str, scopes: Sequence[str]) -> str:
        return bearer_challenge(error, description, self.access.metadata_url(), scopes)

    def _rate_refusal(
        self, body: bytes, user: Any
    ) -> tuple[Callable[[Send], Awaitable[None]] | None, tuple[str, bool] | None]:
        """The 429 to answer, if any, and the view's verdict on a ``tools/call``.

        The verdict is the tool the call names and whether the caller sees it; None when
        the view was not checked.
        """
        try:
            message = json.loads(body)
        except ValueError:
            return None, None  # the transport answers a malformed body
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None, None
        params = message.get("params") or {}
        name = params.get("name") if isinstance(params, dict) else None
        if not isinstance(name, str) or params.get("requestState") is not None:
            return None, None  # a 2026-07-28 call's later round was counted with its first
        caller = Caller.of(user.access_token) if isinstance(user, AuthenticatedUser) else LOCAL
        facts = self.access.facts(name)
        if not self.access.in_view(caller, facts):
            return None, (name, False)  # answered as an unknown tool
        names, tags = facts or ((name,), ())
        try:
            self.access.limits.admit(caller, names[0], names, tags)
        except LimitExceededError as exc:
            return _too_many(message.get("id"), exc), None
        return None, (name, True)


def _too_many(request_id: Any, exc: LimitExceededError) -> Callable[[Send], Awaitable[None]]:
    async def answer(send: Send) -> None:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {
                    "code": -32000,
                    "message": str(exc),
                    "data": {"retryAfter": round(exc.retry_after, 3)},
                },
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"retry-after", retry_after_header(exc.retry_after).encode()),
        ]
        await send_response(send, 429, headers, body)

    return answer


async def _answer(send: Send, status: int, error: str, description: str, challenge: str) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    headers = [(b"content-type", b"application/json"), (b"www-authenticate", challenge.encode())]
    await send_response(send, status, headers, body)
