"""Who calls the HTTP gateway: ``mcp serve --http --auth oauth|keys``.

The gateway is an OAuth 2.1 resource server as the MCP authorization specification
(2026-07-28) describes it, built on the ``mcp`` SDK's own pieces: a
:class:`~mcp.server.auth.provider.TokenVerifier` turns a bearer token into an
:class:`~mcp.server.auth.provider.AccessToken`, the SDK's bearer middleware refuses a
request without one (401 with ``WWW-Authenticate`` pointing at the RFC 9728
protected-resource metadata, which the SDK serves) or without the required scopes
(403 ``insufficient_scope``).

Two verifiers:

- :class:`JwtVerifier` (``--auth oauth --issuer URL --audience AUD``) checks a JWT's
  signature against the issuer's JWKS (found through its OpenID or OAuth metadata,
  cached; a key id it does not know fetches the JWKS again, at most once per
  ``refetch_seconds``, so a rotated key is picked up and a flood of made-up key ids
  costs one fetch), then its issuer, audience and expiry, with PyJWT.
- :class:`KeyFileVerifier` (``--auth keys FILE``) looks up API keys for machines in a
  TOML file that holds only their SHA-256 digests, read again whenever the file
  changes (checked on each request: a key removed from it is refused from the next
  request on).

The token itself stays here: the :class:`~mcp.server.auth.provider.AccessToken` carries
its digest, never the token, and nothing of it goes into a call.
"""

import hashlib
import hmac
import logging
import os
import secrets
import time
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import jwt
from mcp.server.auth.provider import AccessToken

logger = logging.getLogger("argentic_tools.mcp.access.auth")

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
"""Signature algorithms accepted (asymmetric only: the gateway never holds a shared secret)."""

REFETCH_SECONDS = 30.0
"""Least time between two JWKS fetches caused by an unknown key id."""

JWKS_MAX_AGE = 3600.0
"""How long a fetched JWKS is used before it is fetched again."""

FETCH_TIMEOUT = 10.0
"""Seconds a metadata or JWKS fetch may take."""

RECENT_SECONDS = 2.0
"""A key file changed this recently is read again on each request: a file system whose
clock ticks coarsely could show a second change of the same size with the same time."""

KEY_PREFIX = "atk_"
"""How API keys made by :func:`new_api_key` begin (recognisable in a leak scan)."""


def token_digest(token: str) -> str:
    """The SHA-256 of a token, hex: what the gateway keeps of it."""
    return hashlib.sha256(token.encode()).hexdigest()


def scopes_of(claims: Mapping[str, Any]) -> list[str]:
    """A JWT's scopes: ``scope`` (space-separated, RFC 9068) or ``scp`` (a list)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [str(item) for item in scp]
    if isinstance(scp, str):
        return scp.split()
    return []


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: OpenID Connect discovery, then RFC 8414."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
    ]


class JwtVerifier:
    """Validates bearer JWTs issued by ``issuer`` for ``audience``.

    Args:
        issuer: The authorization server's issuer identifier (its ``iss``).
        audience: What the token's ``aud`` must contain: the gateway's resource URL
            (RFC 8707) or the identifier the authorization server uses for it.
        jwks_uri: The JWKS address, when the issuer publishes no metadata.
        refetch_seconds: Least time between two fetches caused by unknown key ids.
        leeway: Seconds of clock skew allowed on ``exp``, ``nbf`` and ``iat``.

    """

    def __init__(
        self,
        issuer: str,
        audience: str,
        *,
        jwks_uri: str | None = None,
        refetch_seconds: float = REFETCH_SECONDS,
        leeway: float = 0.0,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.jwks_uri = jwks_uri
        self.refetch_seconds = refetch_seconds
        self.leeway = leeway
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = -float("inf")
        self._lock = anyio.Lock()
        self.fetches = 0
        """JWKS fetches so far (for tests and reports)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access, or None when it is not valid here (the reason is logged)."""
        try:
            header = jwt.get_unverified_header(token)
            key = await self._key(header.get("kid"))
            if key is None:
                logger.info("bearer token refused: no key %r in the JWKS", header.get("kid"))
                return None
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[key.algorithm_name] if key.algorithm_name else list(ALGORITHMS),
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWTError, httpx2.HTTPError, ValueError) as exc:
            logger.info("bearer token refused: %s", exc)
            return None
        return access_of(token, claims, self.audience)

    async def _key(self, kid: Any) -> jwt.PyJWK | None:
        now = time.monotonic()
        if now - self._fetched_at > JWKS_MAX_AGE:
            await self._fetch(self._fetched_at)
        key = self._find(kid)
        if key is None and time.monotonic() - self._fetched_at >= self.refetch_seconds:
            await self._fetch(self._fetched_at)  # a rotated key, maybe: once
            key = self._find(kid)
        return key

    def _find(self, kid: Any) -> jwt.PyJWK | None:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(str(kid)) if kid is not None else None

    async def _fetch(self, seen: float) -> None:
        async with self._lock:
            if self._fetched_at != seen:  # another request fetched meanwhile
                return
            self._fetched_at = time.monotonic()  # a failed fetch waits its turn too
            async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT) as client:
                if self.jwks_uri is None:
                    self.jwks_uri = await self._discover(client)
                response = await client.get(self.jwks_uri)
                response.raise_for_status()
                keys = jwt.PyJWKSet.from_dict(response.json()).keys
            self.fetches += 1
            self._keys = {str(key.key_id): key for key in keys if key.public_key_use != "enc"}

    async def _discover(self, client: httpx2.AsyncClient) -> str:
        for url in metadata_urls(self.issuer):
            response = await client.get(url)
            if response.status_code != 200:
                continue
            metadata = response.json()
            if metadata.get("issuer") != self.issuer:
                raise ValueError(f"{url} names issuer {metadata.get('issuer')!r}")
            jwks_uri = metadata.get("jwks_uri")
            if isinstance(jwks_uri, str):
                return jwks_uri
        raise ValueError(f"no metadata with a jwks_uri for issuer {self.issuer}")


def access_of(token: str, claims: Mapping[str, Any], resource: str) -> AccessToken:
    """The SDK's access record of a validated token: its digest, never the token."""
    client = claims.get("client_id") or claims.get("azp") or claims.get("sub")
    exp = claims.get("exp")
    return AccessToken(
        token=f"sha256:{token_digest(token)}",
        client_id=str(client),
        scopes=scopes_of(claims),
        expires_at=int(exp) if isinstance(exp, int | float) else None,
        resource=resource,
        subject=str(claims["sub"]) if "sub" in claims else None,
        claims=dict(claims),
    )


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One entry of a key file: a key's digest and whom it stands for."""

    sha256: str
    subject: str
    scopes: tuple[str, ...] = ()
    claims: Mapping[str, Any] | None = None


