"""A huge batch: does the manager's event loop keep turning while it admits and cancels?

``python -m benchmarks.big_batch [--calls 50000] [--results FILE]`` starts its own
mosquitto on a free 127.0.0.1 port and one tool process (``benchmarks.ours_tool``: its
``wait`` tool advertises ``max_concurrency`` 20,000, so most of the batch waits in the
manager's window), then, with a loop-lag probe running (a task that sleeps 10 ms in a
loop and records how late it wakes up):

- **admission**: ``--calls`` calls to ``wait`` (``seconds`` 1) at once through
  ``get_tool_results``, and, as soon as the batch has started, one call to ``echo``:
  the worst loop lag until the batch ends, how long the ``echo`` call took, and the
  batch's wall time;
- **cancellation**: ``--calls`` calls to ``wait`` (``seconds`` 600); once every call is
  pending, the batch's task is cancelled: the time until it has ended and no call is
  pending any more (the drain), how much of it was the loop thread's own CPU time (the
  rest is waiting for a core: on a shared machine, other processes' load), and the
  worst loop lag meanwhile.

Each part runs in a manager of its own, with the library's default ``gc_freeze`` (a
batch this big is kept out of CPython's full garbage collections; see ``ToolManager``),
or ``gc_freeze=False`` under ``--no-gc-freeze``. Prints a Markdown report and writes it
to ``--results`` (``benchmarks/results/big_batch.md`` by default, or
``big_batch_no_gc_freeze.md`` under ``--no-gc-freeze``; ``-`` for none).
"""

import argparse
import asyncio
import contextlib
import gc
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from argentic_tools import Messager, ToolCallRequest, ToolManager, Topics
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto
from benchmarks.harness.machine import machine_info
from benchmarks.harness.procs import Children
from benchmarks.harness.results import RESULTS_DIR, stamped, write_report

RESULTS = RESULTS_DIR / "big_batch.md"
RESULTS_UNFROZEN = RESULTS_DIR / "big_batch_no_gc_freeze.md"
PERIOD = 0.010
"""The probe's sleep, seconds."""


class GcPauses:
    """The cyclic garbage collector's pauses (``gc.callbacks``): their sum and the longest."""

    def __init__(self) -> None:
        self.total = 0.0
        self.worst = 0.0
        self._began = 0.0

    def __enter__(self) -> "GcPauses":
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        pause = time.perf_counter() - self._began
        self.total += pause
        self.worst = max(self.worst, pause)


class LagProbe:
    """A task that sleeps ``PERIOD`` in a loop and records how late it wakes up.

    ``worst`` is the longest lag; ``worst_own`` the longest once the garbage collector's
    pauses in the same interval are taken out: what the code on the loop held it for.
    """

    def __init__(self, pauses: GcPauses) -> None:
        self.pauses = pauses
        self.worst = 0.0
        self.worst_own = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            before, collecting = time.perf_counter(), self.pauses.total
            await asyncio.sleep(PERIOD)
            lag = time.perf_counter() - before - PERIOD
            self.worst = max(self.worst, lag)
            self.worst_own = max(self.worst_own, lag - (self.pauses.total - collecting))

    async def stop(self) -> dict[str, float]:
        """Stop; the worst lag, with and without the collector's pauses, in seconds."""
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        return {
            "max_lag_s": self.worst,
            "max_lag_outside_gc_s": self.worst_own,
            "max_gc_pause_s": self.pauses.worst,
            "gc_s": self.pauses.total,
        }


async def admission(url: str, topics: Topics, calls: int, freeze: bool | None) -> dict[str, Any]:
    """The worst loop lag while ``calls`` calls are admitted, and another tool's call meanwhile."""
    async with (
        Messager(url, will_topic=None, log_level="WARNING") as messager,
        ToolManager(
            messager, log_level="WARNING", topics=topics, default_timeout=600, gc_freeze=freeze
        ) as manager,
    ):
        await manager.wait_for_tool("wait", timeout=30)
        await manager.wait_for_tool("echo", timeout=30)
        await manager.get_tool_results(
            [ToolCallRequest(tool_id="wait", arguments={"seconds": 0}) for _ in range(200)]
        )
        requests = [
            ToolCallRequest(tool_id="wait", arguments={"seconds": 1.0}) for _ in range(calls)
        ]
        gc.collect()
        with GcPauses() as pauses:
            probe = LagProbe(pauses)
            probe.start()
            await asyncio.sleep(PERIOD * 3)
            started = time.perf_counter()
            batch = asyncio.ensure_future(manager.get_tool_results(requests))
            await asyncio.sleep(0)  # the batch has begun
            echo_started = time.perf_counter()
            echo = await manager.execute_tool("echo", {"message": "hi"})
            echo_s = time.perf_counter() - echo_started
            results, _ = await batch
            wall = time.perf_counter() - started
            lags = await probe.stop()
        return {
            "calls": calls,
            "ok": sum(1 for r in results if r.ok),
            "echo_ok": echo.ok,
            "echo_s": echo_s,
            "wall_s": wall,
            **lags,
        }


