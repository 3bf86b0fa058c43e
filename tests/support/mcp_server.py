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
    ``N`` more tools ``filler_0`` ... (each answers with its own name);
``--failing``
    a tool ``fail`` whose every answer is an ``isError`` result saying ``it failed on purpose``.

``--starts FILE`` appends one line to FILE each time the server starts, so a test
can count the starts of a server its bridge restarts; ``--lists FILE`` appends one
line each time it is asked for its tools.

``--require-env NAME``
    exit at once with status 3, saying so on stderr, unless the variable ``NAME`` is
    set; ``shout`` then ends its answer with the variable's value;
``--grow``
    a tool ``grow`` that adds a tool ``grown`` to the list, silently;
``--list-changed``
    ``--grow``, declaring ``tools.listChanged`` and sending the notification;
``--chatty``
    a tool ``chatty`` that logs ``chatty says hi`` (info, logger ``chatty``) to the
    client during its call (``notifications/message``), then answers ``chatty``;
``--asking``
    a tool ``ask_name`` that asks the client for a name in a 2026-07-28 ``input_required``
    result (an ``elicitation/create`` form) and answers ``hello NAME`` once it has it
    (``declined`` otherwise);
``--blocks``
    tools whose results are content blocks other than plain text (:data:`BLOCKS`):
    ``picture`` (an annotated image with ``_meta`` and a text), ``resources`` (embedded
    text and blob resources and a resource link) and ``measured`` (an image beside
    structured content, with an output schema).
"""

import argparse
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

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


PNG64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG, base64."""

BLOCKS: dict[str, list[types.ContentBlock]] = {
    "picture": [
        types.ImageContent(
            type="image",
            data=PNG64,
            mime_type="image/png",
            annotations=types.Annotations(audience=["user"], priority=0.5),
            meta={"example.com/origin": "test"},
        ),
        types.TextContent(
            type="text",
            text="a grey pixel",
            annotations=types.Annotations(
                audience=["assistant"], last_modified="2026-01-01T00:00:00Z"
            ),
        ),
    ],
    "resources": [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://notes/1", mime_type="text/plain", text="first note"
            ),
            annotations=types.Annotations(priority=1.0),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(
                uri="test://blobs/1", mime_type="application/octet-stream", blob="AAEC"
            ),
        ),
        types.ResourceLink(
            type="resource_link",
            uri="test://reports/1",
            name="report-1",
            description="The first report",
            mime_type="application/pdf",
            meta={"example.com/pages": 3},
        ),
    ],
    "measured": [types.ImageContent(type="image", data=PNG64, mime_type="image/png")],
}
"""What the ``--blocks`` tools answer, block for block."""

MEASURED = {"width": 1, "height": 1}
"""The structured content of ``measured``."""


def _block_tools() -> list[types.Tool]:
    size = {"type": "integer"}
    return [
        types.Tool(name="picture", description="An image.", input_schema=_object({}, [])),
        types.Tool(name="resources", description="Resources.", input_schema=_object({}, [])),
        types.Tool(
            name="measured",
            description="An image and its size.",
            input_schema=_object({}, []),
            output_schema=_object({"width": size, "height": size}, ["width", "height"]),
        ),
    ]


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
    if args.failing:
        tools.append(
            types.Tool(
                name="fail",
                description="Answer with an error result.",
                input_schema=_object({}, []),
            )
        )
    if args.blocks:
        tools.extend(_block_tools())
    if args.asking:
        tools.append(
            types.Tool(
                name="ask_name",
                description="Ask the client for a name, then greet it.",
                input_schema=_object({}, []),
            )
        )
    if args.chatty:
        tools.append(
            types.Tool(
                name="chatty",
                description="Log to the client during the call.",
                input_schema=_object({}, []),
            )
        )
    if args.grow or args.list_changed:
        tools.append(
            types.Tool(
                name="grow",
                description="Add the tool 'grown' and say the list changed.",
                input_schema=_object({}, []),
            )
        )
    return tools


NAME_QUESTION = types.ElicitRequest(
    params=types.ElicitRequestFormParams(
        message="Your name?",
        requested_schema={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    )
)
"""What ``ask_name`` asks."""


def _record(path: str) -> None:
    with open(path, "a", encoding="utf-8") as lines:
        lines.write("listed\n")


def server_for(args: argparse.Namespace) -> tuple[Server[Any], NotificationOptions]:
    """A low-level MCP server declaring the tools of its command line."""
    tools = tools_from(args)
    bus = InMemorySubscriptionBus()
    suffix = os.environ[args.require_env] if args.require_env else ""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if args.lists:
            _record(args.lists)
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "shout":
            text = str(arguments["text"]).upper() + suffix
        elif params.name == "add":
            text = str(int(arguments["a"]) + int(arguments["b"]))
        elif params.name in BLOCKS:
            structured = MEASURED if params.name == "measured" else None
            return types.CallToolResult(content=BLOCKS[params.name], structured_content=structured)
        elif params.name == "fail":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="it failed on purpose")],
                is_error=True,
            )
        elif params.name == "ask_name":
            answer = (params.input_responses or {}).get("name")
            if answer is None:
                return types.InputRequiredResult(  # type: ignore[return-value]
                    input_requests={"name": NAME_QUESTION}, request_state="asked"
                )
            assert isinstance(answer, types.ElicitResult)
            content = answer.content or {}
            text = f"hello {content['name']}" if answer.action == "accept" else answer.action
        elif params.name == "chatty":
            await ctx.session.send_log_message(
                level="info",
                data="chatty says hi",
                logger="chatty",
                related_request_id=ctx.request_id,
            )
            text = "chatty"
        elif params.name == "grow":
            tools.append(
                types.Tool(name="grown", description="Added by grow.", input_schema=_object({}, []))
            )
            if args.list_changed:
                await bus.publish(ToolsListChanged())  # 2026-07-28: to listen subscriptions
                if ctx.protocol_version.startswith("2025"):  # the handshake era: on the session
                    await ctx.session.send_tool_list_changed()
            text = "grown"
        else:
            text = params.name
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server(
        "bridge-test-server",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus) if args.list_changed else None,
    )
    return server, NotificationOptions(tools_changed=args.list_changed)


async def serve(args: argparse.Namespace) -> None:
    server, notifications = server_for(args)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(
            read_stream, write_stream, server.create_initialization_options(notifications)
        )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.support.mcp_server")
    parser.add_argument("--collide", default=None, metavar="NAME")
    parser.add_argument("--huge", action="store_true")
    parser.add_argument("--no-good", action="store_true", help="leave out shout and add")
    parser.add_argument("--fillers", type=int, default=0, metavar="N")
    parser.add_argument("--starts", default=None, metavar="FILE")
    parser.add_argument("--lists", default=None, metavar="FILE")
    parser.add_argument("--require-env", default=None, metavar="NAME")
    parser.add_argument("--failing", action="store_true")
    parser.add_argument("--grow", action="store_true")
    parser.add_argument("--list-changed", action="store_true")
    parser.add_argument("--blocks", action="store_true")
    parser.add_argument("--chatty", action="store_true")
    parser.add_argument("--asking", action="store_true")
    args = parser.parse_args()
    if args.require_env and args.require_env not in os.environ:
        print(f"error: {args.require_env} is not set", file=sys.stderr, flush=True)
        sys.exit(3)
    if args.starts:
        with open(args.starts, "a", encoding="utf-8") as starts:
            starts.write("started\n")
    anyio.run(serve, args)


if __name__ == "__main__":
    main()
