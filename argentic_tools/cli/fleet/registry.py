"""``list`` and ``describe``: the registry collected from the bus (or an MCP server's tools)."""

import argparse
import asyncio
import contextlib
import json
import re
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text

from ..._agent.manager import ToolManager
from ..common import (
    EXIT_OK,
    StopRequest,
    connected_manager,
    print_json,
    settle,
    stderr,
    stdout,
    where,
)
from ..mcp.target import add_mcp_server_arguments, mcp_server_from, server_tool_rows
from ..options import Commands, add_collect_arguments, add_command


def _registry(manager: ToolManager) -> list[dict[str, Any]]:
    """Every registered tool instance (several processes may serve one name)."""
    rows = []
    for entry in manager.tools_by_id.values():
        rows.append(
            {
                "name": entry["name"],
                "id": entry["id"],
                "tags": list(entry.get("tags") or ()),
                "source": entry.get("source_client_id"),
                "description": entry.get("description") or "",
                "input_schema": json.loads(entry.get("parameters") or "{}"),
                "registered_at": entry.get("registered_at"),
            }
        )
    return sorted(rows, key=lambda row: (row["name"], row["id"]))


async def collect_registrations(manager: ToolManager, args: argparse.Namespace) -> None:
    """Collect registrations for at most ``--wait`` seconds.

    Without ``--expect``, until registrations stop: every live tool has answered the
    manager's announcement (see :func:`settle`). With it, until those tools (names or
    ids) are registered.
    """
    expected: list[str] = args.expect
    if not expected:
        with stderr.status(Text(f"Collecting registrations (at most {args.wait:g} s)...")):
            await settle(manager, args.wait)
        return
    status = Text(f"Waiting up to {args.wait:g} s for {', '.join(expected)}...")
    with stderr.status(status), contextlib.suppress(TimeoutError):
        async with asyncio.timeout(args.wait):
            for name in expected:
                await manager.wait_for_tool(name)
    missing = [
        name
        for name in expected
        if name not in manager.tools_by_name and name not in manager.tools_by_id
    ]
    if missing:
        stderr.print(f"Not registered after {args.wait:g} s: {', '.join(missing)}.")


async def list_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``list``: collect registrations (see :func:`collect_registrations`) and print them.

    With ``--mcp URL``, ``--mcp-command COMMAND`` or ``--config FILE``: the tools of
    that MCP server instead, in the same shapes.
    """
    server = mcp_server_from(args)
    if server is not None:
        rows = await server_tool_rows(server)
        if not rows and not args.json:
            stderr.print(f"The MCP server {server} has no tools.")
            return EXIT_OK
        return _print_registry(args, rows, f"the MCP server {server}")
    async with connected_manager(args) as manager:
        await collect_registrations(manager, args)
        rows = _registry(manager)
    return _print_registry(args, rows, where(args))


ELSEWHERE_HINT = (
    "Tools under another topic prefix or on another broker do not show here: "
    "give theirs with --topic-prefix and --broker (the demo prints its own)."
)
"""Said when no tool at all answered: the usual cause is the wrong prefix or broker."""


def _print_registry(args: argparse.Namespace, rows: list[dict[str, Any]], place: str) -> int:
    if args.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        stderr.print(f"No tools registered on {place} (waited {args.wait:g} s).")
        stderr.print(ELSEWHERE_HINT)
        return EXIT_OK
    table = Table(title=f"{len(rows)} tool(s) on {place}", title_justify="left")
    # An MCP server's tools have no ids, tags or serving client: --wide leaves those empty.
    cells = [
        [row["name"], parameters(row["input_schema"]), summary(row["description"])]
        + (
            [row.get("id") or "", ", ".join(row.get("tags", ())), row.get("source") or ""]
            if args.wide
            else []
        )
        for row in rows
    ]
    headers = ["Name", "Parameters", "Description"] + (
        ["Id", "Tags", "Source"] if args.wide else []
    )
    # Names are never broken: their column is as wide as the longest. A description is its
    # first sentence, on one line, cut with an ellipsis when the terminal is narrow
    # (`describe` and `list --json` have it whole); other cells wrap.
    naturals = [
        max(len(text) for text in [header, *column])
        for header, column in zip(headers, zip(*cells, strict=True), strict=True)
    ]
    minimums = [naturals[0], _longest_word(row[1] for row in cells), min(naturals[2], 12)]
    minimums += [min(natural, 8) for natural in naturals[3:]]
    borders = 1 + 3 * len(headers)
    widths = fit_widths(naturals, minimums, stdout.width - borders)
    for header, width in zip(headers, widths, strict=True):
        if header == "Description":
            table.add_column(header, width=width, no_wrap=True, overflow="ellipsis")
        else:
            table.add_column(header, width=width, overflow="fold")
    for row in cells:
        table.add_row(Text(row[0], style="bold"), *row[1:])
    stdout.print(table)
    return EXIT_OK


def _longest_word(texts: Iterable[str]) -> int:
    return max((len(word) for text in texts for word in text.split()), default=1)


def fit_widths(naturals: list[int], minimums: list[int], available: int) -> list[int]:
    """Column widths within ``available`` characters: the widest column gives way first.

    Each column starts at its natural width and goes down to its minimum; when the
    minimums do not fit, every column but the first (the names) goes on down to 4.
    """
    widths = list(naturals)
    for floors in (minimums, [minimums[0]] + [min(4, low) for low in minimums[1:]]):
        while sum(widths) > available:
            shrinkable = [i for i, width in enumerate(widths) if width > floors[i]]
            if not shrinkable:
                break
            widths[max(shrinkable, key=lambda i: widths[i])] -= 1
    return widths


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def summary(description: str) -> str:
    """A description's first sentence (of its first paragraph), on one line."""
    paragraph = description.strip().split("\n\n", 1)[0]
    return _SENTENCE_END.split(" ".join(paragraph.split()), 1)[0]


