"""``tasks``: the calls a call journal keeps: list them, show one, wait for one, cancel one.

The journal is the file of ``ToolManager(journal=FILE)``. ``list``, ``show`` and ``wait``
read it (the manager writing it may keep running); ``wait`` reads it again until the call
has ended, which the manager (or the next one started on the journal) writes. ``cancel``
connects to the broker and tells the call's tool to stop, as the manager that made the
call would: the tool answers ``cancelled``, and the manager, now or when it comes back,
writes that outcome.
"""

import argparse
import time
from pathlib import Path

import anyio
from rich.table import Table

from ..._agent.records.journal import RUNNING, JournaledCall
from ..._agent.records.sqlite_journal import SqliteJournal
from ..._protocol.messages import ToolCancelMessage
from ..common import (
    EXIT_OK,
    CliError,
    StopRequest,
    messager_from,
    print_json,
    print_wide,
    stderr,
    topics_from,
)
from ..options import Commands, add_command

EXIT_NOT_ENDED = 1
"""``tasks wait``: the call had not ended when the wait ran out."""

WAIT_POLL_SECONDS = 0.2
"""How often ``tasks wait`` reads the journal again."""


async def tasks_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``tasks ACTION``: list, show, wait or cancel over the journal ``--journal``."""
    journal = SqliteJournal(Path(args.journal))
    if not journal.path.is_file():
        raise CliError(f"--journal {args.journal}: no such file")
    if args.action == "list":
        calls = journal.newest(args.status, args.limit)
        if args.json:
            print_json([_as_json(call) for call in calls])
        elif not calls:
            stderr.print(f"No calls in {journal.path}.")
        else:
            print_wide(_table(calls, f"{len(calls)} call(s) in {journal.path}, newest first"))
        return EXIT_OK
    if args.id is None:
        raise CliError(f"tasks {args.action} needs the call's id (its label or task id)")
    call = _find(journal, args.id)
    if args.action == "show":
        print_json(_as_json(call))
        return EXIT_OK
    if args.action == "wait":
        return await _wait(journal, call, args.timeout)
    return await _cancel(args, call)


def _find(journal: SqliteJournal, key: str) -> JournaledCall:
    call = journal.lookup(key)
    if call is None:
        raise CliError(f"no call {key!r} in {journal.path}")
    return call


async def _wait(journal: SqliteJournal, call: JournaledCall, timeout: float | None) -> int:
    with anyio.move_on_after(timeout):
        while call.status == RUNNING:
            await anyio.sleep(WAIT_POLL_SECONDS)
            call = _find(journal, call.task_id)
    print_json(_as_json(call))
    return EXIT_OK if call.status != RUNNING else EXIT_NOT_ENDED


async def _cancel(args: argparse.Namespace, call: JournaledCall) -> int:
    if call.status != RUNNING:
        raise CliError(f"call {call.key!r} has already ended ({call.status})")
    topics = topics_from(args)
    cancel = ToolCancelMessage(
        source=call.caller,  # the tool matches a cancellation to its task's caller
        task_id=call.task_id,
        tool_id=call.tool_id,
        reason=args.reason,
    )
    async with messager_from(args) as messager:
        await messager.publish(topics.call(call.tool_id), cancel)
    stderr.print(f"asked tool {call.tool_name!r} ({call.tool_id}) to stop {call.key!r}")
    return EXIT_OK


def _as_json(call: JournaledCall) -> dict[str, object]:
    return {
        "id": call.key,
        "task_id": call.task_id,
        "tool": call.tool_name,
        "tool_id": call.tool_id,
        "status": call.status,
        "started_at": call.started_at,
        "ended_at": call.ended_at,
        "timeout": call.timeout,
        "restarts": call.restarts,
        "arguments": call.arguments,
        "progress": call.progress,
        "result": call.result,
    }


def _table(calls: list[JournaledCall], title: str) -> Table:
    table = Table(title=title)
    for column in ("started", "id", "tool", "status", "took", "restarts", "progress"):
        table.add_column(column)
    for call in calls:
        took = (call.ended_at or time.time()) - call.started_at
        progress = call.progress or {}
        done = progress.get("progress")
        total = progress.get("total")
        table.add_row(
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(call.started_at)),
            call.key,
            call.tool_name,
            call.status,
            f"{took:.1f} s",
            str(call.restarts) if call.restarts else "",
            "" if done is None else (f"{done:g}/{total:g}" if total else f"{done:g}"),
        )
    return table


def add_tasks_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``tasks`` command's own arguments."""
    parser.add_argument("action", choices=("list", "show", "wait", "cancel"))
    parser.add_argument("id", nargs="?", help="the call: its label (task_id_override) or task id")
    parser.add_argument(
        "--journal", required=True, metavar="FILE", help="the file of ToolManager(journal=FILE)"
    )
    parser.add_argument(
        "--status", default=None, help="list: only calls with this status (running, success, ...)"
    )
    parser.add_argument("--limit", type=int, default=100, metavar="N", help="list: the newest N")
    parser.add_argument("--json", action="store_true", help="list: a JSON array, for scripts")
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS", help="wait: at most this long"
    )
    parser.add_argument(
        "--reason", default="cancelled with argentic-tools tasks cancel", help="cancel: why"
    )


def add_parser(commands: Commands) -> None:
    """``tasks``: its subcommands and their options."""
    tasks = add_command(
        commands,
        "tasks",
        "list, show, wait for or cancel the calls a call journal keeps",
        (
            "argentic-tools tasks list --journal calls.journal --status running",
            "argentic-tools tasks show report-42 --journal calls.journal",
            "argentic-tools tasks wait report-42 --journal calls.journal --timeout 600",
            "argentic-tools tasks cancel report-42 --journal calls.journal",
        ),
    )
    add_tasks_arguments(tasks)
    tasks.set_defaults(run=tasks_command, log_level="WARNING")
