"""Side-by-side benchmark: ``python -m benchmarks.run [--quick] [--reps N] [--scenarios a,b]``.

Starts one mosquitto on a free 127.0.0.1 port, a raw aiomqtt responder (the floor),
argentic-tools tool processes and, when argentic is importable, an argentic 0.16 tool
process; measures the scenarios below with interleaved repetitions; prints a Markdown
report and writes ``latest.md``, ``latest.json`` and (with a) ``latency_cdf.svg`` to a
new scratch directory (its path is printed), or to ``benchmarks/results/`` with
``--update-results``.

  a  sequential latency (p50/p95/p99)        d  10,000 calls in flight (ours)
  b  throughput, batches of 100              e  1,000 tools registering at once (ours)
  c  throughput over 10 tools                f  cost of input validation (ours)

Exit status: 0 when the run completed (targets met or not; failed calls are in the
report), 1 when it could not complete, 2 for bad input (no mosquitto, port in use),
130 after Ctrl-C or SIGTERM. Every process it starts is stopped before it exits.
"""

import argparse
import os
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto, port_in_use
from benchmarks.harness.machine import machine_info
from benchmarks.harness.procs import Children
from benchmarks.harness.results import add_results_arguments, results_dir, stamped, write_report

ALL_SCENARIOS = "abcdef"

FULL = {"sequential": 500, "calls": 5000, "inflight": 10_000, "many": 1000}
QUICK = {"sequential": 100, "calls": 1000, "inflight": 2000, "many": 200}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        "python -m benchmarks.run",
        "Benchmark argentic-tools against a raw aiomqtt floor and argentic 0.16.",
        __doc__,
        ("--quick", "--quick --scenarios a,b --reps 1", "--results-dir /tmp/bench"),
    )
    parser.add_argument("--quick", action="store_true", help="small counts (about a minute)")
    parser.add_argument("--reps", type=cli.positive_int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--scenarios", default="a,b,c,d,e,f", help="comma-separated subset of a,b,c,d,e,f"
    )
    parser.add_argument("--port", type=int, help="broker port (default: a free one)")
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--no-argentic", action="store_true", help="leave argentic out")
    size = cli.positive_int
    parser.add_argument("--sequential", type=size, help="calls in (a) and (f) (500; quick 100)")
    parser.add_argument("--calls", type=size, help="calls in (b) and (c) (5000; quick 1000)")
    parser.add_argument("--batch", type=size, default=100, help="batch size in (b), (c)")
    parser.add_argument("--tools", type=size, default=10, help="tools in (c)")
    parser.add_argument("--inflight", type=size, help="calls at once in (d) (10000; quick 2000)")
    parser.add_argument("--inflight-seconds", type=float, default=1.0, help="wait() in (d)")
    parser.add_argument("--many", type=size, help="tools in (e) (1000; quick 200)")
    parser.add_argument(
        "--call-timeout", type=cli.positive_float, default=10.0, help="seconds per call"
    )
    parser.add_argument(
        "--storm-limit", type=float, default=60.0, help="seconds (e) waits for all tools"
    )
    add_results_arguments(parser)
    args = cli.parse(parser, argv)
    scenarios = [s.strip().lower() for s in args.scenarios.split(",") if s.strip()]
    unknown = [s for s in scenarios if s not in ALL_SCENARIOS or len(s) != 1]
    if unknown or not scenarios:
        parser.error(f"--scenarios takes letters from a,b,c,d,e,f; got {args.scenarios!r}")
    args.scenario_list = [s for s in ALL_SCENARIOS if s in scenarios]
    sizes = QUICK if args.quick else FULL
    for key, value in sizes.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.port is not None and not 0 < args.port < 65536:
        parser.error("--port must be 1-65535")
    return args


