"""The stopping gateway's door: which requests start a call, and what the refused get."""

import json
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools.mcp.gateway.stopping import StopGuard, refused_call

pytestmark = pytest.mark.anyio


def call(request_id: int, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_a_tools_call_is_refused_with_a_json_rpc_error_of_its_id() -> None:
    error = refused_call(json.dumps(call(3, name="echo")).encode())
    assert error is not None
    assert error["id"] == 3
    assert "stopping" in error["error"]["message"]


def test_requests_that_start_no_call_go_through() -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    continued = call(2, name="echo", requestState="sealed")  # a 2026-07-28 call in flight
    for body in (listing, continued, {"jsonrpc": "2.0", "method": "notifications/initialized"}):
        assert refused_call(json.dumps(body).encode()) is None
    assert refused_call(b"not json") is None


def test_a_batch_with_a_new_call_is_refused() -> None:
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, call(2, name="echo")]
    assert refused_call(json.dumps(batch).encode()) is not None


async def run_guard(stopping: bool, body: dict[str, Any]) -> tuple[list[Any], list[bytes]]:
    """One POST through the guard: what was sent back, and the body the app received."""
    received: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        received.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})

    sent: list[Any] = []
    chunks = [json.dumps(body).encode()[:5], json.dumps(body).encode()[5:]]

    async def receive() -> dict[str, Any]:
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp"}
    await StopGuard(app, "/mcp", lambda: stopping)(scope, receive, send)
    return sent, received


async def test_the_guard_answers_a_new_call_with_503_and_retry_after_once_stopping() -> None:
    sent, received = await run_guard(True, call(4, name="echo"))
    assert not received
    assert sent[0]["status"] == 503
    assert (b"retry-after", b"1") in sent[0]["headers"]
    assert json.loads(sent[1]["body"])["id"] == 4


async def test_the_guard_hands_other_requests_their_whole_body_while_stopping() -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    sent, received = await run_guard(True, listing)
    assert json.loads(received[0]) == listing
    assert sent[0]["status"] == 200


async def test_the_guard_passes_everything_on_before_the_stop() -> None:
    sent, received = await run_guard(False, call(4, name="echo"))
    assert received and sent[0]["status"] == 200
