"""The health and readiness probes of ``mcp serve --http`` and ``dashboard``, on real processes.

Each test runs its own mosquitto, since it stops it: ``/healthz`` stays 200 while the
process runs, ``/readyz`` turns 503 with its reason once the broker is gone. Both are
answered without the token the rest of the server asks for.
"""

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools.mcp.access.auth import key_entry, new_api_key
from tests.product.test_dashboard import printed_port
from tests.support.brokers import Mosquitto, free_port, running_mosquitto
from tests.support.cli import TIMEOUT, cli_process, connection
from tests.support.gateways import http_gateway

pytestmark = pytest.mark.anyio

POLL_SECONDS = 0.05
"""Pause between two probes while waiting for a state (as an orchestrator polls them)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def broker() -> AsyncIterator[Mosquitto]:
    with running_mosquitto() as mosquitto:
        yield mosquitto


@pytest.fixture
def prefix() -> str:
    return f"p{uuid.uuid4().hex[:10]}"


async def probe(base: str, path: str) -> tuple[int, dict[str, str]]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        response = await client.get(base + path)
    assert response.headers["content-type"] == "application/json"
    return response.status_code, response.json()


async def until_status(base: str, path: str, status: int) -> dict[str, str]:
    """Probe ``path`` until it answers ``status`` (bounded); its body."""
    with anyio.fail_after(TIMEOUT):
        while True:
            code, body = await probe(base, path)
            if code == status:
                return body
            await anyio.sleep(POLL_SECONDS)


async def stop_broker_and_check_probes(broker: Mosquitto, base: str) -> None:
    await anyio.to_thread.run_sync(broker.stop)
    body = await until_status(base, "/readyz", 503)
    assert body == {"status": "unavailable", "reason": "broker connection down"}
    for path in ("/healthz", "/livez"):
        assert await probe(base, path) == (200, {"status": "ok"})


async def check_ready(base: str) -> None:
    assert await until_status(base, "/readyz", 200) == {"status": "ready"}
    for path in ("/healthz", "/livez"):
        assert await probe(base, path) == (200, {"status": "ok"})


async def test_a_gateway_with_auth_keys_answers_probes_without_a_key_and_unready_without_broker(
    broker: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(key_entry(new_api_key(), "ops"), encoding="utf-8")
    port = free_port()
    options = ("--http", f"127.0.0.1:{port}", "--auth", "keys", str(keys))
    async with http_gateway(broker.url, prefix, *options) as (url, _):
        base = url.removesuffix("/mcp")
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            refused = await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401  # the MCP endpoint itself still needs a key
        await check_ready(base)
        await stop_broker_and_check_probes(broker, base)
        await anyio.to_thread.run_sync(broker.start)  # ready again by itself, no restart
        await check_ready(base)


async def test_a_dashboard_with_a_token_answers_its_probes_without_it_and_unready_without_broker(
    broker: Mosquitto, prefix: str
) -> None:
    args = ("dashboard", "--http", "127.0.0.1:0", "--token", "s3cret")
    async with cli_process(*args, *connection(broker.url, prefix)) as process:
        base = f"http://127.0.0.1:{await printed_port(process)}"
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            assert (await client.get(base + "/api/state")).status_code == 401
        await check_ready(base)
        await stop_broker_and_check_probes(broker, base)


async def test_a_probe_answers_only_get_and_head(broker: Mosquitto, prefix: str) -> None:
    async with http_gateway(broker.url, prefix) as (url, _):
        base = url.removesuffix("/mcp")
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            head = await client.head(base + "/healthz")
            posted = await client.post(base + "/readyz")
        assert head.status_code == 200 and head.content == b""
        assert posted.status_code == 405 and posted.headers["allow"] == "GET, HEAD"
        assert json.loads(posted.content) == {"status": "method not allowed"}
