"""Scale-out: what idle managers cost a busy one, and what a manager joining a fleet costs.

``python -m benchmarks.scale_out [--scenario idle|join|all] [--out DIR | --update-results]``

Each scenario starts its own mosquitto on a free 127.0.0.1 port (``set_tcp_nodelay
true``, ``sys_interval 1``) and real processes (``benchmarks.scale_out_peers``):

- **idle**: one tool process serving ``echo`` (no concurrency limit) and a caller
  process whose ToolManager keeps ``--inflight`` (100) ``echo`` calls in flight for a
  1 s warm-up and then ``--seconds`` (10): (a) alone, (b) with ``--idle-managers`` (20)
  more manager processes connected, each initialised and then idle. The caller reads
  ``/proc/<pid>/stat`` (utime + stime) of itself, the tool, the broker and the idle
  managers at both ends of its measured window. Targets: the idle managers together
  use < 5 % of one core; the caller's calls/s in (b) >= 0.9 x (a). ``--reps N`` runs N
  interleaved (a)/(b) pairs (each (b) with fresh idle managers) and judges the medians:
  on a small shared machine one pair's ratio can be off by 20 %.
- **join**: ``--processes`` (10) tool processes with ``--tools-per-process`` (100)
  tools each (``t{proc}_{i}(n: int)``), then ``--joiners`` (20) manager processes, one
  after another. Each measures the time from just before its connection until
  ``len(manager.get_tool_names())`` is the whole fleet (polled every 10 ms), and stays
  connected. Broker messages per join are the PUBLISH packets mosquitto received and
  sent (``$SYS/broker/publish/messages/received`` and ``.../sent``) from a quiet broker
  before the join until it is quiet again (counters unchanged for 2 consecutive
  updates). Targets: every manager sees the whole fleet within 3 s; messages per join
  <= 3 x tools.

The broker's counters come from its $SYS topics (``benchmarks.scale_out_counters``).
mosquitto 2.0 publishes $SYS every 2 s with ``sys_interval 1`` (it waits for *more* than
the interval), so waiting for quiet costs about 4-6 s per join.

Writes ``scale_out.md`` and ``scale_out.json`` into ``--out`` (default: a new directory
under $TMPDIR, printed), or into ``benchmarks/results/`` with ``--update-results``.
Exit status: 0 when the run completed (targets met or not), 1 when it could not
complete, 2 for bad input, 130 after Ctrl-C or SIGTERM. Every process it starts runs in
its own session and is stopped before it exits.
"""

import argparse
import asyncio
import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto
from benchmarks.harness.machine import git_revision, machine_info
from benchmarks.harness.measure import cpu_ticks
from benchmarks.harness.peers import Peer, Peers
from benchmarks.harness.results import add_results_arguments, results_dir, stamped, write_report
from benchmarks.scale_out_counters import SysReader, delta
from benchmarks.scale_out_report import (
    CLOCK_TICKS,
    build_markdown,
    idle_result,
    join_result,
    summarise_call_run,
)

PEERS_MODULE = "benchmarks.scale_out_peers"
BROKER_EXTRA = "sys_interval 1\n"
START_TIMEOUT = 90.0
"""Seconds a peer process may take to say it is ready (20 Pythons starting on 2 cores)."""


def ticks_of(pids: Iterable[int]) -> int:
    """Total CPU clock ticks of ``pids`` (those already gone count as 0)."""
    return sum(cpu_ticks(pid) or 0 for pid in pids)


async def start_peer(peers: Peers, name: str, role: str, *args: str) -> Peer:
    """A ``benchmarks.scale_out_peers`` process in ``role``."""
    return await peers.python(name, PEERS_MODULE, role, *args)


# -- scenarios ----------------------------------------------------------------------


