"""``stats`` and ``top``: what each tool process has served, in its own words.

Both ask every tool process on the bus with :meth:`ToolManager.fleet_stats`; each
process answers for all the tools it serves (calls, errors, cancellations, p50/p99
durations, calls in flight and the concurrency limit; its host, pid, version and uptime), so
the numbers are the same whichever manager asks. ``stats`` prints one row per tool
instance, or each process's answer as JSON; ``top`` asks again every ``--interval``
seconds and shows one row per tool, its replicas summed up, with calls per second
measured between two answers of the same instance.

A call its caller cancelled (a caller's timeout included) is no error: ``Err %`` is the
errors among the calls that were not cancelled, and the cancelled ones have their column.
"""

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

import anyio
from rich import box
from rich.console import Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..._agent.manager import ToolManager
from ..._protocol.fleet_messages import ToolStatsEntry, ToolStatsMessage
from ..common import (
    EXIT_OK,
    CliError,
    StopRequest,
    connected_manager,
    print_json,
    print_wide,
    settle,
    stderr,
    stdout,
    where,
)
from ..options import Commands, add_command, add_expect_argument, positive_seconds
from .registry import collect_registrations

SORT_KEYS = ("name", "calls", "rate", "p99", "errors")
"""What ``top --sort`` orders the tools by (every key but ``name`` puts the largest first)."""

KEYS = {"n": "name", "c": "calls", "r": "rate", "p": "p99", "e": "errors"}
"""Keys that change the order while ``top`` runs on a terminal (``q`` quits)."""

KEY_HINT = "keys: n name, c calls, r rate, p p99, e errors; q or Ctrl-C quits"


async def ask(manager: ToolManager, wait: float) -> list[ToolStatsMessage]:
    """Every tool process's answer, within ``wait`` seconds for the silent ones."""
    try:
        return await manager.fleet_stats(wait=wait)
    except RuntimeError as exc:
        raise CliError(f"cannot ask the tool processes: {exc}") from None


# -- stats ------------------------------------------------------------------------------


async def stats_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``stats``: collect registrations (as ``list`` does), ask each process, print."""
    async with connected_manager(args) as manager:
        await collect_registrations(manager, args)
        with stderr.status(Text("Asking the tool processes...")):
            answers = await ask(manager, args.wait)
        silent = _silent(manager, answers)
    if args.json:
        print_json([answer.model_dump(mode="json", exclude_none=True) for answer in answers])
    elif answers:
        print_wide(stats_table(answers, where(args)))
    else:
        stderr.print(f"No tool process answered on {where(args)}.")
    if silent:
        stderr.print(
            f"No answer within {args.wait:g} s from {len(silent)} process(es) that registered "
            f"tools (older versions and other implementations do not answer): "
            + "; ".join(f"{source}: {', '.join(names)}" for source, names in silent.items())
        )
    return EXIT_OK


def _silent(manager: ToolManager, answers: Sequence[ToolStatsMessage]) -> dict[str, list[str]]:
    """Client ids that registered tools but did not answer, with their tools' names."""
    answered = {answer.source for answer in answers}
    silent: dict[str, list[str]] = {}
    for entry in manager.tools_by_id.values():
        source = entry.get("source_client_id")
        if source and source not in answered:
            silent.setdefault(source, []).append(entry["name"])
    return {source: sorted(names) for source, names in sorted(silent.items())}


def stats_table(answers: Sequence[ToolStatsMessage], broker: str) -> Table:
    """One row per tool instance, by tool name, then process."""
    rows = sorted(
        ((entry, answer) for answer in answers for entry in answer.tools),
        key=lambda pair: (pair[0].tool_name, process_label(pair[1]), pair[0].tool_id),
    )
    table = _table(f"{len(rows)} tool instance(s) in {len(answers)} process(es) on {broker}")
    table.add_column("Tool", overflow="fold")
    table.add_column("Process", overflow="fold")
    headers = ("Calls", "Errors", "Err %", "Cancelled", "p50 ms", "p99 ms", "In flight", "Uptime")
    for header in headers:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("Version", no_wrap=True)
    for entry, answer in rows:
        table.add_row(
            Text(entry.tool_name, style="bold"),
            process_label(answer),
            str(entry.calls),
            _errors(entry.errors),
            error_rate(entry.errors, entry.calls, entry.cancelled),
            str(entry.cancelled),
            milliseconds(entry.p50_ms),
            milliseconds(entry.p99_ms),
            load(entry.in_flight, entry.max_concurrency),
            duration(answer.uptime_seconds),
            answer.version,
        )
    return table


