"""Long calls: what progress costs and how fast a cancellation stops a tool.

``python -m benchmarks.long_calls [--results FILE]`` starts its own mosquitto on a free
127.0.0.1 port and one tool process (this module with ``--serve``), then measures:

- the cost of one ``context.report_progress`` call inside a tool, 1,000,000 reports in
  a tight loop, when the caller asked for progress (rate-limited) and when it did not,
  in an ``async def`` tool and in a sync tool (worker thread);
- a progress flood: 10,000 reports in a tight loop, and 10,000 reports about 1 ms
  apart: the TOOL_PROGRESS messages on the wire (counted by a subscriber on the
  manager's reply topic) and the reports the caller's callback saw;
- the round trip of a call that reports once, with and without ``on_progress``
  (p50 of 300 sequential calls each);
- the time from ``task.cancel()`` in the caller to the tool noticing: an async tool's
  task cancelled, and a sync tool polling ``context.cancelled`` every millisecond
  (the tool writes ``time.time()`` to a file; one machine, one clock), 30 times each.

Prints a Markdown report and writes it to ``--results`` (``benchmarks/results/
long_calls.md`` by default; ``-`` for none).
"""

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiomqtt

from argentic_tools import Messager, ToolContext, ToolManager, Topics, serve_main, tool
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto
from benchmarks.harness.machine import machine_info
from benchmarks.harness.procs import Children
from benchmarks.harness.results import RESULTS_DIR, stamped, write_report

RESULTS = RESULTS_DIR / "long_calls.md"


def stamp(path: str) -> None:
    """Write the time now to ``path`` (the benchmark reads it from another process)."""
    Path(path).write_text(repr(time.time()))


