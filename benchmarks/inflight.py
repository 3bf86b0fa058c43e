"""Scenario (d) in a fresh manager process, so that its memory is measured alone.

``python -m benchmarks.inflight --broker URL --topic-prefix P [--calls 10000] [--seconds 1]``
sends ``--calls`` calls to the ``wait`` tool at once through ``get_tool_results`` and
prints one JSON object: wall time, successes, the manager's RSS before and at its peak
(sampled every 2 ms from a thread, from ``/proc/self/status``) and bytes per pending call.
"""

import argparse
import asyncio
import gc
import json
import sys
import time

from argentic_tools import Messager, ToolCallRequest, ToolManager, Topics
from benchmarks.harness.measure import PeakSampler, proc_status_kib


async def measure(args: argparse.Namespace) -> dict[str, object]:
    topics = Topics.with_prefix(args.topic_prefix)
    async with (
        Messager(args.broker, will_topic=None, log_level="WARNING") as messager,
        ToolManager(messager, log_level="WARNING", topics=topics) as manager,
    ):
        await manager.wait_for_tool("wait", timeout=30)
        # Warm up every code path once, so that first-use allocations are not counted.
        warm = [ToolCallRequest(tool_id="wait", arguments={"seconds": 0}) for _ in range(200)]
        await manager.get_tool_results(warm)
        requests = [
            ToolCallRequest(
                tool_id="wait", arguments={"seconds": args.seconds}, timeout=args.timeout
            )
            for _ in range(args.calls)
        ]
        gc.collect()
        rss_before = proc_status_kib("VmRSS")
        sampler = PeakSampler(
            0.002, rss=lambda: proc_status_kib("VmRSS"), pending=lambda: manager.pending_calls
        )
        sampler.start()
        started = time.perf_counter()
        try:
            results, _ = await manager.get_tool_results(requests)
        finally:
            wall = time.perf_counter() - started
            sampler.finish()
        ok = sum(1 for r in results if r.ok and r.result == args.seconds)
        errors: dict[str, int] = {}
        for r in results:
            if not r.ok:
                code = getattr(r, "error_code", None) or str(r.status)
                errors[code] = errors.get(code, 0) + 1
        peak = max(sampler.peaks.get("rss", 0), proc_status_kib("VmRSS"))
        return {
            "calls": args.calls,
            "ok": ok,
            "lost": args.calls - ok,
            "errors": errors,
            "wall_s": wall,
            "seconds_per_call": args.seconds,
            "peak_pending": sampler.peaks.get("pending", 0),
            "rss_before_kib": rss_before,
            "rss_peak_kib": peak,
            "vm_hwm_kib": proc_status_kib("VmHWM"),
            "bytes_per_pending": (peak - rss_before) * 1024 / args.calls,
        }


def main() -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.inflight")
    parser.add_argument("--broker", required=True)
    parser.add_argument("--topic-prefix", required=True)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
