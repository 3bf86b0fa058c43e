"""``watch``: the protocol messages under the prefix, one line each, as they happen."""

import argparse
import json
from datetime import datetime
from typing import Any

from rich.text import Text

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
from ..._transport import IncomingMessage
from ..common import (
    EXIT_OK,
    StopRequest,
    messager_from,
    shielded,
    stderr,
    stdout,
    topics_from,
    where,
)
from ..options import Commands, add_command


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


def add_parser(commands: Commands) -> None:
    """``watch``: its options."""
    watch = add_command(
        commands,
        "watch",
        "print registrations, calls and results as they happen",
        (
            "argentic-tools watch",
            "argentic-tools watch --type call --type result --tool calculate",
            "argentic-tools watch --count 10 --all",
        ),
    )
    watch.add_argument("--count", type=int, default=0, help="stop after N events (0: never)")
    watch.add_argument(
        "--type",
        action="append",
        default=[],
        metavar="KIND",
        help="show only this kind (register, registered, call, result, error, cancel, "
        "progress, chunk, offline, ...); repeatable",
    )
    watch.add_argument(
        "--tool", action="append", default=[], metavar="NAME", help="show only this tool"
    )
    watch.add_argument(
        "--all",
        action="store_true",
        help="also show tools registering again (each manager that starts makes them)",
    )
    watch.set_defaults(run=watch_command, graceful=True, log_level="WARNING")
