"""ServerRequests without a call: what the bridge declares, its roots, and its refusals."""

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types

from argentic_tools.mcp.bridge.origins import ORIGIN, Origin
from argentic_tools.mcp.bridge.server_requests import ServerRequests, declared, root_from


def params_of(message: types.JSONRPCMessage) -> dict[str, Any]:
    assert isinstance(message, types.JSONRPCRequest)
    return dict(message.params or {})


SDK_CAPABILITIES = {
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}


def test_initialize_declares_form_elicitation_and_roots_that_never_change() -> None:
    message = types.JSONRPCRequest(
        jsonrpc="2.0",
        id=0,
        method="initialize",
        params={"protocolVersion": "2025-11-25", "capabilities": SDK_CAPABILITIES},
    )
    params = params_of(declared(message))
    assert params["capabilities"] == {
        "sampling": {},
        "elicitation": {"form": {}},
        "roots": {"listChanged": False},
    }
    assert message.params and message.params["capabilities"] == SDK_CAPABILITIES  # a copy


def test_a_modern_requests_capabilities_in_meta_are_declared_the_same() -> None:
    key = types.CLIENT_CAPABILITIES_META_KEY
    message = types.JSONRPCRequest(
        jsonrpc="2.0",
        id=3,
        method="tools/call",
        params={"name": "x", "_meta": {key: {"elicitation": {"form": {}, "url": {}}}}},
    )
    params = params_of(declared(message))
    assert params["_meta"][key] == {"elicitation": {"form": {}}}
    assert params["name"] == "x"


def test_other_messages_go_out_as_they_are() -> None:
    message = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list", params={})
    assert declared(message) is message
    notification = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
    assert declared(notification) is notification


def test_a_root_is_a_path_made_absolute_or_a_file_uri(tmp_path: Path) -> None:
    root = root_from(str(tmp_path))
    assert str(root.uri) == tmp_path.as_uri()
    assert root.name == tmp_path.name
    given = root_from("file:///srv/data/")
    assert str(given.uri) == "file:///srv/data/"
    assert given.name == "data"
    with pytest.raises(ValueError, match="a path or a file:// URI"):
        root_from("https://example.com/x")


@pytest.mark.anyio
async def test_a_question_that_belongs_to_no_call_is_refused_with_the_reason() -> None:
    requests = ServerRequests("server")
    params = types.ElicitRequestFormParams(
        message="name?", requested_schema={"type": "object", "properties": {}}
    )
    why = Origin(None, "2 requests of the bridge were in flight when it came")
    token = ORIGIN.set(why)
    try:
        answer = await requests.elicit(None, params)  # type: ignore[arg-type]
    finally:
        ORIGIN.reset(token)
    assert isinstance(answer, types.ErrorData)
    assert answer.code == types.INVALID_REQUEST
    assert "cannot tell which call this elicitation request belongs to" in answer.message
    assert "2 requests of the bridge were in flight" in answer.message


@pytest.mark.anyio
async def test_url_mode_elicitation_is_refused() -> None:
    params = types.ElicitRequestURLParams(
        message="open", url="https://example.com", elicitation_id="e1"
    )
    answer = await ServerRequests("server").elicit(None, params)  # type: ignore[arg-type]
    assert isinstance(answer, types.ErrorData)
    assert "URL-mode" in answer.message


@pytest.mark.anyio
async def test_roots_list_answers_the_bridges_roots(tmp_path: Path) -> None:
    requests = ServerRequests("server", [root_from(str(tmp_path))])
    answer = await requests.list_roots(None)  # type: ignore[arg-type]
    assert [str(root.uri) for root in answer.roots] == [tmp_path.as_uri()]
