"""An MCP server for the bridge tests: ``python -m tests.support.mcp_server [options]``.

Built on the official MCP SDK's low-level ``Server`` over stdio, so a test controls
exactly what its tool list declares. It offers two good tools, ``shout`` and ``add``
(unless ``--no-good``), and on request bad ones next to them:

``--collide NAME``
    a tool ``NAME`` whose argument schema differs from any real one (``{"other":
    integer}``), to collide with a fleet tool of that name;
``--huge``
    a tool ``huge`` with an input schema of about 1 MB;
``--fillers N``
    ``N`` more tools ``filler_0`` ... (each answers with its own name).

``--starts FILE`` appends one line to FILE each time the server starts, so a test
can count the starts of a server its bridge restarts.
"""

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

HUGE_SCHEMA_BYTES = 1024 * 1024
"""About how large the ``huge`` tool's input schema is, serialised."""


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _huge_schema() -> dict[str, Any]:
    # Many documented properties: large the way a generated schema is, not one long string.
    description = "x" * 1000
    count = HUGE_SCHEMA_BYTES // (len(description) + 40)
    properties = {
        f"field_{n}": {"type": "string", "description": description} for n in range(count)
    }
    return _object(properties, [])


def tools_from(args: argparse.Namespace) -> list[types.Tool]:
    """The tool list the server declares for its command line."""
    tools = (
        []
        if args.no_good
        else [
            types.Tool(
                name="shout",
                description="Return the text in capitals.",
                input_schema=_object({"text": {"type": "string"}}, ["text"]),
            ),
            types.Tool(
                name="add",
                description="Add two integers.",
                input_schema=_object(
                    {"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]
                ),
            ),
        ]
    )
    if args.collide:
        tools.append(
            types.Tool(
                name=args.collide,
                description="Shares its name with another tool, not its arguments.",
                input_schema=_object({"other": {"type": "integer"}}, ["other"]),
            )
        )
    if args.huge:
        tools.append(
            types.Tool(name="huge", description="Its schema is ~1 MB.", input_schema=_huge_schema())
        )
    tools.extend(
        types.Tool(
            name=f"filler_{n}",
            description="Answers with its own name.",
            input_schema=_object({}, []),
        )
        for n in range(args.fillers)
    )
    return tools


def server_for(tools: list[types.Tool]) -> Server[Any]:
    """A low-level MCP server declaring ``tools``."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "shout":
            text = str(arguments["text"]).upper()
        elif params.name == "add":
            text = str(int(arguments["a"]) + int(arguments["b"]))
        else:
            text = params.name
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("bridge-test-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(args: argparse.Namespace) -> None:
    server = server_for(tools_from(args))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.support.mcp_server")
    parser.add_argument("--collide", default=None, metavar="NAME")
    parser.add_argument("--huge", action="store_true")
    parser.add_argument("--no-good", action="store_true", help="leave out shout and add")
    parser.add_argument("--fillers", type=int, default=0, metavar="N")
    parser.add_argument("--starts", default=None, metavar="FILE")
    args = parser.parse_args()
    if args.starts:
        with open(args.starts, "a", encoding="utf-8") as starts:
            starts.write("started\n")
    anyio.run(serve, args)


if __name__ == "__main__":
    main()