def read_stamp(path: Path) -> float | None:
    """The time in ``path``, or None while it is not written yet."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return float(text) if text else None


@tool
async def report_loop(context: ToolContext, reports: int) -> float:
    """Report progress ``reports`` times in a tight loop; returns ns per report."""
    started = time.perf_counter()
    for i in range(reports):
        context.report_progress(i, reports)
    return (time.perf_counter() - started) / reports * 1e9


@tool
def report_loop_sync(context: ToolContext, reports: int) -> float:
    """:func:`report_loop` in a worker thread."""
    started = time.perf_counter()
    for i in range(reports):
        context.report_progress(i, reports)
    return (time.perf_counter() - started) / reports * 1e9


@tool
async def paced(context: ToolContext, reports: int, pause: float) -> int:
    """Report ``reports`` times, ``pause`` seconds apart."""
    for i in range(reports):
        context.report_progress(i + 1, reports)
        await asyncio.sleep(pause)
    return reports


@tool
async def once(context: ToolContext) -> int:
    """Report progress once and return."""
    context.report_progress(1, 1)
    return 1


@tool
async def wait_cancel(context: ToolContext, path: str) -> None:
    """Report once, then wait to be cancelled; write the time it was."""
    context.report_progress(0)
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        stamp(path)
        raise


@tool
def spin_cancel(context: ToolContext, path: str) -> None:
    """Report once, then poll ``context.cancelled`` every millisecond; write when it was."""
    context.report_progress(0)
    while not context.cancelled:
        time.sleep(0.001)
    stamp(path)


TOOLS = [report_loop, report_loop_sync, paced, once, wait_cancel, spin_cancel]


async def wait_for_stamp(path: Path, timeout: float = 10) -> float:
    """Poll ``path`` every 0.5 ms until the tool process has written its time."""
    async with asyncio.timeout(timeout):
        while (stopped := read_stamp(path)) is None:  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.0005)
    return stopped


async def measure(url: str, topics: Topics) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with (
        Messager(url) as messager,
        ToolManager(
            messager,
            topics=topics,
            default_timeout=120,
        ) as manager,
    ):
        for item in TOOLS:
            await manager.wait_for_tool(item.__name__, timeout=30)

        def ignore(progress: float, total: float | None, message: str | None) -> None:
            return None

        for name in ("report_loop", "report_loop_sync"):
            asked = await manager.execute_tool(name, {"reports": 1_000_000}, on_progress=ignore)
            not_asked = await manager.execute_tool(name, {"reports": 1_000_000})
            out[name] = {"asked_ns": asked.result, "not_asked_ns": not_asked.result}

        port = int(url.rsplit(":", 1)[1])
        for label, arguments, tool_name in (
            ("tight", {"reports": 10_000}, "report_loop"),
            ("paced", {"reports": 10_000, "pause": 0.001}, "paced"),
        ):
            tool_id = manager.tools_by_name[tool_name]["id"]
            seen: list[float] = []

            def record(p: float, t: float | None, m: str | None, seen: list[float] = seen) -> None:
                seen.append(p)

            async with aiomqtt.Client("127.0.0.1", port) as spy:
                # The manager's own reply topic: tools answer there, not on the shared one.
                answers = (
                    topics.response(tool_id)
                    if manager.inbox is None
                    else topics.reply(tool_id, manager.inbox)
                )
                await spy.subscribe(answers, qos=1)
                started = time.perf_counter()
                result = await manager.execute_tool(tool_name, arguments, on_progress=record)
                seconds = time.perf_counter() - started
                assert result.ok, result
                wire = 0
                async with asyncio.timeout(5):
                    async for message in spy.messages:
                        kind = json.loads(message.payload).get("type")
                        if kind == "TOOL_PROGRESS":
                            wire += 1
                        elif "status" in json.loads(message.payload):
                            break
            out[f"flood_{label}"] = {"seconds": seconds, "wire": wire, "seen": len(seen)}

        for label, kwargs in (("without", {}), ("with", {"on_progress": ignore})):
            times = []
            for _ in range(300):
                started = time.perf_counter()
                result = await manager.execute_tool("once", {}, **kwargs)  # type: ignore[arg-type]
                times.append((time.perf_counter() - started) * 1000)
                assert result.ok, result
            out[f"once_{label}_p50_ms"] = statistics.median(times)

        with tempfile.TemporaryDirectory() as directory:
            for name in ("wait_cancel", "spin_cancel"):
                delays = []
                for i in range(30):
                    path = Path(directory) / f"{name}-{i}"
                    started_event = asyncio.Event()

                    def running(
                        p: float, t: float | None, m: str | None, e: asyncio.Event = started_event
                    ) -> None:
                        e.set()

                    call = asyncio.ensure_future(
                        manager.execute_tool(name, {"path": str(path)}, on_progress=running)
                    )
                    async with asyncio.timeout(10):
                        await started_event.wait()
                    cancelled_at = time.time()
                    call.cancel()
                    stopped_at = await wait_for_stamp(path)
                    delays.append((stopped_at - cancelled_at) * 1000)
                    with contextlib.suppress(asyncio.CancelledError):
                        await call
                out[f"{name}_ms"] = {
                    "p50": statistics.median(delays),
                    "max": max(delays),
                }
    return out


def report(data: dict[str, Any], info: dict[str, Any]) -> str:
    versions = info["versions"]
    machine = (
        f"{info['cpu_count']} cores, {info['platform']}, Python {versions['python']}, "
        f"mosquitto {versions['mosquitto']}, load {info['load_before'][0]:.1f}"
    )
    lines = [
        "# Long calls: progress and cancellation",
        "",
        f"`python -m benchmarks.long_calls`, {datetime_now()}; {machine}.",
        "",
        "| measure | result |",
        "|---|---|",
    ]
    for name, label in (("report_loop", "async tool"), ("report_loop_sync", "sync tool")):
        lines.append(
            f"| `report_progress` cost, {label}, 1,000,000 reports | "
            f"{data[name]['asked_ns']:.0f} ns each when the caller asked for progress, "
            f"{data[name]['not_asked_ns']:.0f} ns when it did not |"
        )
    for label, what in (("tight", "in a tight loop"), ("paced", "about 1 ms apart")):
        flood = data[f"flood_{label}"]
        lines.append(
            f"| 10,000 reports {what} ({flood['seconds']:.2f} s) | "
            f"{flood['wire']} TOOL_PROGRESS messages on the wire, {flood['seen']} seen "
            "by the callback |"
        )
    lines.append(
        f"| round trip of a call reporting once, p50 of 300 | "
        f"{data['once_without_p50_ms']:.2f} ms without `on_progress`, "
        f"{data['once_with_p50_ms']:.2f} ms with it |"
    )
    for name, label in (
        ("wait_cancel", "async tool (its task cancelled)"),
        ("spin_cancel", "sync tool (polls `context.cancelled` every 1 ms)"),
    ):
        delay = data[f"{name}_ms"]
        lines.append(
            f"| `task.cancel()` in the caller to the tool stopping, {label}, 30 times | "
            f"p50 {delay['p50']:.2f} ms, max {delay['max']:.2f} ms |"
        )
    return "\n".join(lines) + "\n"


def datetime_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def run(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    prefix = f"long{uuid.uuid4().hex[:8]}"
    with Mosquitto(binary) as broker, Children() as children:
        children.python("tools", "benchmarks.long_calls", "--serve", broker.url, prefix)
        data = cli.run_async(measure(broker.url, Topics.with_prefix(prefix)))
        info = machine_info(binary)
    text = report(data, info)
    text = stamped(text)  # printed as written
    print(text)
    if args.results != "-":
        write_report(Path(args.results), text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser("python -m benchmarks.long_calls", "Long calls: progress and cancellation.")
    parser.add_argument("--results", default=str(RESULTS), help="report file; - for none")
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--serve", nargs=2, metavar=("URL", "PREFIX"), help=argparse.SUPPRESS)
    args = cli.parse(parser, argv)
    if args.serve:
        url, prefix = args.serve
        serve_main(TOOLS, ["--broker", url, "--topic-prefix", prefix, "--log-level", "WARNING"])
        return 0
    return cli.exit_status(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