# -- formatting ----------------------------------------------------------------------


def _table(title: str | None = None) -> Table:
    """A table without a frame, its columns two spaces apart: numbers never wrap."""
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )


def process_label(answer: ToolStatsMessage) -> str:
    """``host:pid``, the host cut at its first dot."""
    return f"{answer.host.split('.', 1)[0] or '?'}:{answer.pid}"


def milliseconds(value: float | None) -> str:
    """A duration in ms to three significant digits or so; ``-`` before any call."""
    if value is None:
        return "-"
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:.0f}"


def percent(part: int, whole: int) -> str:
    """``part`` of ``whole`` in percent; ``-`` when ``whole`` is 0."""
    return f"{100 * part / whole:.1f}" if whole else "-"


def error_rate(errors: int, calls: int, cancelled: int) -> str:
    """Errors in percent of the calls that were not cancelled; ``-`` when there is none."""
    return percent(errors, calls - cancelled)


def load(in_flight: int, limit: int | None) -> str:
    """Calls in flight over the concurrency limit (``3/8``); just the calls without one."""
    return str(in_flight) if limit is None else f"{in_flight}/{limit}"


def duration(seconds: float) -> str:
    """A time span the way ``top`` shows uptimes: ``42s``, ``5m07s``, ``3h05m``, ``2d04h``."""
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _errors(count: int) -> Text:
    return Text(str(count), style="red" if count else "")


# -- top ------------------------------------------------------------------------------


@dataclass
class ToolSummary:
    """One tool over all its replicas, as ``top`` shows it."""

    name: str
    replicas: int
    calls: int
    errors: int
    """Calls that failed (cancelled ones are not errors)."""
    cancelled: int
    """Calls their caller cancelled."""
    rate: float | None
    """Calls per second summed over the replicas measured twice; None before that."""
    p50_ms: float | None
    """The slowest replica's median."""
    p99_ms: float | None
    """The slowest replica's 99th percentile."""
    in_flight: int
    limit: int | None
    """Sum of the replicas' concurrency limits; None when one of them has none."""