async def run_all(
    args: argparse.Namespace, broker: Mosquitto, children: Children, argentic: str | None
) -> list[dict[str, Any]]:
    from benchmarks import _scenarios as sc
    from benchmarks._impls import Argentic, Floor, Impl, Ours

    settings = sc.Settings(
        sequential=args.sequential,
        calls=args.calls,
        batch=args.batch,
        tools=args.tools,
        inflight=args.inflight,
        inflight_seconds=args.inflight_seconds,
        many=args.many,
        call_timeout=args.call_timeout,
        storm_limit=args.storm_limit,
    )
    run_id = f"bench{uuid.uuid4().hex[:8]}"
    ctx = sc.Context(broker.url, broker.port, run_id, children, settings)
    wanted = set(args.scenario_list)
    compared = bool(wanted & set("abc"))
    tool_names = ["echo", *(f"echo{i}" for i in range(args.tools))]

    impls: list[Impl] = []
    if compared:
        impls.append(Floor(broker.port, f"{run_id}-floor", args.call_timeout))
    ours: Ours | None = None
    if compared or wanted & set("df"):
        ours = Ours("ours", broker.url, f"{run_id}-ours", args.call_timeout)
        ctx.ours = ours
        if compared:
            impls.append(ours)
    if compared:
        impls.append(
            Ours("ours-basetool", broker.url, f"{run_id}-basetool", args.call_timeout, "basetool")
        )
    if compared and argentic:
        impls.append(Argentic(broker.port, f"{run_id}-argentic", args.call_timeout))
    opened: list[Impl] = []
    try:
        # Managers first: an argentic tool registers once, so its manager must be listening.
        for impl in [*impls, *([ours] if ours is not None and ours not in impls else [])]:
            await impl.open()
            opened.append(impl)
        callees = {
            impl.name: children.python(f"{impl.name}-tool", *impl.callee(args.tools))
            for impl in opened
        }
        for impl in opened:
            needed = tool_names if impl in impls else ["echo"]
            if impl is ours:
                needed = [*needed, "wait", "typed", "empty"]
            try:
                await impl.ready(needed, timeout=30)
            except TimeoutError:
                raise RuntimeError(
                    f"{impl.name}: its tools did not answer within 30 s; its log:\n"
                    f"{callees[impl.name].log_tail()}"
                ) from None
            cli.log(f"ready: {impl.name}")

        results: list[dict[str, Any]] = []

        async def guarded(scenario: str, name: str, rep: int, calls: int, coro: Any) -> None:
            try:
                result = await coro
            except Exception as exc:
                result = sc.failed_record(
                    scenario, name, rep, calls, f"{type(exc).__name__}: {exc}"
                )
                cli.log(f"[rep {rep}] ({scenario}) {name}: ABORTED: {result['error']}")
            else:
                cli.log(f"[rep {rep}] ({scenario}) {name}: {summary(result)}")
            results.append(result)

        for rep in range(1, args.reps + 1):
            if "a" in wanted:
                for impl in impls:
                    await guarded(
                        "a",
                        impl.name,
                        rep,
                        settings.sequential,
                        sc.sequential(impl, rep, settings.sequential),
                    )
                ours_a = [
                    r
                    for r in results
                    if r["scenario"] == "a"
                    and r["impl"] == "ours"
                    and r["rep"] == rep
                    and not r["error"]
                ]
                if ours_a:
                    ctx.ours_p50_ms[rep] = ours_a[0]["metrics"]["p50_ms"]
            for scenario, tools in (("b", ["echo"]), ("c", tool_names[1:])):
                if scenario in wanted:
                    for impl in impls:
                        await guarded(
                            scenario,
                            impl.name,
                            rep,
                            settings.calls,
                            sc.throughput(
                                scenario, impl, rep, settings.calls, settings.batch, tools
                            ),
                        )
            if "d" in wanted:
                await guarded(
                    "d", "ours", rep, settings.inflight, sc.inflight(ctx, rep, f"{run_id}-ours")
                )
            if "e" in wanted:
                await guarded("e", "ours", rep, settings.many + 1, sc.registration_storm(ctx, rep))
            if "f" in wanted:
                await guarded("f", "ours", rep, 2 * settings.sequential, sc.validation(ctx, rep))
        return results
    finally:
        for impl in reversed(opened):
            try:
                await impl.close()
            except Exception as exc:
                cli.log(f"closing {impl.name}: {exc}")


