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
import asyncio
import json
import os
import platform
import re
import signal
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks._broker import (
    BrokerError,
    Mosquitto,
    find_mosquitto,
    free_port,
    mosquitto_version,
    port_in_use,
)
from benchmarks._procs import Children

_HERE = Path(__file__).resolve().parent
# In a source checkout the results go next to this file; from an installed package (no
# pyproject.toml above us) into ./benchmark-results rather than into site-packages.
RESULTS_DIR = (
    _HERE / "results" if (_HERE.parent / "pyproject.toml").is_file() else Path("benchmark-results")
)


def add_results_arguments(parser: argparse.ArgumentParser) -> None:
    """``--results-dir`` and ``--update-results``: where a benchmark writes its report."""
    parser.add_argument(
        "--results-dir", type=Path, default=None, help="output folder (default: a new scratch one)"
    )
    parser.add_argument(
        "--update-results",
        action="store_true",
        help=f"write the committed results in {RESULTS_DIR} instead",
    )


def results_dir(args: argparse.Namespace) -> Path:
    """The folder a run writes to: the committed results only when asked to update them."""
    if args.results_dir is not None:
        return Path(args.results_dir)
    if args.update_results:
        return RESULTS_DIR
    return Path(tempfile.mkdtemp(prefix="argentic-tools-results-"))


ALL_SCENARIOS = "abcdef"

FULL = {"sequential": 500, "calls": 5000, "inflight": 10_000, "many": 1000}
QUICK = {"sequential": 100, "calls": 1000, "inflight": 2000, "many": 200}


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description="Benchmark argentic-tools against a raw aiomqtt floor and argentic 0.16.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("--quick", action="store_true", help="small counts (about a minute)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--scenarios", default="a,b,c,d,e,f", help="comma-separated subset of a,b,c,d,e,f"
    )
    parser.add_argument("--port", type=int, help="broker port (default: a free one)")
    parser.add_argument("--mosquitto", help="path of the mosquitto binary")
    parser.add_argument("--no-argentic", action="store_true", help="leave argentic out")
    parser.add_argument("--sequential", type=int, help="calls in (a) and (f) (500; quick 100)")
    parser.add_argument("--calls", type=int, help="calls in (b) and (c) (5000; quick 1000)")
    parser.add_argument("--batch", type=int, default=100, help="batch size in (b), (c)")
    parser.add_argument("--tools", type=int, default=10, help="tools in (c)")
    parser.add_argument("--inflight", type=int, help="calls at once in (d) (10000; quick 2000)")
    parser.add_argument("--inflight-seconds", type=float, default=1.0, help="wait() in (d)")
    parser.add_argument("--many", type=int, help="tools in (e) (1000; quick 200)")
    parser.add_argument("--call-timeout", type=float, default=10.0, help="seconds per call")
    parser.add_argument(
        "--storm-limit", type=float, default=60.0, help="seconds (e) waits for all tools"
    )
    add_results_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # `argentic-tools bench -- --quick` passes the separator on
        argv = argv[1:]
    args = parser.parse_args(argv)
    args.results_dir = results_dir(args)
    scenarios = [s.strip().lower() for s in args.scenarios.split(",") if s.strip()]
    unknown = [s for s in scenarios if s not in ALL_SCENARIOS or len(s) != 1]
    if unknown or not scenarios:
        parser.error(f"--scenarios takes letters from a,b,c,d,e,f; got {args.scenarios!r}")
    args.scenario_list = [s for s in ALL_SCENARIOS if s in scenarios]
    sizes = QUICK if args.quick else FULL
    for key, value in sizes.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for key in ("reps", "sequential", "calls", "batch", "tools", "inflight", "many"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')} must be at least 1")
    if args.port is not None and not 0 < args.port < 65536:
        parser.error("--port must be 1-65535")
    return args


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine_info(binary: str, argentic: str | None) -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "load_before": list(os.getloadavg()),
        "load_after": [],
        "platform": platform.platform(),
        "versions": {
            "python": platform.python_version(),
            "mosquitto": mosquitto_version(binary),
            "aiomqtt": _version("aiomqtt"),
            "paho-mqtt": _version("paho-mqtt"),
            "pydantic": _version("pydantic"),
            "argentic": argentic or "not installed",
            "argentic-tools": _version("argentic-tools"),
        },
    }


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
    echo_tools = ["--echo-tools", str(args.tools)]

    impls: list[Impl] = []
    if compared:
        impls.append(Floor(broker.port, f"{run_id}-floor", args.call_timeout))
    ours: Ours | None = None
    if compared or wanted & set("df"):
        ours = Ours("ours", broker.url, f"{run_id}-ours", args.call_timeout)
        ctx.ours = ours
        if compared:
            impls.append(ours)
    basetool = Ours("ours-basetool", broker.url, f"{run_id}-basetool", args.call_timeout)
    if compared:
        impls.append(basetool)
    if compared and argentic:
        impls.append(Argentic(broker.port, f"{run_id}-argentic", args.call_timeout))
    opened: list[Impl] = []
    try:
        # Managers first: an argentic tool registers once, so its manager must be listening.
        for impl in [*impls, *([ours] if ours is not None and ours not in impls else [])]:
            await impl.open()
            opened.append(impl)
        started: dict[str, Any] = {}
        for impl in opened:
            if impl.name == "floor":
                started[impl.name] = children.python(
                    "floor-responder",
                    "benchmarks.floor_responder",
                    "--port",
                    str(broker.port),
                    "--prefix",
                    f"{run_id}-floor",
                )
            elif impl.name == "ours":
                started[impl.name] = children.python(
                    "ours-tool",
                    "benchmarks.ours_tool",
                    "--broker",
                    broker.url,
                    "--topic-prefix",
                    f"{run_id}-ours",
                    *echo_tools,
                )
            elif impl.name == "ours-basetool":
                started[impl.name] = children.python(
                    "ours-basetool-tool",
                    "benchmarks.ours_tool",
                    "--kind",
                    "basetool",
                    "--broker",
                    broker.url,
                    "--topic-prefix",
                    f"{run_id}-basetool",
                    *echo_tools,
                )
            elif impl.name == "argentic":
                started[impl.name] = children.python(
                    "argentic-tool",
                    "benchmarks.argentic_tool",
                    "--port",
                    str(broker.port),
                    "--prefix",
                    f"{run_id}-argentic",
                    *echo_tools,
                )
        for impl in opened:
            needed = tool_names if impl in impls else ["echo"]
            if impl is ours:
                needed = [*needed, "wait", "typed", "empty"]
            try:
                await impl.ready(needed, timeout=30)
            except TimeoutError:
                child = started[impl.name]
                raise RuntimeError(
                    f"{impl.name}: its tools did not answer within 30 s; its log:\n"
                    f"{child.log_tail()}"
                ) from None
            log(f"ready: {impl.name}")

        results: list[dict[str, Any]] = []

        async def guarded(scenario: str, name: str, rep: int, calls: int, coro: Any) -> None:
            try:
                result = await coro
            except Exception as exc:
                result = sc.failed_record(
                    scenario, name, rep, calls, f"{type(exc).__name__}: {exc}"
                )
                log(f"[rep {rep}] ({scenario}) {name}: ABORTED: {result['error']}")
            else:
                log(f"[rep {rep}] ({scenario}) {name}: {summary(result)}")
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
                log(f"closing {impl.name}: {exc}")


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


