"""Telemetry on the hot path: the library before it, with the OpenTelemetry API, with the SDK.

``python -m benchmarks.telemetry [--reps 3] [--out FILE | --update-results]``

Three variants, each run as a fresh pair of processes (``benchmarks/telemetry_peer.py``:
one tool process serving ``echo``, one caller process with a ToolManager) on its own
mosquitto (a free 127.0.0.1 port, ``set_tcp_nodelay true``):

- **before**: the library at ``BEFORE_COMMIT`` (the commit before telemetry), extracted
  with ``git archive`` into a temporary directory;
- **api**: the working tree (a copy of ``argentic_tools/`` taken at the start, so that
  edits made during the run do not mix into it), with no SDK: the API's no-op;
- **sdk**: the same copy, with the OpenTelemetry SDK installed in both processes (a
  TracerProvider with SimpleSpanProcessor(InMemorySpanExporter), a MeterProvider with
  an InMemoryMetricReader); each process counts and empties its span exporter every
  0.5 s from a task on its event loop.

Both processes run with the variant's tree first on ``PYTHONPATH`` and as their working
directory, as ``python -P`` (no script directory on ``sys.path``); each reports the
``argentic_tools.__file__`` it imported, and the run stops unless that is inside the
variant's tree. Per run: p50 and p99 of ``--calls`` (2,000) sequential calls after
``--warmup`` (200); calls per second with ``--inflight`` (100) calls in flight for
``--seconds`` (5) after 1 s at the same load; CPU ms per call of the caller and of the
tool process (utime + stime from ``/proc/<pid>/stat`` at both ends of that window). The
variants are interleaved per repetition (before, api, sdk, before, ...); cells are
medians (min-max), ratios are taken within each repetition and then their median.

Goal: with the API only, p50 and throughput within 3 % of before. The Markdown report is
printed and written to ``--out`` (default: a new scratch file, printed), or to
``benchmarks/results/telemetry.md`` with ``--update-results``. Exit status: 0 when the
run completed (goal met or not), 1 when it could not complete, 2 for bad input, 130 after
Ctrl-C or SIGTERM. Every process it starts runs in its own session and is stopped before
it exits; the temporary trees are removed.
"""

import argparse
import asyncio
import contextlib
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks._broker import BrokerError, Mosquitto, find_mosquitto, free_port
from benchmarks._procs import PACKAGE_PARENT
from benchmarks._stats import fmt, fmt_range, median, percentile, ratio
from benchmarks.run import machine_info
from benchmarks.scale_out import Peer, PeerError, Peers

RESULTS = PACKAGE_PARENT / "benchmarks" / "results" / "telemetry.md"
PEER_SCRIPT = Path(__file__).resolve().parent / "telemetry_peer.py"
BEFORE_COMMIT = "c5be057"
VARIANTS = ("before", "api", "sdk")
TOLERANCE = 0.03
"""The goal: with the API only, p50 at most 3 % above before, throughput at most 3 % below."""
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
RUN_MARGIN = 60.0
"""Seconds a caller may take beyond its nominal duration before the run is abandoned."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the trees under test -------------------------------------------------------------


def git(*args: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(PACKAGE_PARENT), *args], capture_output=True, timeout=60, check=True
    ).stdout


def extract_commit(commit: str, into: Path) -> str:
    """The tree of ``commit`` in ``into`` (read-only for the repository); its full hash."""
    full = git("rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    archive = git("archive", "--format=tar", full)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return full


def snapshot_working_tree(into: Path) -> str:
    """A copy of the working tree's ``argentic_tools/`` in ``into``; what it was, in words."""
    head = git("rev-parse", "--short", "HEAD").decode().strip()
    changed = git("status", "--porcelain", "--", "argentic_tools").decode().strip()
    diff = git("diff", "HEAD", "--", "argentic_tools")
    shutil.copytree(
        PACKAGE_PARENT / "argentic_tools",
        into / "argentic_tools",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    if not changed:
        return f"{head} (no uncommitted changes in argentic_tools/)"
    digest = hashlib.sha1(diff, usedforsecurity=False).hexdigest()[:10]
    files = len(changed.splitlines())
    return f"{head} + uncommitted changes in {files} files of argentic_tools/ (diff {digest})"


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a peer: the tree first on PYTHONPATH, no OTEL_* or coverage hooks."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OTEL_") and not key.startswith("COVERAGE_PROCESS_")
    }
    env["PYTHONPATH"] = str(tree)
    env["PYTHONUNBUFFERED"] = "1"
    return env


