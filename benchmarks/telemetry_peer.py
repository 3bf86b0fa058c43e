"""The two processes of ``benchmarks.telemetry``: a tool process and a caller.

Run as a script with ``python -P benchmarks/telemetry_peer.py ROLE --broker URL
[--sdk] ...`` and the library under test first on ``PYTHONPATH``: the runner points it
at a checkout of an older commit or at a copy of the working tree. So this file imports
nothing of ``benchmarks`` (that package would come from the same tree) and only the
public API of ``argentic_tools``, which both versions have. It prints JSON lines on
stdout (``{"event": ...}``) and logs to stderr.

- ``tool``: one ToolService serving ``echo(message)`` with no concurrency limit, until
  SIGTERM; then a ``done`` line with what the SDK recorded.
- ``caller --tool-pid PID``: ``--warmup`` sequential calls, ``--calls`` timed sequential
  calls, then ``--inflight`` calls in flight for ``--throughput-warmup`` s and for a
  measured window of ``--seconds``, reading utime + stime of itself and of the tool
  process from ``/proc/<pid>/stat`` at both ends of the window.

With ``--sdk`` the process installs the OpenTelemetry SDK first: a TracerProvider with a
SimpleSpanProcessor into an InMemorySpanExporter, and a MeterProvider with an
InMemoryMetricReader. A task on the event loop empties the exporter every
``CLEAR_SECONDS`` (counting the spans first), so its memory stays bounded.
"""

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio

import argentic_tools
from argentic_tools import Messager, ToolManager, ToolService, tool

LOG_LEVEL = "WARNING"
CLEAR_SECONDS = 0.5
"""How often the in-memory span exporter is counted and emptied (about 1,000 spans at the
throughput phase's rate of calls)."""
CALL_TIMEOUT = 10.0
START_TIMEOUT = 60.0


def emit(event: str, **fields: Any) -> None:
    """One JSON line on stdout for the runner."""
    print(json.dumps({"event": event, **fields}), flush=True)


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of ``pid`` in clock ticks, from ``/proc/<pid>/stat`` (None when gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its ")".
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of the whole line


class Sdk:
    """The OpenTelemetry SDK in this process, with in-memory exporters.

    ``spans`` counts every span the exporter held before it was emptied;
    ``remote_parents`` those whose parent came from another process (a ``traceparent``).
    """

    def __init__(self) -> None:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        self.exporter = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[self.reader]))
        self.spans = 0
        self.remote_parents = 0
        self.most_held = 0

    def drain(self) -> None:
        """Count the finished spans and empty the exporter (on the event loop's thread)."""
        finished = self.exporter.get_finished_spans()
        self.exporter.clear()
        self.spans += len(finished)
        self.most_held = max(self.most_held, len(finished))
        self.remote_parents += sum(
            1 for span in finished if span.parent is not None and span.parent.is_remote
        )

    async def keep_draining(self) -> None:
        while True:
            await asyncio.sleep(CLEAR_SECONDS)
            self.drain()

    def counter_total(self, name: str) -> int:
        """The sum of a counter's data points, as the metric reader collects it now."""
        from opentelemetry.sdk.metrics.export import Sum

        data = self.reader.get_metrics_data()
        total = 0
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name and isinstance(metric.data, Sum):
                        total += sum(int(point.value) for point in metric.data.data_points)
        return total

    def summary(self, counter: str) -> dict[str, Any]:
        self.drain()
        return {
            "spans": self.spans,
            "remote_parents": self.remote_parents,
            "most_spans_held": self.most_held,
            "metric_calls": self.counter_total(counter),
        }


def describe() -> dict[str, Any]:
    """What this process runs: the library's path and the OpenTelemetry state."""
    otel: dict[str, Any] = {"api_imported": "opentelemetry.trace" in sys.modules}
    if otel["api_imported"]:
        from opentelemetry import trace

        otel["tracer_provider"] = type(trace.get_tracer_provider()).__name__
    otel["sdk_imported"] = "opentelemetry.sdk" in sys.modules
    return {"library": str(Path(argentic_tools.__file__).resolve()), "otel": otel}


