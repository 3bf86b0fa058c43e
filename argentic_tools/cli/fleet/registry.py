"""The commands: serve, list, describe, call, watch, broker, demo, bench and soak."""

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from rich.table import Table
from rich.text import Text

from ..._agent.manager import ToolManager
from ..._errors import ProtocolError
from ..._protocol.fleet_messages import (
    ClientOfflineMessage,
    ManagerOnlineMessage,
    RegisterToolMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
)
from ..._protocol.messages import (
    BaseMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    ToolCancelMessage,
    ToolCreditMessage,
    ToolPartialMessage,
    ToolProgressMessage,
)
from ..._protocol.parsing import parse_message
from ..._tools.service import (
    service_from_args,
)
from ..._transport import IncomingMessage
from ..common import (
    EXIT_OK,
    CliError,
    StopRequest,
    connected_manager,
    messager_from,
    print_json,
    settle,
    shielded,
    stderr,
    stdout,
    topics_from,
    where,
)
from ..mcp.target import mcp_server_from, server_tool_rows
from ..serving.loading import load_tools
from ..serving.reload import serve_with_reload, started_by_reloader, stop_when_reloader_exits


async def serve_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``serve``: load the tools and serve them until Ctrl-C or SIGTERM.

    With ``--reload`` a child process serves them, started again on each edit.
    """
    if args.reload:
        return await serve_with_reload(args, stop)
    reloaded = started_by_reloader()
    tools = load_tools(args.tools)
    service = service_from_args(args, tools, log_level=args.log_level)
    async with anyio.create_task_group() as tasks:
        if reloaded:
            tasks.start_soon(stop_when_reloader_exits, stop)
        async with service:
            await stop.requested.wait()
        tasks.cancel_scope.cancel()
    return EXIT_OK


# -- list and describe -------------------------------------------------------------------


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


# -- watch -----------------------------------------------------------------------------


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _summary(message: BaseMessage) -> tuple[str, str, str]:
    """(kind, style, details) of one protocol message, for ``watch``."""
    if isinstance(message, RegisterToolMessage):
        return (
            "register",
            "green",
            f"{message.tool_name} id={message.tool_id} from {message.source}",
        )
    if isinstance(message, UnregisterToolMessage):
        return "unregister", "yellow", f"id={message.tool_id} from {message.source}"
    if isinstance(message, ClientOfflineMessage):
        return "offline", "red", f"client {message.source} is gone"
    if isinstance(message, ManagerOnlineMessage):
        return "manager", "cyan", f"{message.source} is online"
    if isinstance(message, ToolRegisteredMessage):
        return "registered", "green", f"{message.tool_name} as {message.tool_id}"
    if isinstance(message, ToolRegistrationErrorMessage):
        return "refused", "red", f"{message.tool_name}: {message.error}"
    if isinstance(message, ToolUnregisteredMessage):
        return "removed", "yellow", f"{message.tool_name or message.tool_id} ({message.reason})"
    if isinstance(message, TaskErrorMessage):
        return (
            "error",
            "red",
            f"{message.tool_name} [{message.error_code}] {message.error} task={message.task_id}",
        )
    if isinstance(message, TaskResultMessage):
        took = f" in {message.duration_ms:.1f} ms" if message.duration_ms is not None else ""
        return (
            "result",
            "green",
            f"{message.tool_name} {message.status.value}{took} -> {_short(message.result)} "
            f"task={message.task_id}",
        )
    if isinstance(message, TaskMessage):
        return (
            "call",
            "blue",
            f"{message.tool_name} {_short(message.arguments)} task={message.task_id}",
        )
    if isinstance(message, ToolCancelMessage):
        why = message.reason or "no reason given"
        return "cancel", "yellow", f"task={message.task_id} tool={message.tool_id}: {why}"
    if isinstance(message, ToolProgressMessage):
        total = f"/{message.total:g}" if message.total is not None else ""
        text = f" {message.message}" if message.message else ""
        return "progress", "cyan", f"{message.progress:g}{total}{text} task={message.task_id}"
    if isinstance(message, ToolPartialMessage):
        return "chunk", "cyan", f"#{message.seq} {_short(message.chunk)} task={message.task_id}"
    if isinstance(message, ToolCreditMessage):
        return "credit", "", f"read {message.read} task={message.task_id}"
    return message.type.lower(), "", ""


class WatchFilter:
    """What ``watch`` shows: by kind and tool, without tools registering again.

    Every manager that starts makes every live tool register again, and each of
    those is confirmed: without ``--all`` a registration (or confirmation) already
    seen for the same tool id is not shown again.
    """

    def __init__(self, kinds: list[str], tools: list[str], everything: bool) -> None:
        self.kinds = set(kinds)
        self.tools = set(tools)
        self.everything = everything
        self._seen: set[tuple[str, str | None, str | None]] = set()

    def shows(self, message: BaseMessage | None, kind: str) -> bool:
        """Whether the line for ``message`` (of ``kind``) is printed."""
        if self.kinds and kind not in self.kinds:
            return False
        if self.tools and getattr(message, "tool_name", None) not in self.tools:
            return False
        if not self.everything and isinstance(message, RegisterToolMessage | ToolRegisteredMessage):
            key = (kind, message.tool_id, message.source)
            if key in self._seen:
                return False
            self._seen.add(key)
        return True


def describe_event(message: IncomingMessage, shown: WatchFilter | None = None) -> Text | None:
    """One line for one message seen by ``watch``; None when ``shown`` filters it out."""
    stamp = datetime.now().strftime("%H:%M:%S.%f")[:-3]
    parsed: BaseMessage | None = None
    try:
        parsed = parse_message(message.payload)
        kind, style, details = _summary(parsed)
    except ProtocolError as exc:
        kind, style, details = "malformed", "red", f"on {message.topic}: {exc}"
    if shown is not None and not shown.shows(parsed, kind):
        return None
    return Text.assemble((stamp, "dim"), "  ", (f"{kind:<10}", style), "  ", details)


async def watch_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``watch``: print the protocol messages under the prefix as they happen."""
    topics = topics_from(args)
    shown = WatchFilter(args.type, args.tool, args.all)
    seen = 0

    async def show(message: IncomingMessage) -> None:
        nonlocal seen
        if args.count and seen >= args.count:
            return
        line = describe_event(message, shown)
        if line is None:
            return
        seen += 1
        stdout.print(line, soft_wrap=True)
        if args.count and seen >= args.count:
            stop.request()

    messager = messager_from(args)
    await messager.connect()
    try:
        # Every level below each of the four topics: tasks go to ``{call_base}/{tool_id}``
        # or, with a tenant, one level deeper; results to a manager's own inbox, one level
        # below ``{response_base}/{tool_id}``; answers to an announcement below
        # ``{register}``. A filter ``T/#`` matches ``T`` itself as well.
        for base in (topics.register, topics.status, topics.call_base, topics.response_base):
            await messager.subscribe(f"{base}/#", show)
        stderr.print(f"Watching {where(args)}; press Ctrl-C to stop.")
        await stop.requested.wait()
    finally:
        await shielded(messager.disconnect)
    return EXIT_OK


