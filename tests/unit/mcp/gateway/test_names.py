"""Tool names mapped onto MCP's alphabet and back."""

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools.mcp.gateway.names import McpNames, is_mcp_name


def test_names_map_onto_mcp_and_back_without_collisions() -> None:
    names = McpNames(["Email Sender", "Email_Sender", "a/b", "a b", "ok.name", "x" * 200])
    assert names.to_mcp["Email_Sender"] == "Email_Sender"
    assert names.to_mcp["ok.name"] == "ok.name"
    assert len(set(names.to_mcp.values())) == 6
    assert all(is_mcp_name(name) for name in names.to_mcp.values())
    for original, mapped in names.to_mcp.items():
        assert names.registry_name(mapped) == original
    # The same fleet gets the same names, whatever order it registered in.
    assert McpNames(reversed(list(names.to_mcp))).to_mcp == names.to_mcp


def test_long_registry_names_are_cut_to_64_characters_without_collisions() -> None:
    # Registry names reach 128 characters; MCP clients (and the conformance suite's
    # tools-name-format check) accept 64.
    long_a, long_b = "a" * 64 + "_first", "a" * 64 + "_second"
    names = McpNames([long_a, long_b, "b" * 128, "a" * 64])
    assert names.to_mcp["a" * 64] == "a" * 64
    assert names.to_mcp["b" * 128] == "b" * 64
    assert all(is_mcp_name(name) and len(name) <= 64 for name in names.to_mcp.values())
    assert len(set(names.to_mcp.values())) == 4
    assert names.registry_name(names.to_mcp[long_b]) == long_b
