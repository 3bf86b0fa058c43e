"""``history``: the calls a :class:`~argentic_tools.SqliteRecorder` kept, newest first.

The command reads the file itself, read-only: no broker, no manager, and the
managers writing the file may keep running. It prints a table (time, tool,
outcome and error code, duration, thread, call and task ids, the content blocks
of the calls that returned some, as ``call`` prints them, and how much each call's
tool and caller said to each other), or with ``--json`` an array of the calls with
every field, arguments, results, content and exchanges included.

Given a call's task id or call id, it prints that call in full: its fields, arguments,
result or error, content, and its exchange with its caller (the tool's questions with
their answers, its log records) in order.
"""

import argparse
import json
import re
import time
from datetime import datetime
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..._agent.records.history import SqliteRecorder
from ..._agent.records.observations import Observation
from ..._protocol.messages import SUCCESS_STATUSES
from ..calling.content import content_lines
from ..calling.exchange_text import exchange_lines, exchange_summary
from ..common import EXIT_OK, CliError, print_json, print_wide, stderr, stdout
from ..options import Commands, add_command

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_AGO = re.compile(r"(\d+(?:\.\d*)?)\s*([smhd]?)")
_SUCCESSES = {status.value for status in SUCCESS_STATUSES}


def history_command(args: argparse.Namespace) -> int:
    """``history``: query the file given by ``--history`` and print the calls."""
    path = Path(args.history)
    if not path.is_file():
        raise CliError(f"--history {args.history}: no such file")
    now = time.time()
    since = None if args.since is None else moment("--since", args.since, now)
    until = None if args.until is None else moment("--until", args.until, now)
    if since is not None and until is not None and since >= until:
        raise CliError(f"--since {args.since!r} is not before --until {args.until!r}")
    if args.limit < 0:
        raise CliError(f"--limit {args.limit}: give 0 (all) or more")
    try:
        calls = SqliteRecorder(path).query(
            tool=args.tool,
            thread=args.thread,
            outcome=args.outcome,
            since=since,
            until=until,
            limit=args.limit or None,
            call=args.call,
            user=args.user,
        )
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json([call.to_dict() for call in calls])
        return EXIT_OK
    if args.call is not None:
        if not calls:
            raise CliError(f"no call {args.call!r} in {path} (give its task id or call id)")
        for number, call in enumerate(calls):
            if number:
                stdout.print()
            print_wide(one_call(call))
        return EXIT_OK
    if not calls:
        stderr.print(f"No calls in {path} match.")
        return EXIT_OK
    print_wide(calls_table(calls, f"{len(calls)} call(s) in {path}, newest first"))
    if len(calls) == args.limit:
        stderr.print(f"The newest {args.limit} shown; --limit 0 shows every one that matches.")
    return EXIT_OK


def moment(option: str, text: str, now: float) -> float:
    """Unix seconds from ``90``, ``15m``, ``2h``, ``7d`` (that long before ``now``) or ISO 8601.

    Raises:
        CliError: ``text`` is neither.

    """
    ago = _AGO.fullmatch(text.strip())
    if ago:
        return now - float(ago.group(1)) * _UNITS[ago.group(2)]
    try:
        # A time without an offset is local time, as datetime.timestamp() reads it.
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise CliError(
            f"{option} {text!r}: give how long ago (90, 15m, 2h, 7d) or an ISO 8601 time "
            "(2025-06-01T12:00, local time unless it has an offset)"
        ) from None


def calls_table(calls: list[Observation], title: str) -> Table:
    """A table of ``calls``, one row each."""
    table = Table(title=title, title_justify="left")
    columns = ["Time", "Tool", "Outcome", "Duration", "Thread", "Call id", "Task id"]
    with_content = any(call.content for call in calls)
    if with_content:
        columns.append("Content")
    with_exchanges = any(call.exchanges for call in calls)
    if with_exchanges:
        columns.append("Exchange")
    for column in columns:
        table.add_column(
            column, overflow="fold", justify="right" if column == "Duration" else "left"
        )
    for call in calls:
        # Text, not a string: a string cell is read as markup, and [image/png, ...] with it.
        content = [Text(content_lines(call.content))]
        ok = call.status in _SUCCESSES
        outcome = call.status
        if call.error_code and call.error_code != call.status:
            outcome += f" {call.error_code}"
        table.add_row(
            datetime.fromtimestamp(call.timestamp).isoformat(sep=" ", timespec="milliseconds"),
            Text(call.tool_name, style="bold"),
            Text(outcome, style="green" if ok else "red"),
            f"{call.duration_ms:.1f} ms",
            call.thread_id or "",
            call.call_id or "",
            call.task_id,
            *(content if with_content else ()),
            *([exchange_summary(call.exchanges)] if with_exchanges else ()),
        )
    return table


