"""What ``call --mcp`` prints of a tool's result, and the rows ``list --mcp`` shows."""

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types

from argentic_tools.mcp.bridge.client import result_value, tool_rows


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def test_text_blocks_are_joined_as_text() -> None:
    result = types.CallToolResult(content=[text("a"), text("b")])
    assert result_value(result) == (True, "a\nb")


def test_structured_content_wins_over_its_text_rendering() -> None:
    result = types.CallToolResult(content=[text('{"x": 1}')], structured_content={"x": 1})
    assert result_value(result) == (False, {"x": 1})


def test_content_that_is_not_all_text_is_every_block_as_json() -> None:
    image = types.ImageContent(type="image", data="AAAA", mime_type="image/png")
    (is_text, value) = result_value(types.CallToolResult(content=[text("see"), image]))
    assert not is_text
    assert value == [
        {"type": "text", "text": "see"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
    ]


def test_an_error_result_is_its_text_or_says_it_had_none() -> None:
    assert result_value(types.CallToolResult(content=[text("boom")], is_error=True)) == (
        True,
        "boom",
    )
    assert result_value(types.CallToolResult(content=[], is_error=True))[1].startswith(
        "the MCP server reported an error"
    )


def test_rows_are_sorted_and_carry_what_the_server_declares() -> None:
    schema = {"type": "object", "properties": {}}
    tools = [
        types.Tool(name="b", input_schema=schema),
        types.Tool(
            name="a",
            description="A.",
            input_schema=schema,
            title="Tool A",
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
    ]
    assert tool_rows(tools) == [
        {
            "name": "a",
            "description": "A.",
            "input_schema": schema,
            "title": "Tool A",
            "annotations": {"readOnlyHint": True},
        },
        {"name": "b", "description": "", "input_schema": schema},
    ]
