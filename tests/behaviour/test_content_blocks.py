"""Content blocks end to end on a real broker: a tool process returns them, a caller gets
them typed in ``result.content`` beside a plain ``result``, and an argentic 0.16 manager
gets the plain value."""

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from argentic_tools import (
    Annotations,
    Audio,
    EmbeddedResource,
    Image,
    ResourceLink,
    SqliteRecorder,
    TaskErrorMessage,
    TaskResultMessage,
    Text,
    ToolManager,
    ToolResult,
    ToolService,
    Topics,
)
from tests.support import media_tools
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.media_tools import NAMES, TINY_PNG, png, wav
from tests.support.observers import spy_on_results
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio


@pytest.fixture
async def media(mosquitto: Mosquitto, prefix: str, manager: ToolManager) -> AsyncIterator[None]:
    async with ToolProcess("tests.support.media_tools", mosquitto.url, prefix):
        for name in (*NAMES, "speaker"):
            await manager.wait_for_tool(name, timeout=20)
        yield


def success(result: ToolResult) -> TaskResultMessage:
    assert isinstance(result, TaskResultMessage), result
    return result


async def test_each_block_type_reaches_the_caller_typed_with_a_plain_result(
    manager: ToolManager, media: None
) -> None:
    image = success(await manager.execute_tool("tiny_image", {}))
    assert image.content == [
        Image(
            TINY_PNG,
            mime_type="image/png",
            annotations=Annotations(audience=["user"], priority=0.9),
        )
    ]
    assert image.result == f"[image: image/png, {len(TINY_PNG)} bytes]"

    audio = success(await manager.execute_tool("beep", {}))
    assert audio.content == [Audio(wav(), meta={"example.com/length": 8})]
    assert isinstance(audio.content[0], Audio) and audio.content[0].mime_type == "audio/wav"

    notes = success(await manager.execute_tool("notes", {}))
    assert notes.content == [
        EmbeddedResource("file:///notes.txt", text="remember the milk", mime_type="text/plain")
    ]
    assert notes.result == "remember the milk"

    blob = success(await manager.execute_tool("blob", {}))
    (resource,) = blob.content or []
    assert isinstance(resource, EmbeddedResource) and resource.blob == bytes(range(16))

    link = success(await manager.execute_tool("link", {}))
    assert link.content == [
        ResourceLink(
            "file:///report.pdf",
            "report.pdf",
            title="The report",
            mime_type="application/pdf",
            size=1234,
        )
    ]
    assert link.result == "[resource link report.pdf: file:///report.pdf]"


async def test_a_mixed_list_and_a_value_beside_blocks(manager: ToolManager, media: None) -> None:
    mixed = success(await manager.execute_tool("mixed", {}))
    assert [block.type for block in mixed.content or []] == [
        "text",
        "image",
        "resource_link",
        "text",
    ]
    assert mixed.content is not None
    assert mixed.content[0] == Text(
        "a chart and its source", annotations=Annotations(audience=["assistant"])
    )
    assert mixed.content[3] == Text('{"rows": 3}')
    assert mixed.result == [
        "a chart and its source",
        f"[image: image/png, {len(TINY_PNG)} bytes]",
        "[resource link chart.csv: file:///chart.csv]",
        {"rows": 3},
    ]

    chart = success(await manager.execute_tool("chart", {}))
    assert chart.result == {"width": 1, "height": 1}
    assert chart.content == [Image(TINY_PNG)]

    spoken = success(await manager.execute_tool("speaker", {}))
    assert spoken.content == [Text("silence:"), Audio(wav())]


async def test_blocks_travel_in_mcp_shapes_without_null_noise(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, media: None
) -> None:
    async with spy_on_results(mosquitto.url, topics) as results:
        success(await manager.execute_tool("tiny_image", {}))
        with anyio.fail_after(10):
            payload = await anext(results)
    message = json.loads(payload)
    assert message["content"] == [
        {
            "type": "image",
            "data": base64.b64encode(TINY_PNG).decode(),
            "mimeType": "image/png",
            "annotations": {"audience": ["user"], "priority": 0.9},
        }
    ]
    assert isinstance(message["result"], str)


