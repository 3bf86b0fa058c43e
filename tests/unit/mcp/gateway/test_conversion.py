"""What a request carries for the call, read from its metadata."""

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools.mcp.gateway.conversion import trace_id_of

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_the_trace_id_is_read_from_a_valid_traceparent_and_none_from_garbage() -> None:
    assert trace_id_of({"traceparent": TRACEPARENT}) == "0af7651916cd43dd8448eb211c80319c"
    assert trace_id_of({"traceparent": "garbage"}) is None
