"""The reference MCP server, ``@modelcontextprotocol/server-everything`` (npm), bridged onto
the bus: its image, annotated and resource blocks reach an MCP client through the gateway
as the server sent them.

The loop: the official MCP Python client -> ``argentic-tools mcp serve`` (stdio) ->
mosquitto -> ``McpBridge`` -> server-everything under Node. Each answer is compared with
the server's own answer to the same call, read directly.
"""

import base64
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from argentic_tools import Image, ToolManager, Topics
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.gateways import bridged, stdio_gateway
from tests.support.npm_servers import everything_command

pytestmark = pytest.mark.anyio

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get-tiny-image", {}),
    ("get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("get-annotated-message", {"messageType": "debug"}),
    ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
    ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
]


def comparable(blocks: list[types.ContentBlock]) -> list[types.ContentBlock]:
    """Blocks without the creation time the server writes into each resource it makes."""
    kept: list[types.ContentBlock] = []
    for block in blocks:
        if isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                resource = resource.model_copy(update={"text": untimed(resource.text)})
            else:
                text = untimed(base64.b64decode(resource.blob).decode())
                resource = resource.model_copy(update={"blob": text})
            block = block.model_copy(update={"resource": resource})
        kept.append(block)
    return kept


def untimed(text: str) -> str:
    """A resource's text up to its "created at <time>" (each answer makes it anew)."""
    return text.split(" created at ", 1)[0]


async def test_server_everythings_blocks_reach_an_mcp_client_through_the_bus_unchanged(
    mosquitto: Mosquitto, prefix: str
) -> None:
    command = everything_command()
    direct = StdioServerParameters(command=command[0], args=command[1:])
    with anyio.fail_after(60):
        async with Client(direct) as server:
            expected = [await server.call_tool(name, arguments) for name, arguments in CALLS]
    kinds = {block.type for result in expected for block in result.content}
    assert {"image", "text", "resource"} <= kinds  # the server still answers with these
    async with (
        bridged(mosquitto.url, prefix, command),
        Client(stdio_gateway(mosquitto.url, prefix)) as client,
    ):
        with anyio.fail_after(30):
            while "get-tiny-image" not in {t.name for t in (await client.list_tools()).tools}:
                await anyio.sleep(0.05)
        for (name, arguments), sent in zip(CALLS, expected, strict=True):
            with anyio.fail_after(30):
                got = await client.call_tool(name, arguments)
            assert not got.is_error, got
            assert comparable(got.content) == comparable(sent.content), name
            assert got.structured_content == sent.structured_content

        # On the bus itself, a caller gets the same image typed.
        topics = Topics.with_prefix(prefix)
        async with (
            messager_for(mosquitto.url, topics) as messager,
            manager_for(messager, topics) as manager,
        ):
            await check_on_the_bus(manager, expected[0])


async def check_on_the_bus(manager: ToolManager, sent: types.CallToolResult) -> None:
    await manager.wait_for_tool("get-tiny-image", timeout=20)
    result = await manager.execute_tool("get-tiny-image", {}, timeout=20)
    assert result.ok, result
    images = [block for block in result.content or [] if isinstance(block, Image)]
    (image,) = [block for block in sent.content if isinstance(block, types.ImageContent)]
    assert [(i.mime_type, i.wire()["data"]) for i in images] == [(image.mime_type, image.data)]
