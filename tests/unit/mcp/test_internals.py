"""The MCP SDK internals the gateway relies on are still there in the installed SDK."""

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools.mcp import _internals  # noqa: E402


def test_the_sdk_internals_the_gateway_uses_are_still_there() -> None:
    assert _internals.check_internals() == []
    assert mcp.__name__ == "mcp"
