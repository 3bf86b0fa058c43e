"""The processes of ``benchmarks.scale_out``: tools, idle managers, the caller, joiners.

``python -m benchmarks.scale_out_peers ROLE --broker URL [options]``; each prints JSON
lines on stdout (``{"event": ...}``) and logs to stderr. Every role but ``caller`` runs
until SIGTERM/SIGINT.

- ``echo``: one ToolService serving ``echo(message)`` with no concurrency limit.
- ``fleet --index P --tools N``: one ToolService serving ``tP_0`` .. ``tP_{N-1}``,
  each ``(n: int) -> int``, built with ``FunctionTool(func, name=...)``.
- ``idle``: a ToolManager that initialises, sees ``--wait-for`` (if given) and then
  does nothing.
- ``caller --seconds S --inflight K``: calls ``echo`` with K calls in flight, for a
  warm-up and then a measured window of S seconds, and reads the CPU time of its own
  process and of every ``--watch LABEL:PID`` process at both ends of that window.
- ``joiner --tools N``: times its ToolManager from just before the connection until
  ``len(get_tool_names()) == N``, prints it, then stays connected and idle.
"""

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import anyio

from argentic_tools import FunctionTool, Messager, ToolManager, ToolService, tool
from benchmarks.harness.measure import cpu_ticks

LOG_LEVEL = "WARNING"
POLL_SECONDS = 0.01
"""How often a joiner looks at the size of its registry."""


def emit(event: str, **fields: Any) -> None:
    """One JSON line on stdout for the runner."""
    print(json.dumps({"event": event, **fields}), flush=True)


async def until_signalled() -> None:
    """Return at SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


@tool
async def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


async def _value(n: int) -> int:
    """Return ``n``."""
    return n


async def serve(broker: str, tools: list[Any]) -> None:
    """Serve ``tools`` until SIGTERM; say ``ready`` once every one is registered."""
    service = ToolService(broker, tools, max_concurrency=0, log_level=LOG_LEVEL)
    async with anyio.create_task_group() as group:
        await group.start(service.run)  # run() handles SIGTERM/SIGINT and returns
        emit("ready", tools=len(tools))


async def idle(broker: str, wait_for: str | None) -> None:
    async with (
        Messager(broker, log_level=LOG_LEVEL) as messager,
        ToolManager(messager, log_level=LOG_LEVEL) as manager,
    ):
        if wait_for:
            await manager.wait_for_tool(wait_for, timeout=60)
        emit("ready")
        await until_signalled()


async def caller(
    broker: str, seconds: float, warmup: float, inflight: int, watch: list[tuple[str, int]]
) -> None:
    async with (
        Messager(broker, log_level=LOG_LEVEL) as messager,
        ToolManager(messager, log_level=LOG_LEVEL) as manager,
    ):
        await manager.wait_for_tool("echo", timeout=30)
        counts = {"ok": 0, "failed": 0, "wrong": 0}

        async def worker(index: int, until: float) -> None:
            n = 0
            while time.perf_counter() < until:
                n += 1
                message = f"{index}-{n}"
                result = await manager.execute_tool("echo", {"message": message}, timeout=10)
                if not result.ok:
                    counts["failed"] += 1
                elif result.result != message:
                    counts["wrong"] += 1
                else:
                    counts["ok"] += 1

        async def run_for(duration: float) -> None:
            until = time.perf_counter() + duration
            async with asyncio.timeout(duration + 30):
                await asyncio.gather(*(worker(i, until) for i in range(inflight)))

        await run_for(warmup)
        warm = dict(counts)
        counts.update(ok=0, failed=0, wrong=0)
        pids = [os.getpid(), *(pid for _, pid in watch)]
        before = [cpu_ticks(pid) for pid in pids]
        started = time.perf_counter()
        await run_for(seconds)
        elapsed = time.perf_counter() - started
        after = [cpu_ticks(pid) for pid in pids]
    ticks: dict[str, int] = {}
    missing: list[int] = []
    for (label, pid), first, last in zip(
        [("caller", os.getpid()), *watch], before, after, strict=True
    ):
        if first is None or last is None:
            missing.append(pid)
            continue
        ticks[label] = ticks.get(label, 0) + last - first
    emit(
        "result",
        seconds=elapsed,
        calls=counts["ok"],
        failed=counts["failed"],
        wrong=counts["wrong"],
        warmup_calls=sum(warm.values()),
        ticks=ticks,
        missing_pids=missing,
        clock_ticks_per_second=os.sysconf("SC_CLK_TCK"),
    )


async def joiner(broker: str, tools: int, limit: float) -> None:
    seen = 0
    connected_s: float | None = None
    started = time.perf_counter()
    cpu_started = time.process_time()
    messager = Messager(broker, log_level=LOG_LEVEL)
    manager = ToolManager(messager, log_level=LOG_LEVEL)
    try:
        async with asyncio.timeout(limit):
            await messager.connect()
            connected_s = time.perf_counter() - started
            await manager.async_init()
            while (seen := len(manager.get_tool_names())) < tools:  # noqa: ASYNC110 - cheap poll
                await asyncio.sleep(POLL_SECONDS)
    except TimeoutError:
        seen = len(manager.get_tool_names())
    elapsed = time.perf_counter() - started
    emit(
        "joined",
        seconds=elapsed,
        connect_seconds=connected_s,
        tools=seen,
        complete=seen >= tools,
        cpu_seconds=time.process_time() - cpu_started,
    )
    try:
        await until_signalled()
    finally:
        await manager.aclose()
        await messager.disconnect()


def watch_pair(text: str) -> tuple[str, int]:
    label, sep, pid = text.partition(":")
    if not sep or not pid.isdigit():
        raise argparse.ArgumentTypeError(f"expected LABEL:PID, got {text!r}")
    return label, int(pid)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_out_peers")
    parser.add_argument("role", choices=("echo", "fleet", "idle", "caller", "joiner"))
    parser.add_argument("--broker", required=True)
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--wait-for", default=None)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--inflight", type=int, default=100)
    parser.add_argument("--limit", type=float, default=30.0)
    parser.add_argument("--watch", type=watch_pair, action="append", default=[])
    args = parser.parse_args(argv)
    logging.basicConfig(level=LOG_LEVEL, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    roles: dict[str, Callable[[], Any]] = {
        "echo": lambda: serve(args.broker, [echo]),
        "fleet": lambda: serve(
            args.broker,
            [FunctionTool(_value, name=f"t{args.index}_{i}") for i in range(args.tools)],
        ),
        "idle": lambda: idle(args.broker, args.wait_for),
        "caller": lambda: caller(args.broker, args.seconds, args.warmup, args.inflight, args.watch),
        "joiner": lambda: joiner(args.broker, args.tools, args.limit),
    }
    asyncio.run(roles[args.role]())


if __name__ == "__main__":
    main(sys.argv[1:])