async def cancellation(
    url: str, topics: Topics, calls: int, settle: bool, freeze: bool | None
) -> dict[str, Any]:
    """The time to drain a cancel of ``calls`` pending calls, and the worst loop lag meanwhile.

    The batch is cancelled as soon as every call is pending (most still wait for their
    turn to be sent), or with ``settle`` 2 s later, when 20,000 (the tool's
    ``max_concurrency``) have reached the tool and each needs a TOOL_CANCEL.
    """
    async with (
        Messager(url, will_topic=None, log_level="WARNING") as messager,
        ToolManager(
            messager, log_level="WARNING", topics=topics, default_timeout=900, gc_freeze=freeze
        ) as manager,
    ):
        await manager.wait_for_tool("wait", timeout=30)
        requests = [
            ToolCallRequest(tool_id="wait", arguments={"seconds": 600.0}) for _ in range(calls)
        ]
        gc.collect()
        batch = asyncio.ensure_future(manager.get_tool_results(requests))
        async with asyncio.timeout(300):
            while manager.pending_calls < calls:  # noqa: ASYNC110 - nothing to wait on
                await asyncio.sleep(0.005)
            if settle:
                await asyncio.sleep(2)
        with GcPauses() as pauses:
            probe = LagProbe(pauses)
            probe.start()
            await asyncio.sleep(PERIOD * 3)
            started, cpu = time.perf_counter(), time.thread_time()
            batch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await batch
            ended = time.perf_counter() - started
            async with asyncio.timeout(300):
                while manager.pending_calls:  # noqa: ASYNC110 - nothing to wait on
                    await asyncio.sleep(0.001)
            drain = time.perf_counter() - started
            drain_cpu = time.thread_time() - cpu
            lags = await probe.stop()
        return {
            "calls": calls,
            "batch_ended_s": ended,
            "drain_s": drain,
            "drain_cpu_s": drain_cpu,
            **lags,
        }


async def measure(url: str, topics: Topics, calls: int, freeze: bool | None) -> dict[str, Any]:
    return {
        "admission": await admission(url, topics, calls, freeze),
        "cancel_at_once": await cancellation(url, topics, calls, False, freeze),
        "cancel_settled": await cancellation(url, topics, calls, True, freeze),
    }


def _lags(part: dict[str, Any]) -> str:
    return (
        f"{part['max_lag_s'] * 1000:.0f} ms ({part['max_lag_outside_gc_s'] * 1000:.0f} ms "
        f"outside the garbage collector's pauses; its longest {part['max_gc_pause_s'] * 1000:.0f}"
        f" ms, {part['gc_s']:.1f} s in all)"
    )


def report(data: dict[str, Any], info: dict[str, Any], calls: int, freeze: bool | None) -> str:
    versions = info["versions"]
    machine = (
        f"{info['cpu_count']} cores, {info['platform']}, Python {versions['python']}, "
        f"mosquitto {versions['mosquitto']}, load {info['load_before'][0]:.1f}"
    )
    admitted = data["admission"]
    flag = " --no-gc-freeze" if freeze is False else ""
    lines = [
        f"# A batch of {calls:,} calls: the manager's event loop",
        "",
        f"`python -m benchmarks.big_batch --calls {calls}{flag}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine}.",
        "",
        "| measure | result |",
        "|---|---|",
        f"| admission: worst loop lag (10 ms probe) | {_lags(admitted)} |",
        f"| admission: another tool's call made meanwhile | {admitted['echo_s'] * 1000:.0f} ms "
        f"({'ok' if admitted['echo_ok'] else 'failed'}) |",
        f"| admission: the batch (`wait` 1 s each) | {admitted['ok']:,} ok of "
        f"{calls:,} in {admitted['wall_s']:.1f} s |",
    ]
    for key, when in (
        ("cancel_at_once", "as soon as all are pending"),
        ("cancel_settled", "2 s later, 20,000 at the tool"),
    ):
        part = data[key]
        lines += [
            f"| cancel of every call, {when}: drained in | {part['drain_s'] * 1000:.0f} ms "
            f"(the batch's task ended after {part['batch_ended_s'] * 1000:.0f} ms; "
            f"{part['drain_cpu_s'] * 1000:.0f} ms of CPU on the loop's thread) |",
            f"| cancel of every call, {when}: worst loop lag | {_lags(part)} |",
        ]
    return "\n".join([*lines, ""])


def run(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    prefix = f"big{uuid.uuid4().hex[:8]}"
    freeze = False if args.no_gc_freeze else None
    with Mosquitto(binary) as broker, Children() as children:
        children.python(
            "tools",
            "benchmarks.ours_tool",
            *("--broker", broker.url, "--topic-prefix", prefix, "--echo-tools", "0"),
        )
        data = cli.run_async(measure(broker.url, Topics.with_prefix(prefix), args.calls, freeze))
        info = machine_info(binary)
    text = report(data, info, args.calls, freeze)
    text = stamped(text)  # printed as written
    print(text)
    if args.results != "-":
        default = RESULTS_UNFROZEN if freeze is False else RESULTS
        write_report(Path(args.results) if args.results else default, text, data)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.big_batch",
        "A huge batch: the manager's loop lag while admitting and cancelling it.",
        __doc__,
    )
    parser.add_argument("--calls", type=cli.positive_int, default=50_000, help="calls at once")
    parser.add_argument("--results", default="", help="report file; - for none")
    parser.add_argument(
        "--no-gc-freeze", action="store_true", help="managers made with gc_freeze=False"
    )
    cli.add_mosquitto_argument(parser)
    args = cli.parse(parser, argv)
    return cli.exit_status(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
