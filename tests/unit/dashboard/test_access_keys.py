"""The dashboard's door accepts the MCP gateway's credentials (here, API keys)."""

from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the dashboard extra is installed by `make test`")
pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from argentic_tools.dashboard.access import AccessGuard
from argentic_tools.mcp.access.auth import KeyFileVerifier, key_entry, new_api_key


def page(request: object) -> PlainTextResponse:
    return PlainTextResponse("the fleet")


def test_an_exposed_dashboard_takes_a_key_the_gateway_would_take(tmp_path: Path) -> None:
    key, other = new_api_key(), new_api_key()
    keys = tmp_path / "keys.toml"
    keys.write_text(key_entry(key, "ops-bot", ["mcp"]), encoding="utf-8")
    app = Starlette(routes=[Route("/", page)])
    guard = AccessGuard(app, "dashboard-token", 8765, verifier=KeyFileVerifier(keys))
    client = TestClient(guard, base_url="http://tools.example.com")
    assert client.get("/", headers={"Authorization": f"Bearer {key}"}).text == "the fleet"
    assert client.get("/", headers={"Authorization": f"Bearer {other}"}).status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer dashboard-token"}).status_code == 200
    keys.write_text(key_entry(other, "ci-bot"), encoding="utf-8")  # the key is revoked
    assert client.get("/", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    assert client.get("/", headers={"Authorization": f"Bearer {other}"}).status_code == 200
