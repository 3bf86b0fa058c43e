"""A call's result as each provider's model receives it."""

import base64

import pytest

from argentic_tools import (
    Audio,
    EmbeddedResource,
    Image,
    ResourceLink,
    TaskErrorMessage,
    TaskResultMessage,
    Text,
)
from argentic_tools._agent.fleet.model_output import model_output
from argentic_tools._protocol.content import ContentBlock, rendered

PNG = b"\x89PNG\r\n\x1a\n"
PNG64 = base64.b64encode(PNG).decode()


def result(value: object, content: list[ContentBlock] | None = None) -> TaskResultMessage:
    return TaskResultMessage(
        tool_id="t", tool_name="n", status="success", result=value, content=content
    )


BLOCKS: list[ContentBlock] = [
    Text("a chart"),
    Image(PNG),
    Image(b"<svg/>", mime_type="image/svg+xml"),
    Audio(b"OggS"),
    EmbeddedResource("u:1", text="notes"),
    ResourceLink("u:2", "two"),
]


def test_plain_results_are_text_in_every_provider_format() -> None:
    for fmt in ("prompt", "openai", "openai-responses", "anthropic"):
        assert model_output(result({"a": 1}), fmt) == '{"a": 1}'
        assert model_output(result("hi"), fmt) == "hi"
    error = TaskErrorMessage(tool_id="t", tool_name="n", error="Tool 'n' failed: boom")
    assert model_output(error, "openai") == "Tool 'n' failed: boom"
    assert model_output(error, "openai-responses") == "Tool 'n' failed: boom"
    assert model_output(error, "mcp") == {
        "content": [{"type": "text", "text": "Tool 'n' failed: boom"}],
        "isError": True,
    }


def test_openai_chat_completions_gets_one_string_with_no_image_and_no_base64() -> None:
    # A Chat Completions tool message takes text only: every block is its rendering.
    content = model_output(result(rendered(BLOCKS), BLOCKS), "openai")
    assert content == (
        "a chart\n\n[image: image/png, 8 bytes]\n\n[image: image/svg+xml, 6 bytes]"
        "\n\n[audio: audio/ogg, 4 bytes]\n\nnotes\n\n[resource link two: u:2]"
    )
    assert PNG64 not in content
    chart = result({"points": 3}, [Image(PNG)])
    assert model_output(chart, "openai") == '{"points": 3}\n\n[image: image/png, 8 bytes]'


def test_openai_responses_gets_images_as_input_images_and_the_rest_as_text() -> None:
    assert model_output(result(rendered(BLOCKS), BLOCKS), "openai-responses") == [
        {"type": "input_text", "text": "a chart"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}", "detail": "auto"},
        {"type": "input_text", "text": "[image: image/svg+xml, 6 bytes]"},  # not taken
        {"type": "input_text", "text": "[audio: audio/ogg, 4 bytes]"},
        {"type": "input_text", "text": "notes"},
        {"type": "input_text", "text": "[resource link two: u:2]"},
    ]


def test_anthropic_gets_the_image_types_it_takes_and_text_for_the_rest() -> None:
    parts = model_output(result(rendered(BLOCKS), BLOCKS), "anthropic")
    assert parts[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG64},
    }
    assert parts[2] == {"type": "text", "text": "[image: image/svg+xml, 6 bytes]"}
    assert [part["type"] for part in parts] == ["text", "image", "text", "text", "text", "text"]


def test_a_value_beside_blocks_comes_first_and_is_structured_content_for_mcp() -> None:
    chart = result({"points": 3}, [Image(PNG)])
    assert model_output(chart, "prompt") == '{"points": 3}'
    assert model_output(chart, "anthropic")[0] == {"type": "text", "text": '{"points": 3}'}
    assert model_output(chart, "mcp") == {
        "content": [{"type": "image", "data": PNG64, "mimeType": "image/png"}],
        "isError": False,
        "structuredContent": {"points": 3},
    }


def test_a_plain_value_among_blocks_is_not_sent_twice() -> None:
    blocks: list[ContentBlock] = [Text("rows"), Image(PNG), Text('{"rows": 3}')]
    mixed = result(["rows", "[image: image/png, 8 bytes]", {"rows": 3}], blocks)
    assert [part["type"] for part in model_output(mixed, "anthropic")] == ["text", "image", "text"]
    assert len(model_output(mixed, "openai-responses")) == 3
    assert (
        model_output(mixed, "openai") == "rows\n\n[image: image/png, 8 bytes]\n\n" + '{"rows": 3}'
    )


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        model_output(result(1, [Text("x")]), "gemini")
    with pytest.raises(ValueError, match="unknown format"):
        model_output(result(1), "gemini")