_NUMBER = r"-?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|NaN|Infinity)"
# A list of numbers as indented json.dumps lays it out; a string never holds a raw newline.
_NUMBER_LIST = re.compile(rf"\[\n\s*({_NUMBER}(?:,\n\s*{_NUMBER})*)\n\s*\]")


def to_json(data: dict[str, Any]) -> str:
    """Indented JSON with each list of numbers on one line (the raw latencies run to 1000s)."""
    text = json.dumps(data, indent=2, default=str)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(re.split(r",\s*", m[1])) + "]", text)


def write_outputs(
    directory: Path, markdown: str, data: dict[str, Any], chart: str | None = None
) -> None:
    """``latest.md``, ``latest.json`` and the latency chart; a chart from an older run goes."""
    from benchmarks._report import CDF_FILE

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "latest.md").write_text(markdown)
    (directory / "latest.json").write_text(to_json(data) + "\n")
    if chart is None:
        (directory / CDF_FILE).unlink(missing_ok=True)
    else:
        (directory / CDF_FILE).write_text(chart, encoding="utf-8")


class InterruptedRunError(Exception):
    """SIGTERM arrived while the event loop ran; the run was cancelled and cleaned up."""


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # outside the event loop: unwinds like Ctrl-C


async def run_cancellable(
    args: argparse.Namespace, broker: Mosquitto, children: Children, argentic: str | None
) -> list[dict[str, Any]]:
    """``run_all`` with SIGTERM turned into a cancellation (asyncio.run does so for SIGINT)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_sigterm() -> None:
        received.append(signal.SIGTERM)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        return await run_all(args, broker, children, argentic)
    except asyncio.CancelledError:
        if received:
            raise InterruptedRunError from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    binary = find_mosquitto(args.mosquitto)
    try:
        if binary is None:
            where = args.mosquitto or ", ".join(
                ("mosquitto on PATH", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")
            )
            raise UsageError(
                f"mosquitto not found (looked for {where}); install it (`apt-get install "
                "mosquitto`, `brew install mosquitto`) or pass --mosquitto PATH"
            )
        if args.port is not None and port_in_use(args.port):
            raise UsageError(
                f"port {args.port} on 127.0.0.1 is already in use; pass another --port or "
                "leave it out to use a free one"
            )
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from benchmarks._impls import argentic_version

    argentic = None if args.no_argentic else argentic_version()
    note = None
    if args.no_argentic:
        note = "left out (--no-argentic): its rows and ratios are absent"
    elif argentic is None:
        note = "not importable in this environment: its rows and ratios are absent"
        log("note: argentic is not installed; comparing with the floor only")
    machine = machine_info(binary, argentic)
    broker = Mosquitto(binary, args.port or free_port())
    children = Children()
    previous = signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        broker.start()
        log(
            f"mosquitto {machine['versions']['mosquitto']} on {broker.url}; "
            f"{machine['cpu_count']} cores, load {machine['load_before'][0]:.2f}"
        )
        results = asyncio.run(run_cancellable(args, broker, children, argentic))
    except (KeyboardInterrupt, InterruptedRunError):
        log("interrupted: stopping every process the benchmark started")
        return 130
    except BrokerError as exc:
        print(f"error: {exc}\n{broker.log_tail()}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(
            f"error: the benchmark could not complete: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return 1
    finally:
        children.cleanup()
        broker.stop()
        signal.signal(signal.SIGTERM, previous)
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
        "results": [],
        "targets": [],
    }
    data["results"] = results
    markdown, targets = build_markdown(data)
    data["targets"] = targets
    print(markdown)
    chart = latency_chart(data)
    write_outputs(args.results_dir, markdown, data, chart)
    also = f", {CDF_FILE}" if chart is not None else ""
    log(f"written: {args.results_dir / 'latest.md'}, latest.json{also}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