# -- one run --------------------------------------------------------------------------


@dataclass
class Settings:
    warmup: int
    calls: int
    inflight: int
    seconds: float
    throughput_warmup: float = 1.0


async def spawn(peers: Peers, name: str, args: list[str], tree: Path) -> Peer:
    """``python -P telemetry_peer.py ARGS`` in ``tree``, in its own session."""
    log_path = peers.logdir / f"{name}.log"
    with log_path.open("ab") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",
            str(PEER_SCRIPT),
            *args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_file,
            cwd=tree,
            env=child_env(tree),
            start_new_session=True,  # Ctrl-C reaches the runner only; it stops us
            limit=1 << 20,  # the caller's result line holds every latency
        )
    peer = Peer(name, process, log_path)
    peers.running.append(peer)
    return peer


def check_process(variant: str, role: str, event: dict[str, Any], tree: Path) -> None:
    """Refuse a run whose process imported another library or has the wrong telemetry."""
    library = Path(event["library"])
    if not library.is_relative_to(tree.resolve()):
        raise PeerError(f"{variant} {role}: imported argentic_tools from {library}, not {tree}")
    otel = event["otel"]
    if variant == "api" and (
        otel["tracer_provider"] != "ProxyTracerProvider" or otel["sdk_imported"]
    ):
        raise PeerError(f"api {role}: an SDK is active ({otel})")
    if variant == "sdk" and otel.get("tracer_provider") != "TracerProvider":
        raise PeerError(f"sdk {role}: the SDK's tracer provider is not installed ({otel})")


async def run_once(
    variant: str,
    rep: int,
    tree: Path,
    settings: Settings,
    binary: str,
    peers: Peers,
    brokers: list[Mosquitto],
) -> dict[str, Any]:
    """One fresh mosquitto, tool process and caller process; the caller's figures."""
    load = os.getloadavg()[0]
    broker = Mosquitto(binary, free_port())
    brokers.append(broker)
    sdk = ["--sdk"] if variant == "sdk" else []
    try:
        broker.start()
        tool = await spawn(
            peers, f"{variant}-{rep}-tool", ["tool", "--broker", broker.url, *sdk], tree
        )
        check_process(variant, "tool", await tool.event("ready", START_TIMEOUT), tree)
        caller = await spawn(
            peers,
            f"{variant}-{rep}-caller",
            [
                "caller",
                "--broker",
                broker.url,
                "--tool-pid",
                str(tool.pid),
                "--warmup",
                str(settings.warmup),
                "--calls",
                str(settings.calls),
                "--inflight",
                str(settings.inflight),
                "--throughput-warmup",
                str(settings.throughput_warmup),
                "--seconds",
                str(settings.seconds),
                *sdk,
            ],
            tree,
        )
        nominal = settings.throughput_warmup + settings.seconds + settings.calls / 100
        result = await caller.event("result", START_TIMEOUT + nominal + RUN_MARGIN)
        check_process(variant, "caller", result, tree)
        with contextlib.suppress(ProcessLookupError):
            tool.process.send_signal(signal.SIGTERM)
        done = await tool.event("done", STOP_TIMEOUT)
        await peers.stop([caller, tool])
    finally:
        broker.stop()
        brokers.remove(broker)
    return summarise(variant, rep, load, result, done)


