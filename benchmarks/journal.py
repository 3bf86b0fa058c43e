"""The call journal's cost, and a reattach of many pending calls.

``python -m benchmarks.journal`` starts its own mosquitto (tuned as the main benchmark's)
and one tool process (``benchmarks.ours_tool``: ``echo``, ``wait``), then measures, with
``--reps`` interleaved repetitions of a manager without a journal and one with a
:class:`~argentic_tools.SqliteJournal` (a fresh file in a scratch folder each time):

- sequential: ``--sequential`` calls of ``echo``, one at a time: p50 and p99 in ms;
- in flight: ``--calls`` calls of ``echo`` with ``--inflight`` (100) at once: calls/s.

Targets: p50 with the journal within 1.1x of without, calls/s at least 0.9x.

Reattach: a manager with a journal starts ``--pending`` calls of ``wait`` (long enough
never to end during the measure) and is closed (its calls stay running in the journal
and at the tool); a new manager on the same journal and client id is started, and the
time from its start until every call has been sent again (each is pending again in the
new manager) is reported, with the time to read the journal.

Prints a Markdown report and writes it, with its JSON, to a scratch file
(``--update-results``: ``benchmarks/results/journal.md``).
"""

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from argentic_tools import Messager, SqliteJournal, ToolManager, Topics
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto
from benchmarks.harness.machine import git_revision, machine_info
from benchmarks.harness.procs import Children
from benchmarks.harness.results import (
    RESULTS_DIR,
    add_results_arguments,
    results_file,
    stamped,
    write_report,
)
from benchmarks.harness.stats import percentile


async def sequential(manager: ToolManager, count: int) -> list[float]:
    """Milliseconds of each of ``count`` calls made one after the other."""
    times = []
    for i in range(count):
        started = time.perf_counter()
        result = await manager.execute_tool("echo", {"message": f"m{i}"}, timeout=30)
        times.append((time.perf_counter() - started) * 1000)
        if not result.ok:
            raise RuntimeError(f"a call failed: {getattr(result, 'error', result)}")
    return times


async def in_flight(manager: ToolManager, count: int, width: int) -> float:
    """Calls per second for ``count`` calls, ``width`` at once."""
    slots = asyncio.Semaphore(width)
    failed = 0

    async def one(i: int) -> None:
        nonlocal failed
        async with slots:
            result = await manager.execute_tool("echo", {"message": f"f{i}"}, timeout=60)
            failed += not result.ok

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    elapsed = time.perf_counter() - started
    if failed:
        raise RuntimeError(f"{failed} calls failed")
    return count / elapsed


async def one_rep(
    url: str, topics: Topics, args: argparse.Namespace, journaled: bool
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="journal-bench-"))
    journal = SqliteJournal(folder / "calls.journal") if journaled else None
    async with (
        Messager(url, client_id=f"bench-{uuid.uuid4().hex[:8]}") as messager,
        ToolManager(messager, topics=topics, journal=journal, log_level="WARNING") as manager,
    ):
        await manager.wait_for_tool("echo", timeout=20)
        await sequential(manager, 20)  # warm-up
        times = await sequential(manager, args.sequential)
        rate = await in_flight(manager, args.calls, args.inflight)
    return {
        "journal": journaled,
        "p50": percentile(times, 50),
        "p99": percentile(times, 99),
        "rate": rate,
    }


async def reattach(url: str, topics: Topics, args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="journal-reattach-"))
    path = folder / "calls.journal"
    client_id = f"bench-{uuid.uuid4().hex[:8]}"
    async with (
        Messager(url, client_id=client_id) as messager,
        ToolManager(messager, topics=topics, journal=path, log_level="WARNING") as manager,
    ):
        await manager.wait_for_tool("wait", timeout=20)
        calls = [
            asyncio.create_task(
                manager.execute_tool("wait", {"seconds": 3600}, f"job-{i}", timeout=7200)
            )
            for i in range(args.pending)
        ]
        deadline = time.monotonic() + 300
        while sum(1 for p in manager._calls.pending.values() if p.published) < args.pending:
            if time.monotonic() > deadline:
                raise RuntimeError("the calls were not all sent within 300 s")
            await asyncio.sleep(0.05)
    await asyncio.gather(*calls, return_exceptions=True)
    started = time.perf_counter()
    left = await SqliteJournal(path).unfinished()
    read = time.perf_counter() - started
    started = time.perf_counter()
    async with (
        Messager(url, client_id=client_id) as messager,
        ToolManager(messager, topics=topics, journal=path, log_level="WARNING") as manager,
    ):
        deadline = time.monotonic() + 300
        while sum(1 for p in manager._calls.pending.values() if p.published) < len(left):
            if time.monotonic() > deadline:
                raise RuntimeError("the calls were not all waited on again within 300 s")
            await asyncio.sleep(0.01)
        again = time.perf_counter() - started
        for task_id in [p.task_id for p in manager._calls.pending.values()]:
            await manager.cancel(task_id, "benchmark over")
    return {"pending": len(left), "read_s": read, "reattach_s": again}


