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
import threading
import time

from argentic_tools import Messager, ToolCallRequest, ToolManager, Topics


def proc_status_kib(field: str) -> int:
    """``VmRSS``/``VmHWM`` of this process in KiB (0 where /proc is unavailable)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler(threading.Thread):
    """Keeps the highest VmRSS seen and the most calls seen pending at once."""

    def __init__(self, manager: ToolManager, interval: float = 0.002) -> None:
        super().__init__(daemon=True)
        self.manager = manager
        self.interval = interval
        self.peak_rss_kib = 0
        self.peak_pending = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak_rss_kib = max(self.peak_rss_kib, proc_status_kib("VmRSS"))
            self.peak_pending = max(self.peak_pending, self.manager.pending_calls)
            time.sleep(self.interval)

    def finish(self) -> None:
        self._done.set()
        self.join()


async def measure(args: argparse.Namespace) -> dict[str, object]:
    topics = Topics.with_prefix(args.topic_prefix)
    async with (
        Messager(args.broker, will_topic=None, log_level="WARNING") as messager,
        ToolManager(
            messager,
            log_level="WARNING",
            register_topic=topics.register,
            tool_call_topic_base=topics.call_base,
            tool_response_topic_base=topics.response_base,
            status_topic=topics.status,
        ) as manager,
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
        sampler = Sampler(manager)
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
        peak = max(sampler.peak_rss_kib, proc_status_kib("VmRSS"))
        return {
            "calls": args.calls,
            "ok": ok,
            "lost": args.calls - ok,
            "errors": errors,
            "wall_s": wall,
            "seconds_per_call": args.seconds,
            "peak_pending": sampler.peak_pending,
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
