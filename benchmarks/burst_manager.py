"""The manager's side of one burst (``benchmarks.burst``), in a fresh process of its own.

``python -m benchmarks.burst_manager --broker URL --result-file FILE [options]`` starts a
tool process serving ``burst_sleep`` (``benchmarks.burst_tool``), fires ``--calls`` calls
at it at once from one ToolManager, measures the manager's memory per waiting call once
every call has started and none has returned, and writes what it measured to
``--result-file`` as JSON. A process of its own, so that its memory is measured alone.
"""

import argparse
import asyncio
import gc
import json
import logging
import os
import statistics
import tracemalloc
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import argentic_tools
from argentic_tools import Messager, ToolManager, ToolResult, Topics
from benchmarks.harness import cli
from benchmarks.harness.measure import PeakSampler, proc_status_kib
from benchmarks.harness.procs import Children

TOOL = "burst_sleep"


def window_of(manager: ToolManager, tool_id: str) -> Any:
    """The manager's flow-control window for the tool instance (None without flow control).

    Read only for the report (how many calls it holds back); a library without per-tool
    flow control has none.
    """
    calls = getattr(manager, "_calls", None)
    lookup = getattr(calls, "window_of", None)
    return lookup(tool_id) if callable(lookup) else None


def classify(result: ToolResult, n: int) -> str:
    if result.ok:
        return "success" if getattr(result, "result", None) == n else "wrong_result"
    return getattr(result, "error_code", None) or str(result.status.value)


def by_package(snapshot: tracemalloc.Snapshot) -> dict[str, int]:
    """Traced bytes grouped by where they were allocated (groups under 1 KiB left out)."""
    groups: Counter[str] = Counter()
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename.replace(os.sep, "/")
        if "/argentic_tools/" in name:
            group = "argentic_tools"
        elif "/paho/" in name:
            group = "paho-mqtt"
        elif "/aiomqtt/" in name:
            group = "aiomqtt"
        elif "/asyncio/" in name:
            group = "asyncio"
        elif name.endswith("benchmarks/burst_manager.py"):
            group = "this benchmark (the callers' tasks)"
        else:
            group = "other: " + "/".join(name.rsplit("/", 2)[-2:])
        groups[group] += stat.size
    return {group: size for group, size in groups.most_common() if size >= 1024}


async def burst(args: argparse.Namespace) -> dict[str, Any]:
    url = args.broker
    prefix = f"burst{uuid.uuid4().hex[:8]}"
    topics = Topics.with_prefix(prefix)
    with Children() as children:
        tool_proc = children.python(
            "tool",
            "benchmarks.burst_tool",
            "--broker",
            url,
            "--topic-prefix",
            prefix,
            "--max-concurrency",
            str(args.concurrency),
            "--log-level",
            "WARNING",
        )
        async with (
            Messager(url, will_topic=None, log_level="WARNING") as messager,
            ToolManager(messager, log_level="WARNING", topics=topics) as manager,
        ):
            info = await manager.wait_for_tool(TOOL, timeout=30)
            advertised = info.metadata.get("max_concurrency")
            # Warm up every code path once, so first-use allocations are not counted.
            await asyncio.gather(
                *(manager.execute_tool(TOOL, {"n": n, "seconds": 0}, timeout=10) for n in range(50))
            )
            banner = tool_proc.log_path.read_text(errors="replace").partition("\n")[0]
            return await fire(args, manager, info.id, advertised, banner)


async def fire(
    args: argparse.Namespace,
    manager: ToolManager,
    tool_id: str,
    advertised: Any,
    tool_banner: str,
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    outcomes: list[str] = [""] * args.calls
    ended: list[float] = [0.0] * args.calls

    async def one(n: int) -> None:
        result = await manager.execute_tool(
            TOOL, {"n": n, "seconds": args.seconds}, timeout=args.timeout
        )
        outcomes[n] = classify(result, n)
        ended[n] = loop.time()

    gc.collect()
    rss_before = proc_status_kib("VmRSS")

    # The most calls held in the manager and outstanding at the tool at once.
    sampler = PeakSampler(
        0.005,
        held=lambda: getattr(window_of(manager, tool_id), "waiting", None),
        outstanding=lambda: getattr(window_of(manager, tool_id), "in_use", None),
    )
    if args.memory == "tracemalloc":
        tracemalloc.start()
    started = loop.time()
    sampler.start()
    tasks = [loop.create_task(one(n)) for n in range(args.calls)]
    memory: dict[str, Any] = {}
    try:
        # Every call has started and none has returned: all of them are waiting. (With a
        # short --seconds the first results may come first; then fewer are counted.)
        limit = started + max(0.5, min(args.seconds * 0.5, 5.0))
        # The manager has no event for "N calls pending": poll it.
        while loop.time() < limit and manager.pending_calls < args.calls:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await asyncio.sleep(min(0.25, max(0.0, limit - loop.time())))
        waiting = manager.pending_calls
        tracing = tracemalloc.is_tracing()
        traced = tracemalloc.get_traced_memory()[0] if tracing else None
        overhead = tracemalloc.get_tracemalloc_memory() if tracing else 0
        rss_growth = (proc_status_kib("VmRSS") - rss_before) * 1024 - overhead
        window = window_of(manager, tool_id)
        memory = {
            "method": args.memory,
            "at_s": loop.time() - started,
            "waiting": waiting,
            "held_in_manager": window.waiting if window is not None else None,
            "traced_bytes": traced,
            "bytes_per_waiting_call": traced / waiting if traced is not None and waiting else None,
            "rss_growth_bytes": rss_growth,
            "rss_bytes_per_waiting_call": rss_growth / waiting if waiting else None,
            "tracemalloc_overhead_bytes": overhead,
            "by_package": by_package(tracemalloc.take_snapshot()) if tracing else {},
        }
        tracemalloc.stop()
        unfinished = 0
        try:
            async with asyncio.timeout(args.timeout + 30):
                await asyncio.gather(*tasks)
        except TimeoutError:
            unfinished = sum(1 for task in tasks if not task.done())
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        sampler.finish()
    wall = loop.time() - started
    counts = Counter(outcome or "unfinished" for outcome in outcomes)
    success_s = sorted(ended[n] - started for n in range(args.calls) if outcomes[n] == "success")
    return {
        "tool_banner": tool_banner,
        "advertised_max_concurrency": advertised,
        "wall_s": wall,
        "unfinished": unfinished,
        "outcomes": dict(counts.most_common()),
        "succeeded": counts.get("success", 0),
        "timed_out": counts.get("timeout", 0),
        "other": args.calls - counts.get("success", 0) - counts.get("timeout", 0),
        "last_success_s": success_s[-1] if success_s else None,
        "median_success_s": statistics.median(success_s) if success_s else None,
        "flow_control": "held" in sampler.peaks,
        "peak_held_in_manager": sampler.peaks.get("held"),
        "peak_outstanding_at_tool": sampler.peaks.get("outstanding"),
        "memory": memory,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.parser("python -m benchmarks.burst_manager", "The manager's side of one burst.")
    parser.add_argument("--broker", required=True, help="broker URL")
    parser.add_argument("--result-file", type=Path, required=True, help="where the JSON goes")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--memory", choices=("tracemalloc", "rss"), default="tracemalloc")
    return cli.parse(parser, argv)


def measure(args: argparse.Namespace) -> int:
    result = cli.run_async(burst(args))
    result["library"] = str(Path(argentic_tools.__file__).parent)
    args.result_file.write_text(json.dumps(result, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return cli.exit_status(lambda: measure(parse_args(argv)), "the burst's manager")


if __name__ == "__main__":
    raise SystemExit(main())
