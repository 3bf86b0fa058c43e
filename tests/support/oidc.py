"""A real OpenID provider for the tests: oidc-provider (npm), issuing client-credentials JWTs.

:func:`oidc_provider` installs ``oidc-provider`` (pinned) under ``.cache/npm`` through
``scripts/ensure-npm.sh`` on first use, starts ``tests/support/oidc_provider.mjs`` on a
free loopback port and yields its issuer URL; :func:`client_token` asks it for a token.
"""

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.support.brokers import child_env, free_port
from tests.support.npm_servers import _ensure
from tests.support.processes import ROOT

OIDC_PROVIDER = "oidc-provider@9.13.3"
"""The OpenID provider, at the version the tests were written against."""

SCRIPT = ROOT / "tests" / "support" / "oidc_provider.mjs"


@dataclass(frozen=True)
class OidcClient:
    """A client registered at the provider (client-credentials grant)."""

    id: str
    secret: str
    scope: str
    ttl: int = 300
    """Seconds its access tokens live."""


@contextlib.asynccontextmanager
async def oidc_provider(
    resource: str,
    scopes: str,
    clients: Sequence[OidcClient],
    *,
    port: int | None = None,
    jwks: dict[str, Any] | None = None,
) -> AsyncIterator[str]:
    """oidc-provider on 127.0.0.1 issuing JWTs for ``resource``; yields the issuer URL.

    ``jwks``: its signing keys (private JWKs); its development keys when None.
    """
    prefix = Path(_ensure("package", OIDC_PROVIDER))
    node = _ensure("node")  # Node 22: oidc-provider's supported runtime
    port = port or free_port()
    config: dict[str, Any] = {
        "resource": resource,
        "scopes": scopes,
        "clients": [
            {"id": c.id, "secret": c.secret, "scope": c.scope, "ttl": c.ttl} for c in clients
        ],
    }
    if jwks is not None:
        config["jwks"] = jwks
    process = await anyio.open_process(
        [node, str(SCRIPT), str(prefix), str(port), json.dumps(config)], cwd=ROOT, env=child_env()
    )
    try:
        assert process.stdout is not None
        text = b""
        with anyio.fail_after(30):
            while b"listening " not in text:
                text += await process.stdout.receive()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()


async def client_token(
    issuer: str, client: OidcClient, scope: str | None = None, resource: str | None = None
) -> str:
    """An access token for ``client`` (client credentials), for ``resource`` when given."""
    form = {"grant_type": "client_credentials", "scope": client.scope if scope is None else scope}
    if resource is not None:
        form["resource"] = resource
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(f"{issuer}/token", data=form, auth=(client.id, client.secret))
    if response.status_code != 200:
        raise RuntimeError(f"{issuer}/token answered {response.status_code}: {response.text}")
    token: str = response.json()["access_token"]
    return token
