"""WireOrder: a stdio message belongs to a call only when that call's request is the one
outstanding."""

import contextvars

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types

from argentic_tools._tools.call.context import ToolContext
from argentic_tools.mcp.bridge.origins import (
    CANCELLED_GRACE_SECONDS,
    ORIGIN,
    Origin,
    WireOrder,
    context_with,
)

ELICIT = types.JSONRPCRequest(jsonrpc="2.0", id=0, method="elicitation/create", params={})
LOG = types.JSONRPCNotification(
    jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": "x"}
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def call(name: str) -> ToolContext:
    return ToolContext(task_id=f"task-{name}", tool_id="tool", tool_name=name)


def sent_by(order: WireOrder, request_id: int, method: str, origin: Origin | None) -> None:
    sender = context_with(origin) if origin is not None else contextvars.Context()
    message = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params={})
    order.sent(message, sender)


def answered(order: WireOrder, request_id: int) -> None:
    order.received(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))


def test_a_message_while_one_call_is_outstanding_belongs_to_that_call() -> None:
    order = WireOrder()
    a = call("a")
    sent_by(order, 1, "tools/call", Origin(a))
    assert order.received(ELICIT).call is a
    assert order.received(LOG).call is a


def test_a_message_while_two_calls_are_outstanding_belongs_to_none() -> None:
    order = WireOrder()
    sent_by(order, 1, "tools/call", Origin(call("a")))
    sent_by(order, 2, "tools/call", Origin(call("b")))
    origin = order.received(ELICIT)
    assert origin.call is None
    assert "2 requests of the bridge were in flight" in origin.why


def test_an_answered_call_no_longer_counts() -> None:
    order = WireOrder()
    b = call("b")
    sent_by(order, 1, "tools/call", Origin(call("a")))
    sent_by(order, 2, "tools/call", Origin(b))
    answered(order, 1)
    assert order.received(ELICIT).call is b
    answered(order, 2)
    origin = order.received(LOG)
    assert origin.call is None
    assert "no call was in flight" in origin.why


def test_the_bridges_own_request_makes_a_message_belong_to_none() -> None:
    order = WireOrder()
    sent_by(order, 1, "tools/list", None)
    assert "request of the bridge's own" in order.received(ELICIT).why
    sent_by(order, 2, "tools/call", Origin(call("a")))
    assert order.received(ELICIT).call is None  # the listing may be what asks


def test_a_cancelled_call_counts_for_its_grace_then_stops() -> None:
    clock = Clock()
    order = WireOrder(clock)
    b = call("b")
    sent_by(order, 1, "tools/call", Origin(call("a")))
    order.sent(
        types.JSONRPCNotification(
            jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 1}
        ),
        contextvars.Context(),
    )
    sent_by(order, 2, "tools/call", Origin(b))
    assert order.received(ELICIT).call is None  # the server may still be answering a
    clock.now += CANCELLED_GRACE_SECONDS
    assert order.received(ELICIT).call is b


def test_context_with_sets_the_origin_in_a_copy_only() -> None:
    a = Origin(call("a"))
    context = context_with(a)
    assert context.get(ORIGIN) is a
    assert ORIGIN.get().call is None


def test_the_bridges_subscription_is_not_counted_and_its_events_belong_to_none() -> None:
    order = WireOrder()
    a = call("a")
    sent_by(order, 1, "subscriptions/listen", None)
    sent_by(order, 2, "tools/call", Origin(a))
    assert order.received(LOG).call is a
    event = types.JSONRPCNotification(
        jsonrpc="2.0",
        method="notifications/tools/list_changed",
        params={"_meta": {"io.modelcontextprotocol/subscriptionId": 1}},
    )
    assert "subscription" in order.received(event).why
