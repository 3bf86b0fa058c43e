"""An MCP server inspected directly: ``argentic-tools list --mcp`` and ``call --mcp``.

:func:`connect` opens an MCP client session with a server, a command it starts
over stdio (through :class:`~argentic_tools.mcp.bridge.server_process.ServerProcess`, so
a server that exits at once is reported with its exit status and its last stderr
lines) or a streamable HTTP URL, with the headers it wants (credentials, say).
:func:`tool_rows` lists the server's tools in the shape ``argentic-tools list`` gives
the tools on the bus; :func:`result_value` and :func:`result_content` turn a tool's
result into what ``argentic-tools call`` prints.
"""

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from ..._protocol.content import ContentBlock, parse_blocks
from .http_connection import HttpConnection
from .server_process import (
    INHERITED,
    ServerProcess,
    failure_text,
    not_found_in,
)


class McpServerError(ConnectionError):
    """The MCP server could not be reached, ended the session, or refused a request."""


@contextlib.asynccontextmanager
async def connect(
    *,
    command: Sequence[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> AsyncIterator[Client]:
    """An initialised MCP client session with the server, closed (and stopped) on exit.

    Args:
        command: The command that starts the server over stdio, or
        url: its streamable HTTP URL.
        env: Variables for a server started as a command, on top of :data:`INHERITED`.
        headers: HTTP headers for every request to a server reached by URL
            (``Authorization: Bearer ...``).

    Raises:
        ServerNotFoundError: The command cannot be run.
        McpServerError: The server exited, or could not be reached, before the session
            began; the message says how (exit status, last stderr lines).

    """
    if (command is None) == (url is None):
        raise ValueError("give the MCP server as a command or as a URL, not both")
    if headers and url is None:
        raise ValueError("headers are for a server reached by URL, not for a command")
    process = ServerProcess(command, env) if command is not None else None
    http = HttpConnection(url, headers) if url is not None else None
    server = url or " ".join(command or ())
    async with contextlib.AsyncExitStack() as stack:
        transport: Any = process.connect() if process is not None else None
        if http is not None:
            transport = http.streams()
        try:
            client = await stack.enter_async_context(Client(transport))
        except Exception as exc:  # noqa: BLE001 - whatever the SDK raised, said in one line
            missing = not_found_in(exc)
            if missing is not None:
                raise missing from None
            if process is not None and process.returncode is not None:
                raise McpServerError(
                    f"the MCP server {server!r} {process.ending()} (it gets only {INHERITED}"
                    " from this environment: give the variables it needs with -e KEY=VALUE)"
                ) from None
            refusal = http.refusal() if http is not None else None
            if refusal is not None:
                raise McpServerError(f"the MCP server {server!r} {refusal}") from None
            raise McpServerError(
                f"cannot reach the MCP server {server!r}: {failure_text(exc)}"
            ) from None
        yield client


async def list_tools(client: Client) -> list[types.Tool]:
    """Every tool of the server, all pages.

    Raises:
        McpServerError: The server refused the request.

    """
    tools: list[types.Tool] = []
    cursor = None
    while True:
        try:
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        except MCPError as exc:
            raise McpServerError(f"the MCP server refused to list its tools: {exc}") from None
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def tool_rows(tools: Sequence[types.Tool]) -> list[dict[str, Any]]:
    """The tools as ``argentic-tools list`` shows tools: name, description, input schema.

    ``output_schema``, ``title`` and ``annotations`` are there when the server declares them.
    """
    rows = []
    for tool in tools:
        row: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description or "",
            "input_schema": dict(tool.input_schema),
        }
        if tool.output_schema:
            row["output_schema"] = dict(tool.output_schema)
        if tool.title:
            row["title"] = tool.title
        if tool.annotations is not None:
            row["annotations"] = tool.annotations.model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
        rows.append(row)
    return sorted(rows, key=lambda row: str(row["name"]))


async def call_tool(
    client: Client,
    name: str,
    arguments: dict[str, Any],
    *,
    on_progress: Callable[[float, float | None, str | None], None] | None = None,
) -> types.CallToolResult:
    """Call the tool ``name``; its result, ``is_error`` included.

    ``on_progress(progress, total, message)`` gets each progress notification.

    Raises:
        McpServerError: The server refused the call (a JSON-RPC error, such as an
            unknown tool).

    """

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        if on_progress is not None:
            on_progress(progress, total, message)

    try:
        return await client.call_tool(name, arguments, progress_callback=forward)
    except MCPError as exc:
        raise McpServerError(
            f"the MCP server refused the call to {name!r}: {exc.error.message}"
        ) from None


def result_value(result: types.CallToolResult) -> tuple[bool, Any]:
    """``(is_text, value)``: what a tool's result says, as ``call`` prints it.

    The structured content when there is some (JSON); else the text blocks joined
    (text), or every block as JSON when some are not text. For an ``isError``
    result, the text (the error's message).
    """
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    if result.is_error:
        return True, text or "the MCP server reported an error without a message"
    if result.structured_content is not None:
        return False, result.structured_content
    if all(isinstance(block, types.TextContent) for block in result.content):
        return True, text
    return False, [
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    ]


def result_content(result: types.CallToolResult) -> list[ContentBlock] | None:
    """The result's blocks as the library's, when some are not text; None when all are.

    ``call`` prints these as it prints a tool's blocks on the bus (images as
    ``[image/png, 12.3 KB]``, ...), instead of their JSON with the base64 inline.
    """
    if result.is_error or all(isinstance(block, types.TextContent) for block in result.content):
        return None
    return parse_blocks(
        [
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        ]
    )
