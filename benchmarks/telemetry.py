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
import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto
from benchmarks.harness.machine import git, git_revision, machine_info, package_version
from benchmarks.harness.peers import Peer, PeerError, Peers
from benchmarks.harness.procs import PACKAGE_PARENT
from benchmarks.harness.results import RESULTS_DIR, add_results_arguments, results_file
from benchmarks.harness.stats import percentile
from benchmarks.telemetry_report import VARIANTS, Settings, build_markdown

PEER_SCRIPT = Path(__file__).resolve().parent / "telemetry_peer.py"
BEFORE_COMMIT = "c5be057"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
RUN_MARGIN = 60.0
"""Seconds a caller may take beyond its nominal duration before the run is abandoned."""


# -- the trees under test -------------------------------------------------------------


def extract_commit(commit: str, into: Path) -> str:
    """The tree of ``commit`` in ``into`` (read-only for the repository); its full hash."""
    full = git("rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    archive = git("archive", "--format=tar", full)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return full


def snapshot_working_tree(into: Path) -> str:
    """A copy of the working tree's ``argentic_tools/`` in ``into``; what it was, in words."""
    revision = git_revision(" (no uncommitted changes in argentic_tools/)")
    shutil.copytree(
        PACKAGE_PARENT / "argentic_tools",
        into / "argentic_tools",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return revision


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


async def spawn(peers: Peers, name: str, args: list[str], tree: Path) -> Peer:
    """``python -P telemetry_peer.py ARGS`` in ``tree``, in its own session."""
    return await peers.start(
        name,
        [sys.executable, "-P", str(PEER_SCRIPT), *args],
        cwd=tree,
        env=child_env(tree),
        line_limit=1 << 20,  # the caller's result line holds every latency
    )


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
) -> dict[str, Any]:
    """One fresh mosquitto, tool process and caller process; the caller's figures."""
    load = os.getloadavg()[0]
    sdk = ["--sdk"] if variant == "sdk" else []
    with Mosquitto(binary) as broker:
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
    trees: dict[str, Path], settings: Settings, reps: int, binary: str, peers: Peers
) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    try:
        for rep in range(1, reps + 1):
            for variant in VARIANTS:
                cli.log(f"rep {rep}/{reps}: {variant}")
                run = await run_once(variant, rep, trees[variant], settings, binary, peers)
                cli.log(
                    f"  p50 {run['p50']:.3f} ms, p99 {run['p99']:.3f} ms, "
                    f"{run['calls_per_s']:,.0f} calls/s, CPU ms/call caller "
                    f"{run['caller_cpu']:.3f} tool {run['tool_cpu']:.3f}"
                )
                runs.append(run)
    finally:
        with contextlib.suppress(Exception):
            await peers.stop_all()
    return runs


# -- command line -------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        "python -m benchmarks.telemetry",
        "Telemetry's cost on the hot path: before it, API only, SDK.",
    )
    parser.add_argument(
        "--reps", type=cli.positive_int, default=3, help="interleaved repetitions (3)"
    )
    add_results_arguments(
        parser,
        "--out",
        committed=RESULTS_DIR / "telemetry.md",
        exclusive=True,
        help_text="report file (default: a new scratch file)",
    )
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--before", default=BEFORE_COMMIT, help=f"commit ({BEFORE_COMMIT})")
    parser.add_argument(
        "--warmup", type=cli.non_negative_int, default=200, help="warm-up calls (200)"
    )
    parser.add_argument(
        "--calls", type=cli.positive_int, default=2000, help="sequential calls (2000)"
    )
    parser.add_argument(
        "--inflight", type=cli.positive_int, default=100, help="calls in flight (100)"
    )
    parser.add_argument(
        "--seconds", type=cli.positive_float, default=5.0, help="throughput window (5)"
    )
    return cli.parse(parser, argv)


def command_line(argv: list[str]) -> str:
    return " ".join(["python -m benchmarks.telemetry", *argv])


def measure(args: argparse.Namespace, argv: list[str]) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    settings = Settings(args.warmup, args.calls, args.inflight, args.seconds)
    machine = machine_info(binary)
    started = time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="argentic-tools-telemetry-") as scratch:
        root = Path(scratch).resolve()
        trees = {"before": root / "before", "api": root / "now", "sdk": root / "now"}
        for tree in set(trees.values()):
            tree.mkdir()
        (root / "logs").mkdir()
        try:
            before_commit = extract_commit(args.before, trees["before"])
            working_tree = snapshot_working_tree(trees["api"])
        except subprocess.CalledProcessError as exc:
            raise cli.UsageError(f"git: {exc.stderr.decode(errors='replace').strip()}") from None
        peers = Peers(root / "logs")
        try:
            runs = cli.run_async(run_all(trees, settings, args.reps, binary, peers))
        finally:
            peers.kill_remaining()
    machine["load_after"] = list(os.getloadavg())
    data: dict[str, Any] = {
        "command": command_line(argv),
        "started": started_at,
        "duration_s": time.monotonic() - started,
        "machine": machine,
        "otel_versions": {
            "api": package_version("opentelemetry-api"),
            "sdk": package_version("opentelemetry-sdk"),
        },
        "before_commit": before_commit,
        "working_tree": working_tree,
        "settings": settings,
        "reps": args.reps,
        "trees": trees,
        "runs": runs,
    }
    markdown = build_markdown(data)
    target = results_file(args)
    target.write_text(markdown)
    print(markdown)
    cli.log(f"written: {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    return cli.exit_status(lambda: measure(parse_args(given), given))


if __name__ == "__main__":
    raise SystemExit(main())
