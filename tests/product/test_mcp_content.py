"""Content blocks reach MCP clients as MCP blocks: a tool process returning each block
type, through ``argentic-tools mcp serve`` over stdio (both protocol eras) and HTTP, read
by the official MCP Python client; and the full loop MCP client -> gateway -> MQTT ->
bridge -> MCP server returns the blocks the server sent, unchanged."""

import base64
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402

from tests.support.brokers import Mosquitto  # noqa: E402
from tests.support.gateways import bridged, http_gateway, stdio_gateway  # noqa: E402
from tests.support.mcp_server import BLOCKS, MEASURED  # noqa: E402
from tests.support.media_tools import NAMES, TINY_PNG, wav  # noqa: E402
from tests.support.processes import ROOT, ToolProcess  # noqa: E402

pytestmark = pytest.mark.anyio

PNG64 = base64.b64encode(TINY_PNG).decode()
FOR_THE_USER = types.Annotations(audience=["user"], priority=0.9)


@pytest.fixture(scope="module")
def media_prefix() -> str:
    return f"c{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def media_tools(mosquitto: Mosquitto, media_prefix: str) -> Iterator[ToolProcess]:
    with ToolProcess("tests.support.media_tools", mosquitto.url, media_prefix) as process:
        process.wait_registered(mosquitto.url, media_prefix, NAMES)
        yield process


async def check_blocks(client: Client) -> None:
    """What every client, in every era and over every transport, must get."""
    await wait_listed(client, set(NAMES))  # the gateway's manager hears registrations
    image = await client.call_tool("tiny_image", {})
    assert not image.is_error, image
    assert image.content == [
        types.ImageContent(
            type="image", data=PNG64, mime_type="image/png", annotations=FOR_THE_USER
        )
    ]
    assert image.structured_content is None  # no output schema, no structured value

    audio = await client.call_tool("beep", {})
    assert audio.content == [
        types.AudioContent(
            type="audio",
            data=base64.b64encode(wav()).decode(),
            mime_type="audio/wav",
            meta={"example.com/length": 8},
        )
    ]

    notes = await client.call_tool("notes", {})
    assert notes.content == [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="remember the milk"
            ),
        )
    ]
    blob = await client.call_tool("blob", {})
    assert blob.content == [
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="file:///data.bin", blob=base64.b64encode(bytes(range(16))).decode()
            ),
        )
    ]
    link = await client.call_tool("link", {})
    assert link.content == [
        types.ResourceLink(
            type="resource_link",
            uri="file:///report.pdf",
            name="report.pdf",
            title="The report",
            mime_type="application/pdf",
            size=1234,
        )
    ]

    mixed = await client.call_tool("mixed", {})
    assert [block.type for block in mixed.content] == ["text", "image", "resource_link", "text"]
    first = mixed.content[0]
    assert isinstance(first, types.TextContent)
    assert first.annotations == types.Annotations(audience=["assistant"])
    assert mixed.structured_content is None

    chart = await client.call_tool("chart", {})
    assert chart.content == [types.ImageContent(type="image", data=PNG64, mime_type="image/png")]
    assert chart.structured_content == {"width": 1, "height": 1}

    big = await client.call_tool("big_image", {"size": 2 * 1024 * 1024})
    assert big.is_error
    text = big.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text.startswith("Tool 'big_image' failed: the result is ")
    assert "more than the limit of 1,048,576 bytes" in text.text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_stdio_gateway_returns_each_block_type_as_mcp_blocks(
    mosquitto: Mosquitto, media_prefix: str, media_tools: ToolProcess, mode: Any
) -> None:
    async with Client(stdio_gateway(mosquitto.url, media_prefix), mode=mode) as client:
        await check_blocks(client)


async def test_the_http_gateway_returns_each_block_type_as_mcp_blocks(
    mosquitto: Mosquitto, media_prefix: str, media_tools: ToolProcess
) -> None:
    async with (
        http_gateway(mosquitto.url, media_prefix) as (url, _),
        Client(url) as client,
    ):
        await check_blocks(client)


async def wait_listed(client: Client, names: set[str]) -> None:
    with anyio.fail_after(20):
        while not names <= {t.name for t in (await client.list_tools()).tools}:
            await anyio.sleep(0.05)


async def test_a_bridged_servers_blocks_reach_an_mcp_client_through_the_gateway_unchanged(
    mosquitto: Mosquitto, prefix: str
) -> None:
    server = [sys.executable, str(ROOT / "tests" / "support" / "mcp_server.py")]
    async with (
        bridged(mosquitto.url, prefix, [*server, "--blocks", "--no-good"]),
        Client(stdio_gateway(mosquitto.url, prefix)) as client,
    ):
        await wait_listed(client, set(BLOCKS))
        for name, blocks in BLOCKS.items():
            result = await client.call_tool(name, {})
            assert not result.is_error, result
            assert result.content == blocks, name
        measured = await client.call_tool("measured", {})
        assert measured.structured_content == MEASURED