def parameters(schema: dict[str, Any]) -> str:
    """A schema's parameters in one short line: ``a: integer, b?: string`` (``?``: optional)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return ""
    required = set(schema.get("required", ()))
    return ", ".join(
        f"{name}{'' if name in required else '?'}: {_type_of(value)}"
        for name, value in properties.items()
    )


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "enum" in schema:
        return "|".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"{_type_of(schema.get('items'))}[]"
    if kind:
        return str(kind)
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return "|".join(_type_of(option) for option in schema[union])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return "any"


async def describe_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``describe``: print the registry as prompt text, or in an LLM provider's tool format."""
    async with connected_manager(args) as manager:
        await collect_registrations(manager, args)
        if not manager.tools_by_id:
            stderr.print(f"No tools registered on {where(args)}. {ELSEWHERE_HINT}")
        if args.format == "prompt":
            entries = json.loads(manager.generate_tool_descriptions_for_prompt())
        else:
            exported = manager.export_tools(args.format)
    if args.format != "prompt":
        print_json(exported)
    elif entries:
        print(prompt_text(entries))
    else:
        stderr.print(f"No tools registered on {where(args)} (waited {args.wait:g} s).")
    return EXIT_OK


def prompt_text(entries: list[dict[str, Any]]) -> str:
    """The prompt format (``generate_tool_descriptions_for_prompt``) as readable text.

    One block per tool, by name, to paste into a system prompt: a ``## name`` heading,
    the whole description, and the parameters as JSON Schema on one line.
    """
    blocks = []
    for entry in sorted(entries, key=lambda entry: str(entry["name"])):
        description = (entry.get("description") or "").strip()
        schema = json.dumps(entry.get("parameters") or {}, ensure_ascii=False)
        lines = [f"## {entry['name']}", *([description] if description else [])]
        if "\n" in description:
            lines.append("")  # the parameters apart from a description of paragraphs
        blocks.append("\n".join([*lines, f"Parameters (JSON Schema): {schema}"]))
    return "\n\n".join(blocks)


def add_list_parser(commands: Commands) -> None:
    """``list``: its options."""
    listing = add_command(
        commands,
        "list",
        "list the registered tools",
        (
            "argentic-tools list",
            "argentic-tools list --wide --wait 3",
            "argentic-tools list --json --expect calculate",
        ),
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.add_argument(
        "--wide", action="store_true", help="add the ids, tags and serving client to the table"
    )
    add_collect_arguments(listing)
    add_mcp_server_arguments(listing)
    listing.set_defaults(run=list_command, log_level="WARNING")


def add_describe_parser(commands: Commands) -> None:
    """``describe``: its options."""
    describe = add_command(
        commands,
        "describe",
        "export the tool registry for an LLM",
        (
            "argentic-tools describe  # text to paste into a system prompt",
            "argentic-tools describe --format openai --expect calculate",
            "argentic-tools describe --format mcp --wait 3",
        ),
    )
    describe.add_argument(
        "--format",
        choices=("prompt", "openai", "openai-responses", "anthropic", "mcp"),
        default="prompt",
        help="prompt: readable text for a system prompt, one block per tool (its name, "
        "its description, its parameters as JSON Schema); openai (Chat Completions), "
        "openai-responses (Responses API), anthropic, mcp: a JSON array of tool "
        "definitions in that API's shape (ToolManager.export_tools)",
    )
    add_collect_arguments(describe)
    describe.set_defaults(run=describe_command, log_level="WARNING")