def summarise(
    variant: str, rep: int, load: float, result: dict[str, Any], done: dict[str, Any]
) -> dict[str, Any]:
    latencies = result["latencies_ms"]
    window = result["window"]
    calls = window["ok"]
    per_call = 1000 / result["clock_ticks_per_second"] / calls if calls else float("nan")
    ticks = result["ticks"]
    failed = result["sequential"]["failed"] + window["failed"]
    wrong = result["sequential"]["wrong"] + window["wrong"]
    return {
        "variant": variant,
        "rep": rep,
        "load_1min": load,
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "calls_per_s": calls / result["window_seconds"],
        "window_calls": calls,
        "failed": failed,
        "wrong": wrong,
        "caller_cpu": ticks["caller"] * per_call if ticks["caller"] is not None else float("nan"),
        "tool_cpu": ticks["tool"] * per_call if ticks["tool"] is not None else float("nan"),
        "calls_made": result["calls_made"],
        "library": {"caller": result["library"], "tool": done["library"]},
        "otel": {"caller": result["otel"], "tool": done["otel"]},
        "sdk": {"caller": result["sdk"], "tool": done["sdk"]},
    }


async def run_all(
    trees: dict[str, Path],
    settings: Settings,
    reps: int,
    binary: str,
    peers: Peers,
    brokers: list[Mosquitto],
) -> list[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_sigterm() -> None:
        received.append(signal.SIGTERM)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    runs: list[dict[str, Any]] = []
    try:
        for rep in range(1, reps + 1):
            for variant in VARIANTS:
                log(f"rep {rep}/{reps}: {variant}")
                run = await run_once(variant, rep, trees[variant], settings, binary, peers, brokers)
                log(
                    f"  p50 {run['p50']:.3f} ms, p99 {run['p99']:.3f} ms, "
                    f"{run['calls_per_s']:,.0f} calls/s, CPU ms/call caller "
                    f"{run['caller_cpu']:.3f} tool {run['tool_cpu']:.3f}"
                )
                runs.append(run)
    except asyncio.CancelledError:
        if received:
            raise KeyboardInterrupt from None
        raise
    finally:
        with contextlib.suppress(Exception):
            await peers.stop_all()
        loop.remove_signal_handler(signal.SIGTERM)
    return runs


# -- report ---------------------------------------------------------------------------

METRICS = (
    ("p50", "p50 ms", 3),
    ("p99", "p99 ms", 3),
    ("calls_per_s", "calls/s, 100 in flight", 0),
    ("caller_cpu", "caller CPU ms per call", 3),
    ("tool_cpu", "tool CPU ms per call", 3),
)


def by_variant(runs: list[dict[str, Any]], variant: str, key: str) -> list[float]:
    return [float(run[key]) for run in runs if run["variant"] == variant]


def ratios(runs: list[dict[str, Any]], variant: str, key: str) -> list[float]:
    """``variant / before`` for ``key``, within each repetition."""
    base = {run["rep"]: run[key] for run in runs if run["variant"] == "before"}
    return [
        ratio(run[key], base.get(run["rep"]))
        for run in runs
        if run["variant"] == variant and run["rep"] in base
    ]


def cell(values: list[float], digits: int) -> str:
    if digits == 0:
        clean = sorted(values)
        if len(clean) == 1:
            return f"{clean[0]:,.0f}"
        return f"{median(clean):,.0f} ({clean[0]:,.0f}-{clean[-1]:,.0f})"
    return fmt_range(values, digits)


def percent(value: float) -> str:
    return f"{(value - 1) * 100:+.1f} %"


def verdicts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    p50 = ratios(runs, "api", "p50")
    rate = ratios(runs, "api", "calls_per_s")
    return [
        {
            "what": "API only: p50 / before",
            "goal": f"<= {1 + TOLERANCE:.2f}",
            "values": p50,
            "met": median(p50) <= 1 + TOLERANCE,
        },
        {
            "what": "API only: calls/s / before",
            "goal": f">= {1 - TOLERANCE:.2f}",
            "values": rate,
            "met": median(rate) >= 1 - TOLERANCE,
        },
    ]


def spread(values: list[float]) -> float:
    """(max - min) / median: how far apart the repetitions of one variant landed."""
    return (max(values) - min(values)) / median(values) if values else float("nan")


def noise_note(runs: list[dict[str, Any]]) -> list[str]:
    """How the spread of *before* against itself compares with the goal's tolerance."""
    p50 = spread(by_variant(runs, "before", "p50"))
    rate = spread(by_variant(runs, "before", "calls_per_s"))
    text = (
        f"Noise: *before* against itself spread by {p50 * 100:.1f} % in p50 and "
        f"{rate * 100:.1f} % in calls/s across the repetitions ((max - min) / median)"
    )
    if max(p50, rate) > TOLERANCE:
        text += (
            f", more than the {TOLERANCE * 100:.0f} % the goal allows: on this run the verdict "
            "rests on medians that cannot resolve a 3 % difference, and a ratio inside that "
            "spread is not a measured difference. CPU ms per call is the steadier figure."
        )
    else:
        text += f", within the {TOLERANCE * 100:.0f} % the goal allows."
    return [text]


def checks_section(runs: list[dict[str, Any]], trees: dict[str, Path]) -> list[str]:
    lines = [
        "| variant | argentic_tools imported from (both processes, every run) | tracer provider "
        "| SDK imported |",
        "|---|---|---|---|",
    ]
    for variant in VARIANTS:
        mine = [run for run in runs if run["variant"] == variant]
        places = {
            str(Path(path).parent.relative_to(trees[variant].resolve()))
            for run in mine
            for path in run["library"].values()
        }
        providers = {
            otel.get("tracer_provider", "API not imported")
            for run in mine
            for otel in run["otel"].values()
        }
        sdk = {otel["sdk_imported"] for run in mine for otel in run["otel"].values()}
        lines.append(
            f"| {variant} | `<{variant} tree>/{', '.join(sorted(places))}` "
            f"| {', '.join(sorted(providers))} | {', '.join('yes' if s else 'no' for s in sdk)} |"
        )
    lines.append("")
    sdk_runs = [run for run in runs if run["variant"] == "sdk"]
    if sdk_runs:
        lines += [
            "With the SDK, per run (all calls of the run, warm-ups included):",
            "",
            "| rep | calls made | caller spans | caller `client.calls` metric | tool spans "
            "| tool spans with a remote parent | tool `tool.calls` metric "
            "| most spans held (caller / tool) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for run in sdk_runs:
            caller, tool = run["sdk"]["caller"], run["sdk"]["tool"]
            lines.append(
                f"| {run['rep']} | {run['calls_made']:,} | {caller['spans']:,} "
                f"| {caller['metric_calls']:,} | {tool['spans']:,} | {tool['remote_parents']:,} "
                f"| {tool['metric_calls']:,} "
                f"| {caller['most_spans_held']:,} / {tool['most_spans_held']:,} |"
            )
        lines.append("")
    return lines


def build_markdown(data: dict[str, Any]) -> str:
    runs: list[dict[str, Any]] = data["runs"]
    info = data["machine"]
    versions = info["versions"]
    settings: Settings = data["settings"]
    reps = data["reps"]
    lines = [
        "# Telemetry on the hot path: before it, with the OpenTelemetry API only, with the SDK",
        "",
        f"`{data['command']}`, {data['started']}, {data['duration_s']:.0f} s. "
        f"{info['cpu_count']} cores, {info['platform']}, Python {versions['python']}, mosquitto "
        f"{versions['mosquitto']}, opentelemetry-api {data['otel_versions']['api']}, "
        f"opentelemetry-sdk {data['otel_versions']['sdk']}; load average "
        f"{info['load_before'][0]:.2f} before, {info['load_after'][0]:.2f} after "
        f"(1 min; 5 min {info['load_before'][1]:.2f} / {info['load_after'][1]:.2f}).",
        "",
        "- **before**: the library at "
        f"{data['before_commit'][:7]} (the commit before telemetry), `git archive` into a "
        "temporary directory;",
        f"- **api**: the working tree, {data['working_tree']}, copied at the start; no SDK in "
        "either process (the API's no-op);",
        "- **sdk**: the same copy, with the OpenTelemetry SDK in both processes: a "
        "TracerProvider with SimpleSpanProcessor(InMemorySpanExporter) and a MeterProvider with "
        "an InMemoryMetricReader. Every 0.5 s a task on each process's event loop counts the "
        "exporter's finished spans and empties it (`get_finished_spans()`, then `clear()`).",
        "",
        "Each run is a fresh mosquitto on a free 127.0.0.1 port (`set_tcp_nodelay true`), a "
        "tool process serving `echo` (ToolService, no concurrency limit) and a caller process "
        "with one ToolManager (`benchmarks/telemetry_peer.py`, run with `python -P` and the "
        "variant's tree first on `PYTHONPATH` and as the working directory). The caller makes "
        f"{settings.warmup:,} warm-up calls, then {settings.calls:,} sequential calls (p50, "
        f"p99), then keeps {settings.inflight} calls in flight for "
        f"{settings.throughput_warmup:g} s of warm-up and a measured window of "
        f"{settings.seconds:g} s (calls/s; CPU = utime + stime from `/proc/<pid>/stat` at both "
        "ends of the window, divided by the calls in it). Every call carries its own message "
        "and counts only when that comes back. Variants interleaved per repetition "
        f"({', '.join(VARIANTS)}, {', '.join(VARIANTS)}, ...); cells are medians of {reps} "
        "(min-max).",
        "",
        "| variant | " + " | ".join(label for _, label, _ in METRICS) + " | failed or wrong |",
        "|---|" + "---|" * (len(METRICS) + 1),
    ]
    for variant in VARIANTS:
        cells = [cell(by_variant(runs, variant, key), digits) for key, _, digits in METRICS]
        bad = sum(run["failed"] + run["wrong"] for run in runs if run["variant"] == variant)
        lines.append(f"| {variant} | {' | '.join(cells)} | {bad} |")
    heads = [f"rep {rep}" for rep in range(1, reps + 1)]
    lines += [
        "",
        "Ratios to before, within each repetition, then their median:",
        "",
        "| ratio | " + " | ".join(heads) + " | median |",
        "|---|" + "---|" * (len(heads) + 1),
    ]
    for variant in ("api", "sdk"):
        for key, label, _ in METRICS:
            values = ratios(runs, variant, key)
            row = " | ".join(f"{v:.3f}" for v in values)
            lines.append(f"| {variant} / before, {label} | {row} | **{median(values):.3f}** |")
    targets = verdicts(runs)
    met = all(item["met"] for item in targets)
    lines += ["", "| target | goal | measured (median of the ratios, min-max) | result |"]
    lines.append("|---|---|---|---|")
    for item in targets:
        values = item["values"]
        lines.append(
            f"| {item['what']} | {item['goal']} | {median(values):.3f} "
            f"({min(values):.3f}-{max(values):.3f}) | {'met' if item['met'] else '**not met**'} |"
        )
    p50 = {v: median(by_variant(runs, v, "p50")) for v in VARIANTS}
    rate = {v: median(by_variant(runs, v, "calls_per_s")) for v in VARIANTS}
    cpu = {
        v: (median(by_variant(runs, v, "caller_cpu")), median(by_variant(runs, v, "tool_cpu")))
        for v in VARIANTS
    }
    api_p50, api_rate = (median(ratios(runs, "api", k)) for k in ("p50", "calls_per_s"))
    sdk_p50, sdk_rate = (median(ratios(runs, "sdk", k)) for k in ("p50", "calls_per_s"))
    lines += [
        "",
        f"**Verdict: {'met' if met else 'not met'}.** With the API only, p50 "
        f"{fmt(p50['api'], 3)} ms against {fmt(p50['before'], 3)} ms before "
        f"({percent(api_p50)} within the repetitions) and {rate['api']:,.0f} calls/s against "
        f"{rate['before']:,.0f} ({percent(api_rate)}); CPU per call {fmt(cpu['api'][0], 3)} ms "
        f"in the caller and {fmt(cpu['api'][1], 3)} ms in the tool process against "
        f"{fmt(cpu['before'][0], 3)} and {fmt(cpu['before'][1], 3)} before.",
        "",
        f"**Cost of the SDK** with in-memory exporters: p50 {fmt(p50['sdk'], 3)} ms "
        f"({percent(sdk_p50)} on before), {rate['sdk']:,.0f} calls/s ({percent(sdk_rate)}); "
        f"CPU per call {fmt(cpu['sdk'][0] - cpu['api'][0], 3)} ms more in the caller and "
        f"{fmt(cpu['sdk'][1] - cpu['api'][1], 3)} ms more in the tool process than with the "
        "API only (medians).",
        "",
        *noise_note(runs),
        "",
        "## Checks",
        "",
        *checks_section(runs, data["trees"]),
        "## Every run, in the order run",
        "",
        "| # | variant | rep | load (1 min) at its start | p50 ms | p99 ms | calls/s "
        "| caller CPU ms/call | tool CPU ms/call | calls in the window |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for index, run in enumerate(runs, 1):
        lines.append(
            f"| {index} | {run['variant']} | {run['rep']} | {run['load_1min']:.2f} "
            f"| {run['p50']:.3f} | {run['p99']:.3f} | {run['calls_per_s']:,.0f} "
            f"| {run['caller_cpu']:.3f} | {run['tool_cpu']:.3f} | {run['window_calls']:,} |"
        )
    lines.append("")
    return "\n".join(lines)


# -- command line -------------------------------------------------------------------


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # outside the event loop: unwinds like Ctrl-C


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.telemetry",
        description="Telemetry's cost on the hot path: before it, API only, SDK.",
    )
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (3)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, help="report file (default: a new scratch file)")
    where.add_argument("--update-results", action="store_true", help=f"write {RESULTS}")
    parser.add_argument("--mosquitto", help="mosquitto binary (default: found on PATH)")
    parser.add_argument("--before", default=BEFORE_COMMIT, help=f"commit ({BEFORE_COMMIT})")
    parser.add_argument("--warmup", type=int, default=200, help="warm-up calls (200)")
    parser.add_argument("--calls", type=int, default=2000, help="sequential calls (2000)")
    parser.add_argument("--inflight", type=int, default=100, help="calls in flight (100)")
    parser.add_argument("--seconds", type=float, default=5.0, help="throughput window (5)")
    args = parser.parse_args(argv)
    for name in ("reps", "calls", "inflight", "seconds"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    return args


def command_line(argv: list[str]) -> str:
    return " ".join(["python -m benchmarks.telemetry", *argv])


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = parse_args(given)
    binary = find_mosquitto(args.mosquitto)
    if binary is None:
        print("error: mosquitto not found; install it or pass --mosquitto PATH", file=sys.stderr)
        return 2
    settings = Settings(args.warmup, args.calls, args.inflight, args.seconds)
    machine = machine_info(binary, None)
    started = time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    previous = signal.signal(signal.SIGTERM, _terminate)
    brokers: list[Mosquitto] = []
    with tempfile.TemporaryDirectory(prefix="argentic-tools-telemetry-") as scratch:
        root = Path(scratch).resolve()
        trees = {"before": root / "before", "api": root / "now", "sdk": root / "now"}
        for tree in set(trees.values()):
            tree.mkdir()
        (root / "logs").mkdir()
        peers = Peers(root / "logs")
        try:
            before_commit = extract_commit(args.before, trees["before"])
            working_tree = snapshot_working_tree(trees["api"])
            runs = asyncio.run(run_all(trees, settings, args.reps, binary, peers, brokers))
        except KeyboardInterrupt:
            log("interrupted: stopping every process the benchmark started")
            return 130
        except subprocess.CalledProcessError as exc:
            print(f"error: git: {exc.stderr.decode(errors='replace').strip()}", file=sys.stderr)
            return 2
        except (PeerError, BrokerError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except Exception as exc:
            print(
                f"error: the benchmark could not complete: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return 1
        finally:
            peers.kill_remaining()
            for broker in list(brokers):
                broker.stop()
            signal.signal(signal.SIGTERM, previous)
    machine["load_after"] = list(os.getloadavg())
    data: dict[str, Any] = {
        "command": command_line(given),
        "started": started_at,
        "duration_s": time.monotonic() - started,
        "machine": machine,
        "otel_versions": {
            "api": _version("opentelemetry-api"),
            "sdk": _version("opentelemetry-sdk"),
        },
        "before_commit": before_commit,
        "working_tree": working_tree,
        "settings": settings,
        "reps": args.reps,
        "trees": trees,
        "runs": runs,
    }
    markdown = build_markdown(data)
    if args.update_results:
        target = RESULTS
    elif args.out is not None:
        target = args.out
    else:
        handle, name = tempfile.mkstemp(prefix="telemetry-", suffix=".md")
        os.close(handle)
        target = Path(name)
    target.write_text(markdown)
    print(markdown)
    log(f"written: {target}")
    return 0


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