async def run_idle(args: argparse.Namespace, binary: str, peers: Peers) -> dict[str, Any]:
    pairs: list[dict[str, Any]] = []
    with Mosquitto(binary, extra_config=BROKER_EXTRA) as broker:
        assert broker.pid is not None
        async with SysReader(broker.port) as counters:
            tool = await start_peer(peers, "idle-echo", "echo", "--broker", broker.url)
            await tool.event("ready", START_TIMEOUT)
            watch = [f"tool:{tool.pid}", f"broker:{broker.pid}"]
            for rep in range(args.reps):
                pair: dict[str, Any] = {}
                pair["alone"] = await call_run(args, peers, broker.url, counters, watch, [], rep)
                idle = await start_idle_managers(args.idle_managers, peers, broker.url, rep)
                pair["with_idle"] = await call_run(
                    args, peers, broker.url, counters, watch, idle, rep
                )
                await peers.stop(idle)  # the next repetition's (a) runs alone again
                alone = pair["alone"]["calls_per_s"]
                pair["ratio"] = pair["with_idle"]["calls_per_s"] / alone if alone else 0.0
                pairs.append(pair)
            await peers.stop([tool])
    settings = {
        "seconds": args.seconds,
        "inflight": args.inflight,
        "idle_managers": args.idle_managers,
        "reps": args.reps,
    }
    return idle_result(settings, pairs)


async def start_idle_managers(count: int, peers: Peers, url: str, rep: int) -> list[Peer]:
    """``count`` manager processes, returned once each has initialised and seen ``echo``."""
    if not count:
        return []
    cli.log(f"idle: starting {count} idle manager processes")
    started = time.perf_counter()
    idle = [
        await start_peer(
            peers, f"idle-manager-{rep}-{i}", "idle", "--broker", url, "--wait-for", "echo"
        )
        for i in range(count)
    ]
    await asyncio.gather(*(p.event("ready", START_TIMEOUT) for p in idle))
    cli.log(f"idle: {count} managers ready in {time.perf_counter() - started:.1f} s")
    return idle


async def call_run(
    args: argparse.Namespace,
    peers: Peers,
    url: str,
    counters: SysReader,
    watch: list[str],
    idle: list[Peer],
    rep: int,
) -> dict[str, Any]:
    """One caller process's run, from a quiet broker until it is quiet again."""
    label = f"with {len(idle)} idle managers" if idle else "alone"
    before, quiet_before = await counters.quiet(len(counters.snapshots))
    watched = [*watch, *(f"idle:{peer.pid}" for peer in idle)]
    cli.log(f"idle ({label}): {args.inflight} calls in flight for {args.seconds:g} s")
    caller = await start_peer(
        peers,
        f"caller-{rep}-{len(idle)}",
        "caller",
        "--broker",
        url,
        "--seconds",
        str(args.seconds),
        "--inflight",
        str(args.inflight),
        *(item for pid in watched for item in ("--watch", pid)),
    )
    result = await caller.event("result", args.seconds + START_TIMEOUT + 60)
    await peers.stop([caller])
    after, quiet_after = await counters.quiet(before.index + 1)
    run = summarise_call_run(result, len(idle), delta(before, after))
    run["quiet"] = quiet_before and quiet_after
    cli.log(
        f"idle ({label}): {run['calls_per_s']:,.0f} calls/s, idle managers "
        f"{run['idle_managers_cpu_pct']:.1f} % of one core"
    )
    return run


