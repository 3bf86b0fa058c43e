"""An MCP server that writes down what reaches it: ``python -m tests.support.spy_mcp_server FILE``.

Its one tool, ``peek``, appends a JSON line to FILE with the server's environment and
the whole request it got (arguments and ``_meta``), so a test can check what a bridge
passed on from the gateway's caller.
"""

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server


def server_for(record: str) -> Server[Any]:
    tool = types.Tool(
        name="peek",
        description="Write down what reached this server.",
        input_schema={"type": "object", "properties": {"note": {"type": "string"}}},
    )

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        seen = {
            "environ": dict(os.environ),
            "request": params.model_dump(mode="json", by_alias=True),
            "meta": dict(ctx.meta or {}),
        }
        async with await anyio.open_file(record, "a", encoding="utf-8") as file:
            await file.write(json.dumps(seen) + "\n")
        return types.CallToolResult(content=[types.TextContent(type="text", text="peeked")])

    return Server("spy", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(record: str) -> None:
    server = server_for(record)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1])