class FleetView:
    """What ``top`` shows: the latest answers, summed per tool, with rates.

    A rate needs two answers from the same tool instance, keyed by (client id, tool
    id): the calls it ended between them over the time between them, by the clock
    of the process that answered (the answers' timestamps), so delays on the way do
    not skew it. An instance seen for the first time has no rate yet.
    """

    def __init__(self, sort: str = "rate") -> None:
        if sort not in SORT_KEYS:
            raise ValueError(f"sort by one of {', '.join(SORT_KEYS)}, not {sort!r}")
        self.sort = sort
        self.answers: list[ToolStatsMessage] = []
        self._previous: dict[tuple[str, str], tuple[int, float]] = {}
        self._rates: dict[tuple[str, str], float] = {}

    def update(self, answers: Sequence[ToolStatsMessage]) -> None:
        """Take a new round of answers (instances that did not answer drop out)."""
        current: dict[tuple[str, str], tuple[int, float]] = {}
        rates: dict[tuple[str, str], float] = {}
        for answer in answers:
            for entry in answer.tools:
                key = (answer.source or "", entry.tool_id)
                current[key] = (entry.calls, answer.timestamp)
                before = self._previous.get(key)
                if before is None:
                    continue
                calls, stamp = before
                # Fewer calls than before: not the same process any more; no rate yet.
                if answer.timestamp > stamp and entry.calls >= calls:
                    rates[key] = (entry.calls - calls) / (answer.timestamp - stamp)
        self.answers = list(answers)
        self._previous = current
        self._rates = rates

    def summaries(self) -> list[ToolSummary]:
        """One summary per tool name, in the order of :attr:`sort`."""
        by_name: dict[str, list[tuple[str, ToolStatsEntry]]] = {}
        for answer in self.answers:
            for entry in answer.tools:
                by_name.setdefault(entry.tool_name, []).append((answer.source or "", entry))
        summaries = [self._summary(name, group) for name, group in by_name.items()]
        return sorted(summaries, key=self._order)

    def _summary(self, name: str, group: list[tuple[str, ToolStatsEntry]]) -> ToolSummary:
        entries = [entry for _, entry in group]
        rates = [
            self._rates[key]
            for key in ((source, entry.tool_id) for source, entry in group)
            if key in self._rates
        ]
        limits = [entry.max_concurrency for entry in entries]
        return ToolSummary(
            name=name,
            replicas=len(entries),
            calls=sum(entry.calls for entry in entries),
            errors=sum(entry.errors for entry in entries),
            cancelled=sum(entry.cancelled for entry in entries),
            rate=sum(rates) if rates else None,
            p50_ms=_largest(entry.p50_ms for entry in entries),
            p99_ms=_largest(entry.p99_ms for entry in entries),
            in_flight=sum(entry.in_flight for entry in entries),
            limit=None if None in limits else sum(limit or 0 for limit in limits),
        )

    def _order(self, summary: ToolSummary) -> tuple[float, str]:
        if self.sort == "calls":
            return -summary.calls, summary.name
        if self.sort == "rate":
            return -(summary.rate if summary.rate is not None else -1.0), summary.name
        if self.sort == "p99":
            return -(summary.p99_ms if summary.p99_ms is not None else -1.0), summary.name
        if self.sort == "errors":
            return -summary.errors, summary.name
        return 0, summary.name

    def render(self, broker: str, *, hint: str = "") -> RenderableType:
        """The frame: a header line (broker, counts, time), the table, then the order."""
        summaries = self.summaries()
        instances = sum(summary.replicas for summary in summaries)
        header = Text.assemble(
            ("argentic-tools top", "bold"),
            f"  {broker}  ",
            (f"{len(self.answers)} process(es), {len(summaries)} tool(s)", "bold"),
            f", {instances} instance(s)  ",
            datetime.now().strftime("%H:%M:%S"),
        )
        notes = [f"sorted by {self.sort}", "p50/p99: the slowest replica's"]
        notes += [hint] if hint else []
        footer = Text("; ".join(notes), style="dim")
        table = _table()
        table.add_column("Tool", overflow="fold")
        columns = (
            "Replicas",
            "Calls/s",
            "Calls",
            "Errors",
            "Err %",
            "Cancelled",
            "p50 ms",
            "p99 ms",
        )
        for column in columns:
            table.add_column(column, justify="right", no_wrap=True)
        table.add_column("In flight", justify="right", no_wrap=True)
        for summary in summaries:
            table.add_row(
                Text(summary.name, style="bold"),
                str(summary.replicas),
                "-" if summary.rate is None else f"{summary.rate:.1f}",
                str(summary.calls),
                _errors(summary.errors),
                error_rate(summary.errors, summary.calls, summary.cancelled),
                str(summary.cancelled),
                milliseconds(summary.p50_ms),
                milliseconds(summary.p99_ms),
                load(summary.in_flight, summary.limit),
            )
        if not summaries:
            return Group(header, Text(f"No tool process answered yet on {broker}."), footer)
        return Group(header, table, footer)


