"""What a model receives for a real call's content blocks, per provider (``export_result``).

A real tool process (``tests.support.media_tools``) on a real mosquitto returns images,
audio, an SVG with a script in it and a value beside an image; the caller's
``export_result`` gives each provider's native shape for what it takes, and plain text
for what it does not, never base64 as text. ``openai`` pairs with the Chat Completions
tool export (a ``tool`` message takes text only), ``openai-responses`` with the
Responses API's (a ``function_call_output`` takes images).
"""

import base64
import json
from collections.abc import AsyncIterator

import pytest

from argentic_tools import TaskResultMessage, ToolManager
from tests.support.brokers import Mosquitto
from tests.support.media_tools import HTML, TINY_PNG, wav
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio

PNG64 = base64.b64encode(TINY_PNG).decode()


@pytest.fixture
async def media(mosquitto: Mosquitto, prefix: str, manager: ToolManager) -> AsyncIterator[None]:
    async with ToolProcess("tests.support.media_tools", mosquitto.url, prefix):
        await manager.wait_for_tool("html_note", timeout=20)
        yield


async def call(manager: ToolManager, name: str) -> TaskResultMessage:
    await manager.wait_for_tool(name, timeout=20)
    result = await manager.execute_tool(name, {})
    assert isinstance(result, TaskResultMessage), result
    return result


async def test_a_real_calls_blocks_reach_each_provider_in_its_own_shapes(
    manager: ToolManager, media: None
) -> None:
    mixed = await call(manager, "mixed")
    assert manager.export_result(mixed, "anthropic") == [
        {"type": "text", "text": "a chart and its source"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
        {"type": "text", "text": "[resource link chart.csv: file:///chart.csv]"},
        {"type": "text", "text": '{"rows": 3}'},  # the value among the blocks, once
    ]
    # Chat Completions: the tool message's content is one string, the image described.
    chat = manager.export_result(mixed, "openai")
    assert chat == (
        f"a chart and its source\n\n[image: image/png, {len(TINY_PNG):,} bytes]"
        '\n\n[resource link chart.csv: file:///chart.csv]\n\n{"rows": 3}'
    )
    assert PNG64 not in chat
    openai = manager.export_result(mixed, "openai-responses")
    assert openai[1] == {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{PNG64}",
        "detail": "auto",
    }
    assert [part["type"] for part in openai] == [
        "input_text",
        "input_image",
        "input_text",
        "input_text",
    ]
    mcp = manager.export_result(mixed, "mcp")
    assert mcp["content"][1] == {"type": "image", "data": PNG64, "mimeType": "image/png"}
    assert json.loads(manager.export_result(mixed, "prompt"))[3] == {"rows": 3}

    # Audio and an SVG (with a script in it) are taken by neither: text for the model.
    beep = await call(manager, "beep")
    for fmt in ("openai-responses", "anthropic"):
        [part] = manager.export_result(beep, fmt)
        assert part["text"] == f"[audio: audio/wav, {len(wav()):,} bytes]"
    assert manager.export_result(beep, "openai") == f"[audio: audio/wav, {len(wav()):,} bytes]"
    note = await call(manager, "html_note")
    anthropic = manager.export_result(note, "anthropic")
    assert anthropic[0] == {"type": "text", "text": HTML}
    assert anthropic[1]["type"] == "text" and anthropic[1]["text"].startswith(
        "[image: image/svg+xml"
    )
    assert manager.export_result(note, "openai-responses")[1]["type"] == "input_text"
    assert manager.export_result(note, "openai").startswith(HTML + "\n\n[image: image/svg+xml")

    # A value beside an image comes first, for the model; MCP gets it as structured content.
    chart = await call(manager, "chart")
    assert manager.export_result(chart, "anthropic")[0] == {
        "type": "text",
        "text": '{"width": 1, "height": 1}',
    }
    assert manager.export_result(chart, "mcp")["structuredContent"] == {"width": 1, "height": 1}
    assert manager.export_result(chart, "openai").startswith('{"width": 1, "height": 1}\n\n')
    assert manager.export_result(chart, "openai-responses")[0] == {
        "type": "input_text",
        "text": '{"width": 1, "height": 1}',
    }


async def test_each_openai_tool_export_pairs_with_its_own_result_shape(
    manager: ToolManager, media: None
) -> None:
    """The same tool in both OpenAI APIs' shapes: nested for Chat Completions, flat for
    the Responses API, whose result may carry the image the other cannot."""
    mixed = await call(manager, "mixed")
    [chat] = [e for e in manager.export_tools("openai") if e["function"]["name"] == "mixed"]
    [responses] = [e for e in manager.export_tools("openai-responses") if e["name"] == "mixed"]
    assert chat["function"]["strict"] is True  # no parameters: strict mode can express it
    assert responses == {"type": "function", **chat["function"]}
    assert isinstance(manager.export_result(mixed, "openai"), str)
    assert {part["type"] for part in manager.export_result(mixed, "openai-responses")} == {
        "input_text",
        "input_image",
    }