def one_call(call: Observation) -> Group:
    """One call in full: its fields, arguments, result or error, content, and exchange."""
    ok = call.status in _SUCCESSES
    outcome = call.status + (
        f" {call.error_code}" if call.error_code and call.error_code != call.status else ""
    )
    head = Text.assemble(
        ("Call to ", "bold"),
        (call.tool_name, "bold"),
        ": ",
        (outcome, "green" if ok else "red"),
        f" in {call.duration_ms:.1f} ms",
    )
    fields = [
        (
            "Ended",
            datetime.fromtimestamp(call.timestamp).isoformat(sep=" ", timespec="milliseconds"),
        ),
        ("Task id", call.task_id),
        ("Call id", call.call_id),
        ("Tool id", call.tool_id),
        ("Thread", call.thread_id),
        ("Trace id", call.trace_id),
    ]
    parts: list[RenderableType] = [head]
    parts += [Text(f"  {name}: {value}") for name, value in fields if value]
    parts.append(Text("Arguments", "bold"))
    parts.append(Text(_indented(json.dumps(call.arguments, indent=2, ensure_ascii=False))))
    if ok:
        parts.append(Text("Result", "bold"))
        parts.append(Text(_indented(json.dumps(call.result, indent=2, ensure_ascii=False))))
    else:
        parts.append(Text("Error", "bold"))
        parts.append(Text(_indented(call.error or ""), "red"))
    if call.content:
        parts.append(Text("Content", "bold"))
        parts.append(Text(_indented(content_lines(call.content))))
    if call.exchanges:
        parts.append(Text(f"Exchange ({exchange_summary(call.exchanges)})", "bold"))
        parts += [Text("  ") + line for line in exchange_lines(call.exchanges, call.tool_name)]
    return Group(*parts)


def _indented(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def add_parser(commands: Commands) -> None:
    """``history``: its options (no client's: it reads a file)."""
    history = add_command(
        commands,
        "history",
        "show the calls a SqliteRecorder kept, newest first",
        (
            "argentic-tools history --history calls.db",
            "argentic-tools history --history calls.db --tool calculate --since 1h",
            "argentic-tools history --history calls.db --outcome error --json --limit 0",
            "argentic-tools history --history calls.db TASK_ID  # one call, its questions and logs",
        ),
        client=False,
    )
    history.add_argument(
        "call",
        nargs="?",
        default=None,
        metavar="ID",
        help="show this call in full (its task id or call id): arguments, result or error, "
        "content, and its exchange with its caller (questions, answers, log records)",
    )
    history.add_argument(
        "--history",
        required=True,
        metavar="FILE",
        help="the SQLite file of ToolManager(recorder=SqliteRecorder(FILE))",
    )
    history.add_argument("--tool", default=None, metavar="NAME", help="only calls to this tool")
    history.add_argument(
        "--thread", default=None, metavar="ID", help="only calls made in this conversation thread"
    )
    history.add_argument(
        "--user",
        default=None,
        metavar="SUBJECT",
        help="only calls made on behalf of this user (an MCP gateway's caller)",
    )
    history.add_argument(
        "--outcome",
        default=None,
        help="only calls that ended so: a status (success, error, failed, timeout, cancelled) "
        "or an error code (not_found, invalid_arguments, execution_error, ...)",
    )
    history.add_argument(
        "--since",
        default=None,
        metavar="WHEN",
        help="only calls that ended at or after WHEN: how long ago (90, 15m, 2h, 7d) or "
        "an ISO 8601 time (2025-06-01T12:00, local time unless it has an offset)",
    )
    history.add_argument(
        "--until", default=None, metavar="WHEN", help="only calls that ended before WHEN"
    )
    history.add_argument(
        "--limit", type=int, default=100, metavar="N", help="show the newest N calls (0: all)"
    )
    history.add_argument(
        "--json", action="store_true", help="print a JSON array of the calls, for scripts"
    )
    history.set_defaults(sync=history_command, log_level="WARNING")