async def test_generators_stream_blocks_and_end_with_them_as_content(
    manager: ToolManager, media: None
) -> None:
    chunks = []
    async with manager.stream_tool("frames", {"count": 3}) as stream:
        async for chunk in stream:
            chunks.append(chunk)
    expected = [
        Image(png(n), annotations=Annotations(audience=["user"], priority=0.9)) for n in (1, 2, 3)
    ]
    assert chunks == expected
    assert stream.result is not None
    streamed = success(stream.result)
    assert streamed.content == expected
    assert streamed.result == [f"[image: image/png, {len(png(n))} bytes]" for n in (1, 2, 3)]

    collected = success(await manager.execute_tool("frames", {"count": 2}))
    assert collected.content == expected[:2]

    pages = [Text(f"page {n}", annotations=Annotations(priority=n / 2)) for n in (0, 1)]
    async with manager.stream_tool("pages", {"count": 2}) as stream:
        assert [chunk async for chunk in stream] == pages
    assert stream.result is not None
    assert success(stream.result).result == ["page 0", "page 1"]
    assert success(await manager.execute_tool("pages", {"count": 2})).content == pages


async def test_an_image_over_the_payload_limit_ends_the_call_with_an_error_naming_tool_and_size(
    manager: ToolManager, media: None
) -> None:
    with anyio.fail_after(20):
        result = await manager.execute_tool("big_image", {"size": 2 * 1024 * 1024}, timeout=15)
    assert isinstance(result, TaskErrorMessage), result
    assert result.error_code == "execution_error"
    assert "Tool 'big_image' failed" in result.error
    assert "more than the limit of 1,048,576 bytes" in result.error
    assert "image (image/png)" in result.error
    assert result.details["size"] > 2 * 1024 * 1024


async def test_an_argentic_manager_gets_the_plain_value_of_blocks(
    mosquitto: Mosquitto, topics: Topics
) -> None:
    pytest.importorskip("argentic", reason="argentic 0.16 is installed by `make test`")
    from argentic.core.protocol.task import TaskStatus as ArgenticStatus

    from tests.support.argentic_peer import argentic_manager

    # The tools are served after the argentic manager started (it never asks tools to
    # register again), and once each has the id the argentic manager assigned it.
    async with (
        argentic_manager(mosquitto.port, topics) as their_manager,
        ToolService(mosquitto.url, [media_tools.notes, media_tools.tiny_image], topics=topics),
    ):
        with anyio.fail_after(20):
            while not {"notes", "tiny_image"} <= set(their_manager.tools_by_name):
                await anyio.sleep(0.01)
        notes = await their_manager.execute_tool("notes", {})
        assert notes.status == ArgenticStatus.SUCCESS
        assert notes.result == "remember the milk"
        image = await their_manager.execute_tool("tiny_image", {})
        assert image.status == ArgenticStatus.SUCCESS
        assert image.result == f"[image: image/png, {len(TINY_PNG)} bytes]"


async def test_the_call_history_keeps_the_blocks_within_its_cap(
    mosquitto: Mosquitto, prefix: str, topics: Topics, tmp_path: Path
) -> None:
    path = tmp_path / "calls.db"
    async with (
        ToolProcess("tests.support.media_tools", mosquitto.url, prefix),
        SqliteRecorder(path, max_argument_bytes=1024) as recorder,
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("big_image", timeout=20)
        await manager.wait_for_tool("mixed", timeout=20)
        success(await manager.execute_tool("mixed", {}))
        success(await manager.execute_tool("big_image", {"size": 100_000}))
        await manager.flush_observations()
        await recorder.flush()
    rows = {row.tool_name: row for row in SqliteRecorder(path).query()}
    mixed = rows["mixed"].content or []
    assert [block["type"] for block in mixed] == ["text", "image", "resource_link", "text"]
    assert mixed[1]["data"] == base64.b64encode(TINY_PNG).decode()  # small: kept whole
    (big,) = rows["big_image"].content or []
    assert big == {
        "type": "image",
        "mimeType": "image/png",
        "__truncated__": True,
        "bytes": 100_000,
    }
