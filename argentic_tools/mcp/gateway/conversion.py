"""Between MCP's types and ours: tools, results, content blocks, a request's thread and trace.

:func:`mcp_tool` and :func:`mcp_result` are what ``tools/list`` and ``tools/call`` answer
with; :func:`thread_of` and :func:`trace_id_of` read what a request carries for the call.
"""

import json
import re
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from pydantic import TypeAdapter

from ..._agent.fleet.info import ToolInfo
from ..._protocol.content import ContentBlock
from ..._protocol.messages import TaskErrorMessage, ToolResult
from .names import McpNames

THREAD_HEADER = "x-argentic-thread"
"""HTTP header that selects the conversation thread whose tool policy applies."""

THREAD_META = "argentic/thread"
"""``_meta`` key with the same effect, for any transport."""

RESULT_KEY = "result"
"""Where a result that is not a JSON object goes in ``structuredContent``."""

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_HINTS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
    "title": "title",
}
_BLOCKS: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)


def mcp_tool(info: ToolInfo, names: McpNames) -> types.Tool:
    """One registered tool as an MCP ``Tool``."""
    output = info.output_schema
    if output is not None and output.get("type") != "object":
        # MCP's structured content is an object: other results are wrapped in one.
        output = {"type": "object", "properties": {RESULT_KEY: output}, "required": [RESULT_KEY]}
    hints = {_HINTS[key]: value for key, value in info.annotations.items() if key in _HINTS}
    return types.Tool(
        name=names.to_mcp[info.name],
        title=info.annotations.get("title"),
        description=info.description,
        input_schema=info.input_schema,
        output_schema=output,
        annotations=types.ToolAnnotations(**hints) if hints else None,
    )


def mcp_result(result: ToolResult, tool: types.Tool | None) -> types.CallToolResult:
    """A call's result as MCP carries it, for ``tool`` as it is listed (None: unlisted).

    The tool's content blocks as MCP blocks (annotations and ``_meta`` with them), or
    else its value as text; ``structuredContent`` when the tool declares an output
    schema or returned a structured value (a JSON object).
    """
    if isinstance(result, TaskErrorMessage):
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.error)], is_error=True
        )
    value = result.result
    content: list[Any]
    if result.content is not None:
        content = [mcp_block(block) for block in result.content]
    else:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        content = [types.TextContent(type="text", text=text)]
    if tool is not None and tool.output_schema is not None:
        structured = value if _is_object_schema_of(tool, value) else {RESULT_KEY: value}
        return types.CallToolResult(content=content, structured_content=structured)
    if isinstance(value, dict):
        return types.CallToolResult(content=content, structured_content=value)
    return types.CallToolResult(content=content)


def mcp_block(block: ContentBlock) -> types.ContentBlock:
    """One content block as the MCP SDK's: the same JSON shape, annotations and ``_meta``."""
    return _BLOCKS.validate_python(block.wire())


def _is_object_schema_of(tool: types.Tool, value: Any) -> bool:
    schema = tool.output_schema or {}
    wrapped = list(schema.get("required", ())) == [RESULT_KEY] and set(
        schema.get("properties", {})
    ) == {RESULT_KEY}
    return isinstance(value, dict) and not wrapped


def trace_id_of(meta: dict[str, Any]) -> str | None:
    """The trace id of a W3C ``traceparent`` in ``_meta`` (None when absent or malformed)."""
    parent = meta.get("traceparent")
    if isinstance(parent, str):
        match = _TRACEPARENT.match(parent.strip().lower())
        if match is not None:
            return match.group(1)
    return None


def thread_of(ctx: ServerRequestContext[Any]) -> str | None:
    """The thread a request names: its ``_meta`` key, else its HTTP header; None: none."""
    thread = (ctx.meta or {}).get(THREAD_META)
    if isinstance(thread, str) and thread:
        return thread
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None:
        value = headers.get(THREAD_HEADER)
        if value:
            return str(value)
    return None