# -- broker, demo, bench ------------------------------------------------------------------


async def broker_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``broker``: run the embedded MQTT broker until Ctrl-C."""
    from ..._broker import EmbeddedBroker

    broker = EmbeddedBroker(args.host, args.port)
    try:
        await broker.start()
    except (RuntimeError, OSError) as exc:
        raise CliError(str(exc)) from None
    try:
        stdout.print(f"MQTT broker listening on {broker.url}; press Ctrl-C to stop.")
        await stop.requested.wait()
    finally:
        await broker.stop()
    return EXIT_OK


async def demo_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``demo``: start the example tools and run the scripted agent."""
    from ..demo import run_demo

    return await run_demo(args, stop)


def benchmark_command(args: argparse.Namespace) -> int:
    """Run ``benchmarks.run`` (bench) or ``benchmarks.soak`` (soak) with the arguments as given."""
    module = {"bench": "run", "soak": "soak"}[args.command]
    root = Path(__file__).resolve().parents[2]
    if not (root / "benchmarks" / f"{module}.py").is_file():
        raise CliError(
            f"the benchmarks are not installed with the package; run `argentic-tools "
            f"{args.command}` from a source checkout of argentic-tools"
        )
    command = [sys.executable, "-m", f"benchmarks.{module}", *args.bench_args]
    # benchmarks.harness.cli.PROG_VARIABLE: its help and errors name `argentic-tools bench`.
    environment = {**os.environ, "ARGENTIC_TOOLS_PROG": f"argentic-tools {args.command}"}
    return subprocess.run(command, cwd=root, env=environment).returncode  # noqa: S603
