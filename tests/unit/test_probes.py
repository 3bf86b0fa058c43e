"""The probes' answers, on an ASGI app in memory (``tests/product/test_probes.py`` runs them
on real processes and a real broker)."""

from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from argentic_tools._probes import Probes, manager_not_ready

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def refuse_everything(scope: Scope, receive: Receive, send: Send) -> None:
    """The server's own app: here, one that asks everyone for a token."""
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def fake_manager(*, connected: bool, settled: bool) -> Any:
    return SimpleNamespace(
        messager=SimpleNamespace(is_connected=lambda: connected), settled=settled
    )


async def get(app: Probes, path: str) -> tuple[int, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        response = await client.get(path)
    return response.status_code, response.json() if response.content else None


@pytest.mark.parametrize(
    ("connected", "settled", "expected"),
    [
        (True, True, (200, {"status": "ready"})),
        (True, False, (503, {"status": "unavailable", "reason": "registry settling"})),
        (False, False, (503, {"status": "unavailable", "reason": "broker connection down"})),
    ],
)
async def test_readyz_answers_the_managers_state_ahead_of_the_apps_authentication(
    connected: bool, settled: bool, expected: tuple[int, Any]
) -> None:
    manager = fake_manager(connected=connected, settled=settled)
    app = Probes(refuse_everything, lambda: manager_not_ready(manager))
    assert await get(app, "/readyz") == expected
    assert await get(app, "/healthz") == (200, {"status": "ok"})
    assert await get(app, "/livez") == (200, {"status": "ok"})
    assert await get(app, "/api/state") == (401, None)  # everything else reaches the app
