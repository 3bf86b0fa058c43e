"""Stream pacing: 100,000 chunks of 1 KB to a fast reader, a slow one and one that stops.

``python -m benchmarks.stream_pacing`` starts its own mosquitto on a free 127.0.0.1 port
with mosquitto's own limits per client (``max_queued_messages 1000`` beyond
``max_inflight_messages 20``, as a stock install runs; beyond them the broker drops QoS 1
messages silently; ``--max-queued`` raises the queue, for a run where it never
overflows), and one tool process (this module with ``--serve``) whose async
generator yields ``--count`` chunks of ``--size`` characters as fast as it can. A
``stream_tool`` call reads them with:

- fast: a reader that takes each chunk as it comes;
- slow: a reader that takes at most ``--slow-rate`` chunks/s (it sleeps 10 ms every
  ``slow-rate / 100`` chunks);
- stops: a reader that takes 1,000 chunks and then nothing more, in a call with a
  ``--stop-timeout`` (10 s); once the call has ended it reads what the stream holds.

Each reader checks that every chunk is the next in order. Reported per reader: the
outcome (``ok`` or the error code), delivered (chunks the reader got), sent (chunks that
left the tool, its own count, written when its generator closes), not delivered (sent -
delivered: dropped by the broker, or by the caller: those after a gap, and those that
came after the call had ended), chunks/s
(delivered / seconds from the call to the last chunk read; none for the reader that
stops), the seconds from the call to its end, and the tool's own count of its waits for
its reader's credit (``slowed`` in its stats; "-" for a tool without it).
Every figure is the median and range over ``--reps`` repetitions.

The script runs against whichever ``argentic_tools`` it imports, so the same command gives
the figures before and after a change (``--label`` names the code measured). Prints a
Markdown report and writes it, with its JSON, to a scratch file (``--update-results``:
``benchmarks/results/stream_pacing.md``).
"""

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from argentic_tools import Messager, ToolContext, ToolManager, Topics, serve_main, tool
from benchmarks.harness import cli
from benchmarks.harness.broker import Config, Mosquitto
from benchmarks.harness.machine import git_revision, machine_info
from benchmarks.harness.procs import Children
from benchmarks.harness.results import (
    RESULTS_DIR,
    add_results_arguments,
    results_file,
    stamped,
    write_report,
)

STOP_AFTER = 1000
"""Chunks the reader that stops takes before it stops."""

READERS = ("fast", "slow", "stops")

STOCK_LIMITS = """\
listener {port} 127.0.0.1
allow_anonymous true
set_tcp_nodelay true
max_inflight_messages 20
max_queued_messages {queued}
persistence false
log_dest stdout
log_type error
log_type warning
"""


def stock_limits(queued: int) -> Config:
    """mosquitto's own limits per client (``queued``: its queue), Nagle off, as root if run so."""

    def config(port: int, workdir: Path) -> str:
        text = STOCK_LIMITS.format(port=port, queued=queued)
        return text + ("user root\n" if os.geteuid() == 0 else "")

    return config


@tool
async def chunks(context: ToolContext, count: int, size: int, path: str) -> AsyncIterator[str]:
    """Yield ``count`` chunks of ``size`` characters as fast as they can go; on closing,
    write to ``path`` how many chunks left this process."""
    try:
        for i in range(count):
            yield f"{i:08d}".ljust(size, "x")
    finally:
        control = context._control
        credit = getattr(control, "credit", None)  # a tool without stream credit has none
        sent = credit.sent if credit is not None else getattr(control, "chunks", 0)
        Path(path).write_text(str(sent))  # noqa: ASYNC240 - a few bytes, once per call


