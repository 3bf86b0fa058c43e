"""The commands: serve, list, describe, call, watch, broker, demo, bench and soak."""

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from .._agent.manager import ToolManager
from .._errors import ProtocolError
from .._protocol.fleet_messages import (
    ClientOfflineMessage,
    ManagerOnlineMessage,
    RegisterToolMessage,
    ToolRegisteredMessage,
    ToolRegistrationErrorMessage,
    ToolUnregisteredMessage,
    UnregisterToolMessage,
)
from .._protocol.messages import (
    BaseMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    ToolCancelMessage,
    ToolPartialMessage,
    ToolProgressMessage,
)
from .._protocol.parsing import parse_message
from .._tools.service import (
    service_from_args,
)
from .._transport import IncomingMessage
from .common import (
    EXIT_OK,
    CliError,
    StopRequest,
    collect,
    connected_manager,
    messager_from,
    shielded,
    stderr,
    stdout,
    topics_from,
    where,
)
from .loading import load_tools


async def serve_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``serve``: load the tools and serve them until Ctrl-C or SIGTERM."""
    tools = load_tools(args.tools)
    service = service_from_args(args, tools, log_level=args.log_level)
    async with service:
        await stop.requested.wait()
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
    """Collect registrations for ``--wait`` seconds, or until every ``--expect`` tool is in.

    Without ``--expect`` there is no telling when every live tool has answered the
    manager's announcement, so the whole ``--wait`` is spent; with it, the command
    goes on as soon as those tools (names or ids) are registered.
    """
    expected: list[str] = args.expect
    if not expected:
        await collect(args.wait)
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
    """``list``: collect registrations (see :func:`collect_registrations`) and print them."""
    async with connected_manager(args) as manager:
        await collect_registrations(manager, args)
        rows = _registry(manager)
    return _print_registry(args, rows)


ELSEWHERE_HINT = (
    "Tools under another topic prefix or on another broker do not show here: "
    "give theirs with --topic-prefix and --broker (the demo prints its own)."
)
"""Said when no tool at all answered: the usual cause is the wrong prefix or broker."""


def _print_registry(args: argparse.Namespace, rows: list[dict[str, Any]]) -> int:
    if args.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        stderr.print(f"No tools registered on {where(args)} (waited {args.wait:g} s).")
        stderr.print(ELSEWHERE_HINT)
        return EXIT_OK
    table = Table(title=f"{len(rows)} tool(s) on {where(args)}", title_justify="left")
    columns = ["Name", "Parameters", "Description"]
    if args.wide:
        columns += ["Id", "Tags", "Source"]
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        first_line = row["description"].strip().splitlines()[0] if row["description"] else ""
        cells: list[Any] = [
            Text(row["name"], style="bold"),
            parameters(row["input_schema"]),
            first_line,
        ]
        if args.wide:
            cells += [row["id"], ", ".join(row["tags"]), row["source"] or ""]
        table.add_row(*cells)
    stdout.print(table)
    return EXIT_OK


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


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (plain, for scripts)."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


async def describe_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``describe``: print the registry in an LLM provider's tool format."""
    async with connected_manager(args) as manager:
        await collect_registrations(manager, args)
        if not manager.tools_by_id:
            stderr.print(f"No tools registered on {where(args)}. {ELSEWHERE_HINT}")
        if args.format == "prompt":
            exported: Any = json.loads(manager.generate_tool_descriptions_for_prompt())
        else:
            exported = manager.export_tools(args.format)
    print_json(exported)
    return EXIT_OK


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
        for topic in (
            topics.register,
            topics.owned_register_filter,
            topics.status,
            f"{topics.call_base}/+",
            topics.response_filter,
        ):
            await messager.subscribe(topic, show)
        stderr.print(f"Watching {where(args)}; press Ctrl-C to stop.")
        await stop.requested.wait()
    finally:
        await shielded(messager.disconnect)
    return EXIT_OK


# -- broker, demo, bench ------------------------------------------------------------------


async def broker_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``broker``: run the embedded MQTT broker until Ctrl-C."""
    from .._broker import EmbeddedBroker

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
    from .demo import run_demo

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
    return subprocess.run(command, cwd=root).returncode  # noqa: S603