def _largest(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return max(present) if present else None


async def top_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``top``: redraw the fleet's summary every ``--interval`` seconds until Ctrl-C or ``q``.

    ``--once`` asks twice, ``--interval`` apart (so that calls per second are
    measured), prints that frame and exits. Without a terminal, every frame is
    printed after the one before, as ``top -b`` does. Ctrl-C ends it with status 0.
    """
    view = FleetView(args.sort)
    broker = where(args)
    async with connected_manager(args) as manager:
        # The first answers are awaited only from processes registered by then.
        if args.expect:
            await collect_registrations(manager, args)
        else:
            await settle(manager, args.wait)

        async def sample() -> float:
            """Ask the fleet; the seconds it took."""
            started = anyio.current_time()
            # Answers come at once from every process registered; only a silent one (an
            # older version) makes a round take this long.
            view.update(await ask(manager, max(args.interval, args.wait)))
            return anyio.current_time() - started

        if args.once:
            await sample()
            await anyio.sleep(args.interval)
            await sample()
            print_wide(view.render(broker))
        elif not stdout.is_terminal:
            while True:
                took = await sample()
                print_wide(view.render(broker))
                stdout.print()
                await anyio.sleep(max(args.interval - took, 0))
        else:
            await _live(view, broker, sample, args.interval)
    return EXIT_OK


async def _live(
    view: "FleetView", broker: str, sample: Callable[[], Awaitable[float]], interval: float
) -> None:
    """Redraw ``view`` on the terminal's alternate screen until ``q`` (or a signal)."""
    with (
        anyio.CancelScope() as quit_scope,
        Live(
            Text(f"Asking the tool processes on {broker}..."),
            console=stdout,
            screen=True,
            auto_refresh=False,
        ) as screen,
    ):

        def on_key(key: str) -> None:
            if key == "q":
                quit_scope.cancel()
            elif key in KEYS:
                view.sort = KEYS[key]
                screen.update(view.render(broker, hint=KEY_HINT), refresh=True)

        with terminal_keys(on_key) as keys:
            hint = KEY_HINT if keys else "Ctrl-C quits"
            while True:
                took = await sample()
                screen.update(view.render(broker, hint=hint), refresh=True)
                await anyio.sleep(max(interval - took, 0))


@contextlib.contextmanager
def terminal_keys(on_key: Callable[[str], None]) -> Iterator[bool]:
    """Call ``on_key`` for each key typed on the terminal; yields whether keys are read.

    The terminal is put in cbreak mode (keys arrive at once, unechoed; Ctrl-C still
    sends SIGINT) and restored on the way out. Without a terminal on stdin, or
    without ``termios`` (Windows), nothing is read.
    """
    try:
        import termios
        import tty
    except ImportError:
        yield False
        return
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        yield False
        return
    if not os.isatty(fd):
        yield False
        return
    loop = asyncio.get_running_loop()
    saved = termios.tcgetattr(fd)

    def readable() -> None:
        data = os.read(fd, 64)
        if not data:
            loop.remove_reader(fd)  # end of input: stop watching, or it would spin
            return
        for key in data.decode(errors="ignore"):
            on_key(key)

    tty.setcbreak(fd)
    loop.add_reader(fd, readable)
    try:
        yield True
    finally:
        loop.remove_reader(fd)
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def add_stats_parser(commands: Commands) -> None:
    """``stats``: its options."""
    stats = add_command(
        commands,
        "stats",
        "show what each tool process has served: calls, errors, latency",
        ("argentic-tools stats", "argentic-tools stats --json --expect calculate"),
    )
    stats.add_argument(
        "--json", action="store_true", help="print each process's answer as JSON, for scripts"
    )
    stats.add_argument(
        "--wait",
        type=positive_seconds,
        default=1.0,
        help="at most this many seconds to collect tools (ends once registrations stop), then "
        "at most as long again for the processes' answers (ends once they have all answered)",
    )
    add_expect_argument(stats)
    stats.set_defaults(run=stats_command, log_level="WARNING")


def add_top_parser(commands: Commands) -> None:
    """``top``: its options."""
    top = add_command(
        commands,
        "top",
        "a live view of the fleet: calls per second, errors, latency per tool",
        ("argentic-tools top  # q quits", "argentic-tools top --sort errors --once"),
    )
    top.add_argument(
        "--interval", type=positive_seconds, default=1.0, help="seconds between refreshes"
    )
    top.add_argument(
        "--sort",
        choices=SORT_KEYS,
        default="rate",
        help="order of the tools (rate: calls per second; all but name put the largest first)",
    )
    top.add_argument(
        "--once",
        action="store_true",
        help="print one frame (two samples --interval apart) and exit",
    )
    top.add_argument(
        "--wait",
        type=positive_seconds,
        default=1.0,
        help="seconds to let the tools register before the first frame (ends early once "
        "registrations stop, or once every --expect tool is in), and at most for the "
        "processes' answers in each refresh (ends as soon as they have all answered)",
    )
    add_expect_argument(top)
    top.set_defaults(run=top_command, interactive=True, log_level="WARNING")