async def read_stream(
    manager: ToolManager, reader: str, count: int, size: int, args: argparse.Namespace, path: Path
) -> dict[str, Any]:
    """One call read by ``reader``: what it got, in order, and how the call ended."""
    delivered = 0
    out_of_order = 0
    batch = max(args.slow_rate // 100, 1)
    timeout = args.stop_timeout if reader == "stops" else args.call_timeout
    started = time.perf_counter()
    last = ended = started
    arguments = {"count": count, "size": size, "path": str(path)}
    async with manager.stream_tool("chunks", arguments, timeout=timeout) as stream:
        async for chunk in stream:
            if int(chunk[:8]) != delivered:
                out_of_order += 1
            delivered += 1
            last = time.perf_counter()
            if reader == "slow" and delivered % batch == 0:
                await asyncio.sleep(0.01)
            if reader == "stops" and delivered == STOP_AFTER:
                runner = stream._runner
                assert runner is not None
                await asyncio.wait({runner})  # the reader reads no more until the call ends
                ended = time.perf_counter()
    done = time.perf_counter()
    result = stream.result
    assert result is not None
    sent = await wait_for_count(path)
    outcome = "ok" if result.ok else str(getattr(result, "error_code", None) or "error")
    row: dict[str, Any] = {
        "reader": reader,
        "outcome": outcome,
        "error": None if result.ok else getattr(result, "error", None),
        "details": None if result.ok else getattr(result, "details", None),
        "delivered": delivered,
        "out_of_order": out_of_order,
        "sent": sent,
        "not_delivered": None if sent is None else sent - delivered,
        "call_seconds": (ended if reader == "stops" else done) - started,
        # The stopping reader's rate means nothing: it reads no more on purpose.
        "chunks_per_s": (
            delivered / (last - started) if reader != "stops" and last > started else None
        ),
    }
    return row


async def wait_for_count(path: Path, timeout: float = 30) -> int | None:
    """The tool's count of chunks sent, once its generator has closed (None if never)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while True:
                with contextlib.suppress(FileNotFoundError, ValueError):
                    return int(path.read_text())  # noqa: ASYNC240 - a few bytes
                await asyncio.sleep(0.05)  # another process writes it
    return None


async def slowed(manager: ToolManager) -> int | None:
    """The tool's count of its waits for a reader's credit (None: its stats lack it)."""
    answers = await manager.fleet_stats(wait=10)
    counts = [
        getattr(entry, "slowed", None)
        for answer in answers
        for entry in answer.tools
        if entry.tool_name == "chunks"
    ]
    return None if not counts or None in counts else sum(c for c in counts if c is not None)


async def measure(url: str, topics: Topics, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    async with (
        Messager(url) as messager,
        ToolManager(messager, topics=topics, default_timeout=args.call_timeout) as manager,
    ):
        await manager.wait_for_tool("chunks", timeout=30)
        with tempfile.TemporaryDirectory() as directory:
            for rep in range(args.reps):
                for reader in READERS:
                    path = Path(directory) / f"{reader}-{rep}"
                    before = await slowed(manager)
                    cli.log(f"rep {rep + 1}/{args.reps}: {reader} reader ...")
                    row = await read_stream(manager, reader, args.count, args.size, args, path)
                    after = await slowed(manager)
                    row["rep"] = rep
                    row["slowed"] = None if before is None or after is None else after - before
                    cli.log(
                        f"  {row['outcome']}: {row['delivered']} delivered, {row['sent']} sent, "
                        f"{row['chunks_per_s'] or 0:.0f} chunks/s, slowed {row['slowed']}"
                    )
                    rows.append(row)
    return rows


def cell(values: list[float | int | None], fmt: str = "{:,.0f}") -> str:
    """``median (min-max)`` of the values present, or "-"."""
    present = [v for v in values if v is not None]
    if not present:
        return "-"
    median = fmt.format(statistics.median(present))
    if len(present) == 1 or min(present) == max(present):
        return median
    return f"{median} ({fmt.format(min(present))}-{fmt.format(max(present))})"


def report(rows: list[dict[str, Any]], info: dict[str, Any], args: argparse.Namespace) -> str:
    versions = info["versions"]
    load = info["load_before"][0], info["load_after"][0]
    lines = [
        "# Stream pacing: 100,000 chunks to a fast, a slow and a stopping reader",
        "",
        f"`python -m benchmarks.stream_pacing --count {args.count} --reps {args.reps}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; code: {info['code']}; "
        f"{info['cpu_count']} cores (load {load[0]:.1f} before, {load[1]:.1f} after), "
        f"Python {versions['python']}, mosquitto {versions['mosquitto']}.",
        "",
        f"{args.count:,} chunks of {args.size:,} characters from an async generator tool; "
        f"broker: max_queued_messages {args.max_queued:,}; "
        f"slow reader: at most {args.slow_rate:,} chunks/s; the stopping reader takes "
        f"{STOP_AFTER:,} chunks, then nothing, in a call with a {args.stop_timeout:g} s "
        f"timeout. Cells: median (min-max) over {args.reps} repetition(s).",
        "",
        "| reader | outcomes | delivered | sent by the tool | not delivered | chunks/s "
        "| call ended after, s | tool slowed (waits for credit) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for reader in READERS:
        mine = [r for r in rows if r["reader"] == reader]
        outcomes = ", ".join(sorted({r["outcome"] for r in mine}))
        lines.append(
            f"| {reader} | {outcomes} | {cell([r['delivered'] for r in mine])} | "
            f"{cell([r['sent'] for r in mine])} | {cell([r['not_delivered'] for r in mine])} | "
            f"{cell([r['chunks_per_s'] for r in mine])} | "
            f"{cell([r['call_seconds'] for r in mine], '{:.1f}')} | "
            f"{cell([r['slowed'] for r in mine])} |"
        )
    lines += ["", "How each call ended (first repetition):", ""]
    for reader in READERS:
        first = next(r for r in rows if r["reader"] == reader)
        text = "the whole result" if first["error"] is None else first["error"]
        lines.append(f"- {reader}: {first['outcome']}: {text}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    prefix = f"pace{uuid.uuid4().hex[:8]}"
    info = machine_info(binary)
    try:
        info["code"] = args.label or git_revision()
    except Exception:  # not a git checkout (or no git): say so
        info["code"] = args.label or "not a git checkout"
    config = stock_limits(args.max_queued)
    with Mosquitto(binary, config=config) as broker, Children() as children:
        children.python("tools", "benchmarks.stream_pacing", "--serve", broker.url, prefix)
        rows = cli.run_async(measure(broker.url, Topics.with_prefix(prefix), args))
    info["load_after"] = list(os.getloadavg())
    text = report(rows, info, args)
    text = stamped(text)  # printed as written
    print(text)
    path = results_file(args)
    write_report(path, text, {"config": vars_of(args), "machine": info, "rows": rows})
    cli.log(f"report written to {path}")
    return 0


def vars_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        key: value
        for key, value in vars(args).items()
        if key
        in (
            "count",
            "size",
            "reps",
            "slow_rate",
            "stop_timeout",
            "call_timeout",
            "max_queued",
            "label",
        )
    }


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.stream_pacing",
        "Stream pacing: chunks delivered and lost, and chunks/s, for three readers.",
        __doc__,
    )
    options: tuple[tuple[str, Any, float, str], ...] = (
        ("--count", cli.positive_int, 100_000, "chunks (100000)"),
        ("--size", cli.positive_int, 1024, "characters a chunk (1024)"),
        ("--reps", cli.positive_int, 3, "repetitions (3)"),
        ("--slow-rate", cli.positive_int, 2000, "the slow reader's chunks/s (2000)"),
        ("--stop-timeout", cli.positive_float, 10.0, "the stopping reader's call timeout (10)"),
        ("--call-timeout", cli.positive_float, 600.0, "the other calls' timeout (600)"),
        ("--max-queued", cli.positive_int, 1000, "the broker's max_queued_messages (1000)"),
    )
    for flag, kind, default, text in options:
        parser.add_argument(flag, type=kind, default=default, help=text)
    parser.add_argument("--label", help="names the code measured in the report")
    add_results_arguments(
        parser, "--results", committed=RESULTS_DIR / "stream_pacing.md", help_text="report file"
    )
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--serve", nargs=2, metavar=("URL", "PREFIX"), help=argparse.SUPPRESS)
    args = cli.parse(parser, argv)
    if args.serve:
        url, prefix = args.serve
        serve_main([chunks], ["--broker", url, "--topic-prefix", prefix, "--log-level", "WARNING"])
        return 0
    return cli.exit_status(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
