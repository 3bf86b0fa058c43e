"""Calls across the nodes of a RabbitMQ cluster: same node vs cross node.

``python -m benchmarks.cluster [--results FILE]`` starts the 3-node cluster of
``scripts/cluster.sh`` (unless ``--cluster-dir`` names one already up), one tool
process serving ``echo`` on node 1, and measures with a manager on node 1 (same node
as the tool) and on node 2 (cross node):

- p50 and p99 of 500 sequential calls;
- throughput with 100 calls in flight for 5 s.

Both repeated three times, alternating. Prints a Markdown report and writes it to
``--results`` (a scratch file by default; ``benchmarks/results/cluster.md`` with
``--update-results``). The node-kill outcome table is the cluster test's
(``make test-cluster``).
"""

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from argentic_tools import Messager, ToolManager, Topics, serve_main, tool
from benchmarks.harness import cli
from benchmarks.harness.procs import PACKAGE_PARENT, Children
from benchmarks.harness.results import (
    RESULTS_DIR,
    add_results_arguments,
    results_file,
    stamped,
    write_report,
)
from benchmarks.harness.stats import fmt, median, percentile

COMMITTED = RESULTS_DIR / "cluster.md"


@tool
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


def cluster(directory: str, *args: str) -> None:
    subprocess.run(
        ["bash", str(PACKAGE_PARENT / "scripts" / "cluster.sh"), *args],
        check=True,
        cwd=PACKAGE_PARENT,
        env={**os.environ, "CLUSTER_DIR": directory},
    )


async def sequential(manager: ToolManager, calls: int) -> list[float]:
    latencies = []
    for index in range(calls):
        started = time.perf_counter()
        result = await manager.execute_tool("echo", {"message": str(index)}, timeout=10)
        if not result.ok:
            raise RuntimeError(f"call failed: {result}")
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


async def throughput(manager: ToolManager, seconds: float, in_flight: int = 100) -> float:
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            result = await manager.execute_tool("echo", {"message": "x"}, timeout=10)
            if not result.ok:
                raise RuntimeError(f"call failed: {result}")
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return done / (time.perf_counter() - started)


async def measure(
    urls: list[str], repetitions: int, children: Children
) -> dict[str, dict[str, list[float]]]:
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    topics = Topics.with_prefix(prefix)
    # The tool process, serving ``echo`` through node 1.
    tool_process = children.python("tool", "benchmarks.cluster", "--serve", urls[0], prefix)
    figures: dict[str, dict[str, list[float]]] = {
        where: {"p50": [], "p99": [], "throughput": []} for where in ("same node", "cross node")
    }
    try:
        async with contextlib.AsyncExitStack() as stack:
            managers = {}
            for where, url in (("same node", urls[0]), ("cross node", urls[1])):
                messager = await stack.enter_async_context(Messager(url, will_topic=None))
                manager = await stack.enter_async_context(ToolManager(messager, topics=topics))
                await manager.wait_for_tool("echo", timeout=60)
                await sequential(manager, 50)  # warm up
                managers[where] = manager
            for _ in range(repetitions):
                for where, manager in managers.items():
                    latencies = await sequential(manager, 500)
                    figures[where]["p50"].append(percentile(latencies, 50))
                    figures[where]["p99"].append(percentile(latencies, 99))
                    figures[where]["throughput"].append(await throughput(manager, 5))
    finally:
        await asyncio.to_thread(children.stop, tool_process, 15.0)
    return figures


def report(figures: dict[str, dict[str, list[float]]]) -> str:
    lines: list[str] = [
        "# Calls across a RabbitMQ cluster: same node vs cross node",
        "",
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end; Python "
        f"{sys.version.split()[0]}.",
        "",
        "3 RabbitMQ 3.10.8 nodes with the MQTT plugin (`scripts/cluster.sh`, quorum queues) on "
        "this machine; the tool process on node 1; the manager on node 1 (same node) or node 2 "
        "(cross node). Medians of 3 repetitions (min-max).",
        "",
        "| manager | p50 ms | p99 ms | calls/s at 100 in flight |",
        "|---|---|---|---|",
    ]
    for where, values in figures.items():
        cells = []
        for key in ("p50", "p99", "throughput"):
            series = values[key]
            cells.append(f"{fmt(median(series))} ({fmt(min(series))}-{fmt(max(series))})")
        lines.append(f"| {where} | {' | '.join(cells)} |")
    lines += ["", "The node-kill run's outcome table: `make test-cluster` prints it.", ""]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    owned = args.cluster_dir is None
    directory = args.cluster_dir or tempfile.mkdtemp(prefix="argentic-bench-cluster-")
    if owned:
        cluster(directory, "up")
    try:
        urls = (Path(directory) / "urls").read_text().split()
        with Children() as children:
            text = report(cli.run_async(measure(urls, args.repetitions, children)))
    finally:
        if owned:
            cluster(directory, "down")
    target = results_file(args)
    text = stamped(text)  # printed as written
    write_report(target, text)
    print(text)
    cli.log(f"written: {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--serve"]:
        serve_main(
            [echo],
            ["--broker", args[1], "--topic-prefix", args[2], "--log-level", "WARNING"],
        )
        return 0
    parser = cli.parser("python -m benchmarks.cluster", __doc__.splitlines()[0], __doc__)
    parser.add_argument("--cluster-dir", help="a cluster already up (scripts/cluster.sh)")
    add_results_arguments(
        parser, "--results", committed=COMMITTED, help_text="where to write the report"
    )
    parser.add_argument("--repetitions", type=int, default=3)
    return cli.exit_status(lambda: run(cli.parse(parser, args)))


if __name__ == "__main__":
    sys.exit(main())