def summary(result: dict[str, Any]) -> str:
    m = result["metrics"]
    lost = f", {result['failed']} failed/lost" if result["failed"] else ""
    if result["scenario"] == "a":
        text = f"p50 {m['p50_ms']:.3f} ms, p99 {m['p99_ms']:.3f} ms"
    elif result["scenario"] in "bc":
        text = f"{m['calls_per_s']:.0f} calls/s"
    elif result["scenario"] == "d":
        text = f"{m['wall_s']:.2f} s, {m['bytes_per_pending']:.0f} B/pending call"
    elif result["scenario"] == "e":
        text = (
            f"visible {m['visible_s']:.2f} s, callable {m['callable_s']:.2f} s, "
            f"prompt {m['prompt_ms']:.1f} ms"
        )
    else:
        text = f"typed p50 {m['typed_p50_ms']:.3f} ms, validator {m['validator_typed_us']:.1f} µs"
    return text + lost


def measure(args: argparse.Namespace) -> int:
    """The whole run: broker, callees, scenarios, report; the exit status."""
    binary = cli.require_mosquitto(args.mosquitto)
    if args.port is not None and port_in_use(args.port):
        raise cli.UsageError(
            f"port {args.port} on 127.0.0.1 is already in use; pass another --port or "
            "leave it out to use a free one"
        )
    from benchmarks._impls import argentic_version

    argentic = None if args.no_argentic else argentic_version()
    note = None
    if args.no_argentic:
        note = "left out (--no-argentic): its rows and ratios are absent"
    elif argentic is None:
        note = "not importable in this environment: its rows and ratios are absent"
        cli.log("note: argentic is not installed; comparing with the floor only")
    machine = machine_info(binary, argentic or "not installed")
    started = time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    with Mosquitto(binary, args.port) as broker, Children() as children:
        cli.log(
            f"mosquitto {machine['versions']['mosquitto']} on {broker.url}; "
            f"{machine['cpu_count']} cores, load {machine['load_before'][0]:.2f}"
        )
        results = cli.run_async(run_all(args, broker, children, argentic))
    machine["load_after"] = list(os.getloadavg())
    from benchmarks._report import CDF_FILE, build_markdown, latency_chart

    data: dict[str, Any] = {
        "started": started_at,
        "duration_s": time.monotonic() - started,
        "machine": machine,
        "config": {
            "quick": args.quick,
            "reps": args.reps,
            "scenarios": args.scenario_list,
            "sequential": args.sequential,
            "calls": args.calls,
            "batch": args.batch,
            "tools": args.tools,
            "inflight": args.inflight,
            "inflight_seconds": args.inflight_seconds,
            "many": args.many,
            "call_timeout": args.call_timeout,
            "broker": f"mosquitto {machine['versions']['mosquitto']} on 127.0.0.1",
            "argentic_note": note,
        },
        "results": results,
        "targets": [],
    }
    markdown, data["targets"] = build_markdown(data)
    markdown = stamped(markdown)  # printed as written
    print(markdown)
    directory = results_dir(args)
    write_report(directory / "latest.md", markdown, data)
    # The chart of (a), or none: a chart from an older run in the same folder goes.
    chart = latency_chart(data)
    if chart is None:
        (directory / CDF_FILE).unlink(missing_ok=True)
    else:
        (directory / CDF_FILE).write_text(chart, encoding="utf-8")
    also = f", {CDF_FILE}" if chart is not None else ""
    cli.log(f"written: {directory / 'latest.md'}, latest.json{also}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return cli.exit_status(lambda: measure(parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