async def measure(url: str, topics: Topics, args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    for rep in range(args.reps):
        for journaled in (False, True):
            cli.log(
                f"rep {rep + 1}/{args.reps}: {'with' if journaled else 'without'} a journal ..."
            )
            rows.append(await one_rep(url, topics, args, journaled))
    cli.log(f"reattach of {args.pending} pending calls ...")
    return {"rows": rows, "reattach": await reattach(url, topics, args)}


def spread(values: list[float], fmt: str) -> str:
    middle, low, high = (
        fmt.format(v) for v in (statistics.median(values), min(values), max(values))
    )
    return f"{middle} ({low}-{high})"


def report(measured: dict[str, Any], info: dict[str, Any], args: argparse.Namespace) -> str:
    rows = measured["rows"]
    plain = [r for r in rows if not r["journal"]]
    kept = [r for r in rows if r["journal"]]
    p50_ratio = [k["p50"] / p["p50"] for p, k in zip(plain, kept, strict=True)]
    rate_ratio = [k["rate"] / p["rate"] for p, k in zip(plain, kept, strict=True)]
    p50_met = statistics.median(p50_ratio) <= 1.1
    rate_met = statistics.median(rate_ratio) >= 0.9
    again = measured["reattach"]
    lines = [
        "# The call journal",
        "",
        f"Code: {info.get('code')}; {info.get('cpu_count', '?')} cores; load before "
        f"{info.get('load_before', ['?'])[0]}, after {info.get('load_after', ['?'])[0]:.2f}. "
        f"{args.reps} interleaved repetitions, median (min-max).",
        "",
        "| measure | without journal | with journal | ratio | target | |",
        "|---|---|---|---|---|---|",
        f"| echo p50, ms ({args.sequential} sequential) "
        f"| {spread([r['p50'] for r in plain], '{:.3f}')} "
        f"| {spread([r['p50'] for r in kept], '{:.3f}')} | {spread(p50_ratio, '{:.2f}')} | <= 1.1 "
        f"| {'met' if p50_met else '**not met**'} |",
        f"| echo p99, ms | {spread([r['p99'] for r in plain], '{:.3f}')} "
        f"| {spread([r['p99'] for r in kept], '{:.3f}')} | | | |",
        f"| echo calls/s, {args.inflight} in flight ({args.calls} calls) "
        f"| {spread([r['rate'] for r in plain], '{:,.0f}')} "
        f"| {spread([r['rate'] for r in kept], '{:,.0f}')} "
        f"| {spread(rate_ratio, '{:.2f}')} | >= 0.9 | {'met' if rate_met else '**not met**'} |",
        "",
        f"Reattach: {again['pending']:,} calls left running in the journal; reading them took "
        f"{again['read_s']:.2f} s, and a new manager had sent every one again "
        f"{again['reattach_s']:.2f} s after it started.",
        "",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    prefix = f"journal{uuid.uuid4().hex[:8]}"
    info = machine_info(binary)
    info["load_before"] = list(os.getloadavg())
    try:
        info["code"] = args.label or git_revision()
    except Exception:  # not a git checkout (or no git): say so
        info["code"] = args.label or "not a git checkout"
    with Mosquitto(binary) as broker, Children() as children:
        children.python(
            "tools",
            "benchmarks.ours_tool",
            "--broker",
            broker.url,
            "--topic-prefix",
            prefix,
            "--max-concurrency",
            "20000",
            "--log-level",
            "WARNING",
        )
        measured = cli.run_async(measure(broker.url, Topics.with_prefix(prefix), args))
    info["load_after"] = list(os.getloadavg())
    text = report(measured, info, args)
    text = stamped(text)  # printed as written
    print(text)
    path = results_file(args)
    write_report(
        path,
        text,
        {
            "config": {k: v for k, v in vars(args).items() if k != "results_place"},
            "machine": info,
            **measured,
        },
    )
    cli.log(f"report written to {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.journal",
        "The call journal's cost per call, and a reattach of many pending calls.",
        __doc__,
    )
    parser.add_argument("--reps", type=cli.positive_int, default=3, help="repetitions (3)")
    parser.add_argument(
        "--sequential", type=cli.positive_int, default=500, help="sequential calls (500)"
    )
    parser.add_argument(
        "--calls", type=cli.positive_int, default=5000, help="calls in flight in all (5000)"
    )
    parser.add_argument(
        "--inflight", type=cli.positive_int, default=100, help="calls at once (100)"
    )
    parser.add_argument(
        "--pending", type=cli.positive_int, default=10_000, help="calls to reattach (10000)"
    )
    parser.add_argument("--label", help="names the code measured in the report")
    add_results_arguments(
        parser, "--results", committed=RESULTS_DIR / "journal.md", help_text="report file"
    )
    cli.add_mosquitto_argument(parser)
    args = cli.parse(parser, argv)
    return cli.exit_status(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