async def run_join(args: argparse.Namespace, binary: str, peers: Peers) -> dict[str, Any]:
    fleet_size = args.processes * args.tools_per_process
    joins: list[dict[str, Any]] = []
    with Mosquitto(binary, extra_config=BROKER_EXTRA) as broker:
        assert broker.pid is not None
        async with SysReader(broker.port) as counters:
            cli.log(f"join: {args.processes} tool processes x {args.tools_per_process} tools")
            tools = [
                await start_peer(
                    peers,
                    f"fleet-{p}",
                    "fleet",
                    "--broker",
                    broker.url,
                    "--index",
                    str(p),
                    "--tools",
                    str(args.tools_per_process),
                )
                for p in range(args.processes)
            ]
            await asyncio.gather(*(p.event("ready", START_TIMEOUT) for p in tools))
            before, _ = await counters.quiet(len(counters.snapshots))
            managers: list[Peer] = []
            for k in range(args.joiners):
                cpu_before = (
                    ticks_of(p.pid for p in tools),
                    ticks_of(p.pid for p in managers),
                    ticks_of([broker.pid]),
                )
                joiner = await start_peer(
                    peers,
                    f"joiner-{k}",
                    "joiner",
                    "--broker",
                    broker.url,
                    "--tools",
                    str(fleet_size),
                    "--limit",
                    str(args.join_limit),
                )
                joined = await joiner.event("joined", args.join_limit + START_TIMEOUT)
                after, quiet = await counters.quiet(before.index + 1)
                cpu_after = (
                    ticks_of(p.pid for p in tools),
                    ticks_of(p.pid for p in managers),
                    ticks_of([broker.pid]),
                )
                managers.append(joiner)
                messages = delta(before, after)
                joins.append(
                    {
                        "join": k + 1,
                        "managers_before": k,
                        "seconds": joined["seconds"],
                        "connect_seconds": joined["connect_seconds"],
                        "tools_seen": joined["tools"],
                        "complete": joined["complete"],
                        "joiner_cpu_s": joined["cpu_seconds"],
                        "messages": messages,
                        "messages_per_tool": messages["publish_total"] / fleet_size,
                        "quiet": quiet,
                        "tools_cpu_s": (cpu_after[0] - cpu_before[0]) / CLOCK_TICKS,
                        "other_managers_cpu_s": (cpu_after[1] - cpu_before[1]) / CLOCK_TICKS,
                        "broker_cpu_s": (cpu_after[2] - cpu_before[2]) / CLOCK_TICKS,
                    }
                )
                cli.log(
                    f"join {k + 1}: {joined['tools']} tools in {joined['seconds']:.2f} s, "
                    f"{messages['publish_total']:,} PUBLISH at the broker"
                    + ("" if quiet else " (the broker never went quiet)")
                )
                before = after
            await peers.stop(managers)
            await peers.stop(tools)
    settings = {
        "processes": args.processes,
        "tools_per_process": args.tools_per_process,
        "tools": fleet_size,
        "joiners": args.joiners,
        "join_limit_s": args.join_limit,
    }
    return join_result(settings, joins)


# -- command line -------------------------------------------------------------------


async def run_all(args: argparse.Namespace, binary: str, peers: Peers) -> dict[str, Any]:
    results: dict[str, Any] = {}
    try:
        if args.scenario in ("idle", "all"):
            results["idle"] = await run_idle(args, binary, peers)
        if args.scenario in ("join", "all"):
            results["join"] = await run_join(args, binary, peers)
    finally:
        with contextlib.suppress(Exception):
            await peers.stop_all()
    return results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        "python -m benchmarks.scale_out",
        "Idle managers' cost and managers joining a fleet, each on its own mosquitto.",
    )
    parser.add_argument("--scenario", choices=("idle", "join", "all"), default="all")
    add_results_arguments(
        parser, "--out", exclusive=True, help_text="directory for scale_out.md and scale_out.json"
    )
    cli.add_mosquitto_argument(parser)
    count = cli.positive_int
    idle = parser.add_argument_group("idle")
    idle.add_argument(
        "--seconds", type=cli.positive_float, default=10.0, help="measured window (10)"
    )
    idle.add_argument("--inflight", type=count, default=100, help="calls in flight (100)")
    idle.add_argument(
        "--idle-managers", type=cli.non_negative_int, default=20, help="idle managers in (b) (20)"
    )
    idle.add_argument(
        "--reps", type=count, default=1, help="(a)/(b) pairs, interleaved; ratio = their median (1)"
    )
    join = parser.add_argument_group("join")
    join.add_argument("--processes", type=count, default=10, help="tool processes (10)")
    join.add_argument("--tools-per-process", type=count, default=100, help="(100)")
    join.add_argument("--joiners", type=count, default=20, help="managers joining (20)")
    join.add_argument(
        "--join-limit", type=float, default=30.0, help="seconds a joiner waits at most (30)"
    )
    return cli.parse(parser, argv)


def revision() -> str:
    try:
        return git_revision()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"


def measure(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    machine = machine_info(binary)
    started = time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="scale-out-logs-") as logdir:
        peers = Peers(Path(logdir))
        try:
            results = cli.run_async(run_all(args, binary, peers))
        finally:
            peers.kill_remaining()
    machine["load_after"] = list(os.getloadavg())
    data: dict[str, Any] = {
        "scenario": args.scenario,
        "started": started_at,
        "duration_s": time.monotonic() - started,
        "revision": revision(),
        "machine": machine,
        **results,
    }
    markdown = build_markdown(data)
    out = results_dir(args)
    markdown = stamped(markdown)  # printed as written
    write_report(out / "scale_out.md", markdown, data)
    print(markdown)
    cli.log(f"wrote {out / 'scale_out.md'} and {out / 'scale_out.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return cli.exit_status(lambda: measure(parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