@tool
async def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


async def serve(broker: str, sdk: Sdk | None) -> None:
    """Serve ``echo`` until SIGTERM (``run()`` handles it and returns), then say ``done``."""
    service = ToolService(broker, [echo], max_concurrency=0, log_level=LOG_LEVEL)
    async with anyio.create_task_group() as group:

        async def run_service(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            await service.run(task_status=task_status)
            group.cancel_scope.cancel()  # the drainer too

        await group.start(run_service)
        if sdk is not None:
            group.start_soon(sdk.keep_draining)
        emit("ready", **describe())
    emit("done", **describe(), sdk=sdk.summary("argentic_tools.tool.calls") if sdk else None)


async def caller(args: argparse.Namespace, sdk: Sdk | None) -> None:
    counts = {"ok": 0, "failed": 0, "wrong": 0}
    made = 0
    async with (
        Messager(args.broker, log_level=LOG_LEVEL) as messager,
        ToolManager(messager, log_level=LOG_LEVEL) as manager,
    ):
        await manager.wait_for_tool("echo", timeout=START_TIMEOUT)
        draining = asyncio.create_task(sdk.keep_draining()) if sdk else None

        async def call(message: str) -> None:
            nonlocal made
            made += 1
            result = await manager.execute_tool("echo", {"message": message}, timeout=CALL_TIMEOUT)
            if not result.ok:
                counts["failed"] += 1
            elif result.result != message:
                counts["wrong"] += 1
            else:
                counts["ok"] += 1

        for n in range(args.warmup):
            await call(f"w{n}")
        latencies: list[float] = []
        for n in range(args.calls):
            started = time.perf_counter()
            await call(f"s{n}")
            latencies.append(round((time.perf_counter() - started) * 1000, 4))
        sequential = dict(counts)

        async def run_for(seconds: float) -> None:
            until = time.perf_counter() + seconds

            async def worker(index: int) -> None:
                n = 0
                while time.perf_counter() < until:
                    n += 1
                    await call(f"{index}-{n}")

            async with asyncio.timeout(seconds + 2 * CALL_TIMEOUT):
                await asyncio.gather(*(worker(i) for i in range(args.inflight)))

        await run_for(args.throughput_warmup)
        counts.update(ok=0, failed=0, wrong=0)
        pids = (os.getpid(), args.tool_pid)
        before = [cpu_ticks(pid) for pid in pids]
        started = time.perf_counter()
        await run_for(args.seconds)
        elapsed = time.perf_counter() - started
        after = [cpu_ticks(pid) for pid in pids]
        window = dict(counts)
        if draining is not None:
            draining.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await draining
    ticks = {
        label: (last - first if first is not None and last is not None else None)
        for label, first, last in zip(("caller", "tool"), before, after, strict=True)
    }
    emit(
        "result",
        **describe(),
        latencies_ms=latencies,
        sequential=sequential,
        window=window,
        window_seconds=elapsed,
        calls_made=made,
        ticks=ticks,
        clock_ticks_per_second=os.sysconf("SC_CLK_TCK"),
        sdk=sdk.summary("argentic_tools.client.calls") if sdk else None,
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="telemetry_peer.py")
    parser.add_argument("role", choices=("tool", "caller"))
    parser.add_argument("--broker", required=True)
    parser.add_argument("--sdk", action="store_true", help="install the OpenTelemetry SDK")
    parser.add_argument("--tool-pid", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--inflight", type=int, default=100)
    parser.add_argument("--throughput-warmup", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=LOG_LEVEL, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sdk = Sdk() if args.sdk else None
    if args.role == "tool":
        asyncio.run(serve(args.broker, sdk))
    else:
        asyncio.run(caller(args, sdk))


if __name__ == "__main__":
    main(sys.argv[1:])