def load_keys(path: Path) -> dict[str, ApiKey]:
    """The keys of a key file, by digest.

    ``[[key]]`` tables with ``sha256`` (hex), ``subject``, and optional ``scopes`` (a
    list) and ``claims`` (a table, for views rules)::

        [[key]]
        sha256 = "9f86d0..."
        subject = "ci-bot"
        scopes = ["tools:call"]
    """
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    keys: dict[str, ApiKey] = {}
    for number, entry in enumerate(data.get("key", []), 1):
        digest, subject = entry.get("sha256"), entry.get("subject")
        if not isinstance(digest, str) or len(digest) != 64 or not isinstance(subject, str):
            raise ValueError(f"{path}: key {number} needs sha256 (64 hex digits) and subject")
        scopes = entry.get("scopes", [])
        claims = entry.get("claims")
        keys[digest.lower()] = ApiKey(digest.lower(), subject, tuple(scopes), claims)
    return keys


class KeyFileVerifier:
    """Accepts the API keys of a key file (see :func:`load_keys`), read again when it changes.

    Keys are random (:func:`new_api_key` makes 256-bit ones), so a fast digest is as
    safe as a slow password hash would be (nothing to guess from it) and costs
    microseconds per request; the file never holds a key itself.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int, int] | None = None
        self._keys: dict[str, ApiKey] = {}
        self._reload()

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
        except OSError:
            self._keys, self._stamp = {}, None  # no file: no key is valid
            return
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        recent = time.time() - stat.st_mtime < RECENT_SECONDS  # a change within one tick
        if stamp == self._stamp and not recent:
            return
        try:
            self._keys = load_keys(self.path)
        except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
            logger.error("key file %s not read (no key accepted until it is): %s", self.path, exc)
            self._keys = {}
        self._stamp = stamp

    async def verify_token(self, token: str) -> AccessToken | None:
        """The key's access, or None when the file does not hold it (now)."""
        self._reload()
        digest = token_digest(token)
        entry = self._keys.get(digest)
        if entry is None or not hmac.compare_digest(entry.sha256, digest):
            return None
        claims: dict[str, Any] = {"sub": entry.subject, **(entry.claims or {})}
        return AccessToken(
            token=f"sha256:{digest}",
            client_id=entry.subject,
            scopes=list(entry.scopes),
            subject=entry.subject,
            claims=claims,
        )


def new_api_key() -> str:
    """A new random API key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_entry(key: str, subject: str, scopes: Iterable[str] = ()) -> str:
    """The TOML lines that admit ``key`` as ``subject`` (append them to a key file)."""
    listed = ", ".join(f'"{scope}"' for scope in scopes)
    return f'[[key]]\nsha256 = "{token_digest(key)}"\nsubject = "{subject}"\nscopes = [{listed}]\n'


def bearer_challenge(
    error: str | None, description: str, metadata_url: str | None, scopes: Sequence[str]
) -> str:
    """A ``WWW-Authenticate`` value (RFC 6750 §3, RFC 9728 §5.1)."""
    parts = []
    if error is not None:
        parts.append(f'error="{error}"')
        parts.append(f'error_description="{description}"')
    if scopes:
        parts.append(f'scope="{" ".join(scopes)}"')
    if metadata_url is not None:
        parts.append(f'resource_metadata="{metadata_url}"')
    return "Bearer " + ", ".join(parts) if parts else "Bearer"
