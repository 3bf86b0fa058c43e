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

The $SYS reader is a client of the broker too: the $SYS messages delivered to it are
subtracted from ``sent`` exactly (mosquitto counts a message when it queues it, so the
reader's own deliveries before each counter message are known). mosquitto 2.0 publishes
$SYS every 2 s with ``sys_interval 1`` (it waits for *more* than the interval), so
waiting for quiet costs about 4-6 s per join.

Writes ``scale_out.md`` and ``scale_out.json`` into ``--out`` (default: a new directory
under $TMPDIR, printed), or into ``benchmarks/results/`` with ``--update-results``.
Exit status: 0 when the run completed (targets met or not), 1 when it could not
complete, 2 for bad input, 130 after Ctrl-C or SIGTERM. Every process it starts runs in
its own session and is stopped before it exits.
"""

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt

from benchmarks._broker import BrokerError, Mosquitto, find_mosquitto, free_port
from benchmarks._procs import PACKAGE_PARENT, child_env
from benchmarks.run import machine_info
from benchmarks.scale_out_peers import cpu_ticks

RESULTS_DIR = Path(__file__).resolve().parent / "results"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PEERS_MODULE = "benchmarks.scale_out_peers"
BROKER_EXTRA = "sys_interval 1\n"
QUIET_INTERVALS = 2
QUIET_TIMEOUT = 90.0
START_TIMEOUT = 90.0
"""Seconds a peer process may take to say it is ready (20 Pythons starting on 2 cores)."""

IDLE_CPU_TARGET = 5.0
"""Percent of one core the idle managers may use together."""
RATIO_TARGET = 0.9
JOIN_SECONDS_TARGET = 3.0
MESSAGES_PER_TOOL_TARGET = 3.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class PeerError(RuntimeError):
    """A peer process exited or stayed silent; the message ends with its log's tail."""


# -- processes ----------------------------------------------------------------------


class Peer:
    """One ``benchmarks.scale_out_peers`` process: JSON events on stdout, log on stderr."""

    def __init__(self, name: str, process: asyncio.subprocess.Process, log_path: Path) -> None:
        self.name = name
        self.process = process
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def event(self, kind: str, timeout: float) -> dict[str, Any]:
        """The next ``{"event": kind, ...}`` line; PeerError on exit or after ``timeout``."""
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    line = await self.process.stdout.readline()
                    if not line:
                        await self.process.wait()
                        raise PeerError(
                            f"{self.name} exited with status {self.process.returncode} "
                            f"before {kind!r}:\n{self.log_tail()}"
                        )
                    with contextlib.suppress(ValueError):
                        data = json.loads(line)
                        if isinstance(data, dict) and data.get("event") == kind:
                            return data
        except TimeoutError:
            raise PeerError(
                f"{self.name}: no {kind!r} within {timeout:g} s:\n{self.log_tail()}"
            ) from None


class Peers:
    """Every peer process of the run, so that one ``stop_all`` in a ``finally`` ends them."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.running: list[Peer] = []

    async def start(self, name: str, role: str, *args: str) -> Peer:
        log_path = self.logdir / f"{name}.log"
        with log_path.open("ab") as log_file:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                PEERS_MODULE,
                role,
                *args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log_file,
                cwd=PACKAGE_PARENT,
                env=child_env(),
                start_new_session=True,  # Ctrl-C reaches the runner only; it stops us
            )
        peer = Peer(name, process, log_path)
        self.running.append(peer)
        return peer

    async def stop(self, peers: Iterable[Peer], grace: float = 10.0) -> None:
        """SIGTERM to all at once, SIGKILL to those still there after ``grace`` seconds."""
        peers = list(peers)
        for peer in peers:
            if peer.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    peer.process.send_signal(signal.SIGTERM)
        waits = [asyncio.ensure_future(p.process.wait()) for p in peers]
        if waits:
            _, pending = await asyncio.wait(waits, timeout=grace)
            for peer, waiting in zip(peers, waits, strict=True):
                if waiting in pending:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(peer.pid, signal.SIGKILL)
            if pending:
                await asyncio.wait(pending, timeout=5)
        for peer in peers:
            if peer in self.running and peer.process.returncode is not None:
                self.running.remove(peer)

    async def stop_all(self) -> None:
        await self.stop(list(self.running))

    def kill_remaining(self) -> None:
        """Last resort outside the event loop: SIGKILL whatever ``stop_all`` did not end."""
        for peer in self.running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(peer.pid, signal.SIGKILL)
        self.running.clear()


def ticks_of(pids: Iterable[int]) -> int:
    """Total CPU clock ticks of ``pids`` (those already gone count as 0)."""
    return sum(cpu_ticks(pid) or 0 for pid in pids)


# -- broker counters ----------------------------------------------------------------

SYS_COUNTERS = {
    "$SYS/broker/publish/messages/received": "pub_received",
    "$SYS/broker/publish/messages/sent": "pub_sent",
    "$SYS/broker/messages/received": "all_received",
    "$SYS/broker/messages/sent": "all_sent",
}


@dataclass(frozen=True)
class Snapshot:
    """mosquitto's counters at one $SYS update, ``*_sent`` without the reader's own."""

    index: int
    at: float
    pub_received: int
    pub_sent: int
    all_received: int
    all_sent: int

    @property
    def publishes(self) -> tuple[int, int]:
        return self.pub_received, self.pub_sent


class SysReader:
    """Follows mosquitto's $SYS counters; one snapshot per update.

    ``publish/messages/sent`` comes with every update (this reader's own deliveries
    change it each time), so its arrival marks an update; the other counters are
    published only when they changed, so their latest value is current then.
    """

    def __init__(self, port: int) -> None:
        self.client = aiomqtt.Client("127.0.0.1", port, identifier=f"sys-reader-{os.getpid()}")
        self.snapshots: list[Snapshot] = []
        self._latest: dict[str, int] = {}
        self._own = 0
        self._update = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> "SysReader":
        await self.client.__aenter__()
        for topic in SYS_COUNTERS:
            await self.client.subscribe(topic, qos=0)
        self._reader = asyncio.create_task(self._read(), name="sys-reader")
        await self.next(timeout=10)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        with contextlib.suppress(Exception):
            await self.client.__aexit__(None, None, None)

    async def _read(self) -> None:
        async for message in self.client.messages:
            own_before = self._own
            self._own += 1
            key = SYS_COUNTERS.get(message.topic.value)
            if key is None or not isinstance(message.payload, bytes | str):
                continue
            value = int(message.payload)
            # Counted when queued: the deliveries to this reader so far are in the value.
            self._latest[key] = value - own_before if key.endswith("sent") else value
            if key == "pub_sent":
                self.snapshots.append(
                    Snapshot(
                        index=len(self.snapshots),
                        at=time.monotonic(),
                        pub_received=self._latest.get("pub_received", 0),
                        pub_sent=self._latest["pub_sent"],
                        all_received=self._latest.get("all_received", 0),
                        all_sent=self._latest.get("all_sent", 0),
                    )
                )
                self._update.set()
                self._update = asyncio.Event()

    async def next(self, timeout: float = 10) -> Snapshot:
        """The next snapshot."""
        async with asyncio.timeout(timeout):
            await self._update.wait()
        return self.snapshots[-1]

    async def quiet(self, since: int, timeout: float = QUIET_TIMEOUT) -> tuple[Snapshot, bool]:
        """The first snapshot (from index ``since`` on) after which the PUBLISH counters
        did not move for ``QUIET_INTERVALS`` updates; the latest one and False at ``timeout``.
        """
        try:
            async with asyncio.timeout(timeout):
                while True:
                    recent = self.snapshots[since:][-(QUIET_INTERVALS + 1) :]
                    if len(recent) == QUIET_INTERVALS + 1 and all(
                        s.publishes == recent[0].publishes for s in recent
                    ):
                        return recent[-1], True
                    await self.next(timeout=10)
        except TimeoutError:
            return self.snapshots[-1], False


def delta(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    received = after.pub_received - before.pub_received
    sent = after.pub_sent - before.pub_sent
    return {
        "publish_received": received,
        "publish_sent": sent,
        "publish_total": received + sent,
        "all_received": after.all_received - before.all_received,
        "all_sent": after.all_sent - before.all_sent,
        "window_s": after.at - before.at,
    }


# -- scenarios ----------------------------------------------------------------------


async def run_idle(args: argparse.Namespace, binary: str, peers: Peers) -> dict[str, Any]:
    broker = Mosquitto(binary, free_port(), BROKER_EXTRA)
    broker.start()
    pairs: list[dict[str, Any]] = []
    try:
        assert broker.pid is not None
        async with SysReader(broker.port) as counters:
            tool = await peers.start("idle-echo", "echo", "--broker", broker.url)
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
    finally:
        broker.stop()
    ratio = statistics.median(p["ratio"] for p in pairs)
    idle_pcts = [p["with_idle"]["idle_managers_cpu_pct"] for p in pairs]
    idle_pct = statistics.median(idle_pcts)
    several = len(pairs) > 1
    return {
        "settings": {
            "seconds": args.seconds,
            "inflight": args.inflight,
            "idle_managers": args.idle_managers,
            "reps": args.reps,
        },
        "pairs": pairs,
        "ratio": ratio,
        "targets": [
            target(
                f"{args.idle_managers} idle managers together"
                + (" (median of the repetitions)" if several else ""),
                f"< {IDLE_CPU_TARGET:g} % of one core",
                f"{idle_pct:.1f} %"
                + (f" ({min(idle_pcts):.1f}-{max(idle_pcts):.1f})" if several else ""),
                idle_pct < IDLE_CPU_TARGET,
            ),
            target(
                "caller's calls/s, with idle managers / alone"
                + (" (median of the repetitions)" if several else ""),
                f">= {RATIO_TARGET:g}",
                f"{ratio:.2f}"
                + (
                    f" ({min(p['ratio'] for p in pairs):.2f}-{max(p['ratio'] for p in pairs):.2f})"
                    if several
                    else ""
                ),
                ratio >= RATIO_TARGET,
            ),
        ],
    }


async def start_idle_managers(count: int, peers: Peers, url: str, rep: int) -> list[Peer]:
    """``count`` manager processes, returned once each has initialised and seen ``echo``."""
    if not count:
        return []
    log(f"idle: starting {count} idle manager processes")
    started = time.perf_counter()
    idle = [
        await peers.start(f"idle-manager-{rep}-{i}", "idle", "--broker", url, "--wait-for", "echo")
        for i in range(count)
    ]
    await asyncio.gather(*(p.event("ready", START_TIMEOUT) for p in idle))
    log(f"idle: {count} managers ready in {time.perf_counter() - started:.1f} s")
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
    log(f"idle ({label}): {args.inflight} calls in flight for {args.seconds:g} s")
    caller = await peers.start(
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
    log(
        f"idle ({label}): {run['calls_per_s']:,.0f} calls/s, idle managers "
        f"{run['idle_managers_cpu_pct']:.1f} % of one core"
    )
    return run


def summarise_call_run(
    result: dict[str, Any], managers: int, messages: dict[str, Any]
) -> dict[str, Any]:
    seconds = float(result["seconds"])
    ticks: dict[str, int] = result["ticks"]
    calls = int(result["calls"])

    def pct(label: str) -> float:
        return ticks.get(label, 0) / CLOCK_TICKS / seconds * 100

    all_calls = calls + result["failed"] + result["wrong"] + result["warmup_calls"]
    return {
        "idle_managers": managers,
        "seconds": seconds,
        "calls": calls,
        "failed": result["failed"],
        "wrong": result["wrong"],
        "calls_per_s": calls / seconds,
        "caller_cpu_ms_per_call": ticks.get("caller", 0) / CLOCK_TICKS * 1000 / calls
        if calls
        else None,
        "caller_cpu_pct": pct("caller"),
        "tool_cpu_pct": pct("tool"),
        "broker_cpu_pct": pct("broker"),
        "idle_managers_cpu_pct": pct("idle"),
        "missing_pids": result["missing_pids"],
        "broker_messages": messages,
        "calls_incl_warmup": all_calls,
        "publishes_per_call": messages["publish_total"] / all_calls if all_calls else None,
    }


async def run_join(args: argparse.Namespace, binary: str, peers: Peers) -> dict[str, Any]:
    fleet_size = args.processes * args.tools_per_process
    broker = Mosquitto(binary, free_port(), BROKER_EXTRA)
    broker.start()
    joins: list[dict[str, Any]] = []
    try:
        assert broker.pid is not None
        async with SysReader(broker.port) as counters:
            log(f"join: {args.processes} tool processes x {args.tools_per_process} tools")
            tools = [
                await peers.start(
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
                joiner = await peers.start(
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
                log(
                    f"join {k + 1}: {joined['tools']} tools in {joined['seconds']:.2f} s, "
                    f"{messages['publish_total']:,} PUBLISH at the broker"
                    + ("" if quiet else " (the broker never went quiet)")
                )
                before = after
            await peers.stop(managers)
            await peers.stop(tools)
    finally:
        broker.stop()
    totals = [j["messages"]["publish_total"] for j in joins]
    over = sum(1 for total in totals if total > MESSAGES_PER_TOOL_TARGET * fleet_size)
    slowest = max(j["seconds"] if j["complete"] else float("inf") for j in joins)
    summary = {
        "max_seconds": slowest,
        "all_complete": all(j["complete"] for j in joins),
        "median_messages": statistics.median(totals),
        "max_messages": max(totals),
        "median_messages_per_tool": statistics.median(totals) / fleet_size,
        "max_messages_per_tool": max(totals) / fleet_size,
        "tools_cpu_s": sum(j["tools_cpu_s"] for j in joins),
        "other_managers_cpu_s": sum(j["other_managers_cpu_s"] for j in joins),
        "broker_cpu_s": sum(j["broker_cpu_s"] for j in joins),
        "all_quiet": all(j["quiet"] for j in joins),
    }
    return {
        "settings": {
            "processes": args.processes,
            "tools_per_process": args.tools_per_process,
            "tools": fleet_size,
            "joiners": args.joiners,
            "join_limit_s": args.join_limit,
        },
        "joins": joins,
        "summary": summary,
        "targets": [
            target(
                f"every manager sees all {fleet_size:,} tools",
                f"within {JOIN_SECONDS_TARGET:g} s",
                f"max {fmt_seconds(slowest)}",
                slowest <= JOIN_SECONDS_TARGET,
            ),
            target(
                "broker messages per join",
                f"<= {MESSAGES_PER_TOOL_TARGET:g} x tools "
                f"({MESSAGES_PER_TOOL_TARGET * fleet_size:,.0f})",
                f"max {max(totals):,} ({max(totals) / fleet_size:.1f} x tools); "
                f"{over} of {len(totals)} joins above",
                over == 0,
            ),
        ],
    }


def target(what: str, goal: str, measured: str, met: bool) -> dict[str, Any]:
    return {"what": what, "target": goal, "measured": measured, "met": met}


def fmt_seconds(value: float) -> str:
    return "not all seen" if value == float("inf") else f"{value:.2f} s"


# -- report -------------------------------------------------------------------------


def git_revision() -> str:
    """``HEAD``'s short hash, and a hash of the library's uncommitted changes if any."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            cwd=PACKAGE_PARENT,
            timeout=5,
            check=True,
        ).stdout

    try:
        head = git("rev-parse", "--short", "HEAD").strip()
        changed = git("status", "--porcelain", "--", "argentic_tools").strip()
        diff = git("diff", "HEAD", "--", "argentic_tools")
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    if not changed:
        return head
    digest = hashlib.sha1(diff.encode(), usedforsecurity=False).hexdigest()[:10]
    files = len(changed.splitlines())
    return f"{head} + uncommitted changes in {files} files of argentic_tools/ (diff {digest})"


def targets_table(targets: list[dict[str, Any]]) -> list[str]:
    lines = ["| target | goal | measured | result |", "|---|---|---|---|"]
    for item in targets:
        verdict = "met" if item["met"] else "**not met**"
        lines.append(f"| {item['what']} | {item['target']} | {item['measured']} | {verdict} |")
    return lines


def idle_section(data: dict[str, Any]) -> list[str]:
    settings, pairs = data["settings"], data["pairs"]
    n = settings["idle_managers"]
    runs = [run for pair in pairs for run in (pair["alone"], pair["with_idle"])]

    def row(label: str, key: str, fmt: str) -> str:
        cells = [format(run[key], fmt) if run[key] is not None else "n/a" for run in runs]
        return f"| {label} | " + " | ".join(cells) + " |"

    heads = ["(a) alone", f"(b) with {n} idle managers"]
    if len(pairs) > 1:
        heads = [f"{head}, rep {i + 1}" for i in range(len(pairs)) for head in heads]
    ratios = ", ".join(f"{pair['ratio']:.2f}" for pair in pairs)
    ratio_text = (
        f"**{data['ratio']:.2f}**"
        if len(pairs) == 1
        else f"{ratios} (per repetition); median **{data['ratio']:.2f}**"
    )
    lines = [
        "## Idle managers",
        "",
        f"One tool process serving `echo` (no concurrency limit); a caller process with one "
        f"ToolManager keeps {settings['inflight']} `echo` calls in flight for 1 s of warm-up "
        f"and then a measured window of {settings['seconds']:g} s: (a) alone, (b) with {n} "
        "more manager processes connected, each initialised (it saw `echo`) and then idle. CPU "
        "is utime + stime from `/proc/<pid>/stat` at both ends of the window, as % of one core.",
        "",
        "| | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(heads),
        row("calls/s (successful)", "calls_per_s", ",.0f"),
        row("calls in the window", "calls", ","),
        row("failed", "failed", ","),
        row("wrong result", "wrong", ","),
        row("caller CPU ms per call", "caller_cpu_ms_per_call", ".3f"),
        row("caller CPU, % of one core", "caller_cpu_pct", ".0f"),
        row("tool process CPU, % of one core", "tool_cpu_pct", ".0f"),
        row("mosquitto CPU, % of one core", "broker_cpu_pct", ".0f"),
        row(f"{n} idle managers together, % of one core", "idle_managers_cpu_pct", ".1f"),
        row("PUBLISH at the broker per call (received + sent)", "publishes_per_call", ".1f"),
        "",
        f"Ratio of the caller's calls/s, (b) / (a): {ratio_text}. PUBLISH per call counts the "
        "caller's whole run (warm-up, window, its start and stop) from mosquitto's "
        "`$SYS/broker/publish/messages/*`.",
        "",
        *targets_table(data["targets"]),
        "",
    ]
    if not all(run["quiet"] for run in runs):
        lines += [
            "The broker did not go quiet around a run: its message counts are approximate.",
            "",
        ]
    return lines


def join_section(data: dict[str, Any]) -> list[str]:
    settings, summary = data["settings"], data["summary"]
    tools = settings["tools"]
    lines = [
        "## Managers joining a fleet",
        "",
        f"{settings['processes']} tool processes x {settings['tools_per_process']} tools "
        f"(`t{{proc}}_{{i}}(n: int)`), then {settings['joiners']} manager processes one after "
        "another; each starts once the previous one saw the whole fleet and the broker is quiet "
        "again, and stays connected. *Seconds*: from just before the joiner's connection "
        f"until `len(get_tool_names()) == {tools:,}` (polled every 10 ms; bound "
        f"{settings['join_limit_s']:g} s). *Messages*: PUBLISH packets mosquitto received and "
        "sent (`$SYS/broker/publish/messages/received` + `.../sent`, the $SYS reader's own "
        "deliveries taken out) from the quiet broker before the join until it was quiet again "
        "(unchanged for 2 updates). CPU: tool processes, the managers already connected, and "
        "mosquitto, over the same interval.",
        "",
        "| join | managers before | seconds | tools seen | PUBLISH received | PUBLISH sent "
        "| messages | per tool | tool procs CPU s | other managers CPU s | mosquitto CPU s "
        "| joiner CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for j in data["joins"]:
        m = j["messages"]
        quiet = "" if j["quiet"] else " (not quiet)"
        lines.append(
            f"| {j['join']} | {j['managers_before']} | {j['seconds']:.2f} | {j['tools_seen']:,} "
            f"| {m['publish_received']:,} | {m['publish_sent']:,} | {m['publish_total']:,}{quiet} "
            f"| {j['messages_per_tool']:.1f} | {j['tools_cpu_s']:.2f} "
            f"| {j['other_managers_cpu_s']:.2f} | {j['broker_cpu_s']:.2f} "
            f"| {j['joiner_cpu_s']:.2f} |"
        )
    lines += [
        "",
        "| summary | |",
        "|---|---|",
        f"| max seconds to see all {tools:,} tools | {fmt_seconds(summary['max_seconds'])} |",
        f"| messages per join, median / max | {summary['median_messages']:,.0f} / "
        f"{summary['max_messages']:,} |",
        f"| messages per join / tools, median / max | {summary['median_messages_per_tool']:.1f} "
        f"/ {summary['max_messages_per_tool']:.1f} |",
        f"| CPU of the tool processes, all joins | {summary['tools_cpu_s']:.2f} s |",
        f"| CPU of the managers already connected, all joins | "
        f"{summary['other_managers_cpu_s']:.2f} s |",
        f"| CPU of mosquitto, all joins | {summary['broker_cpu_s']:.2f} s |",
        "",
        *targets_table(data["targets"]),
        "",
    ]
    return lines


def build_markdown(data: dict[str, Any]) -> str:
    info = data["machine"]
    versions = info["versions"]
    lines = [
        "# Scale-out: idle managers and managers joining a fleet",
        "",
        f"`python -m benchmarks.scale_out --scenario {data['scenario']}`, {data['started']}, "
        f"{data['duration_s']:.0f} s; library at {data['revision']}. {info['cpu_count']} cores, "
        f"{info['platform']}, Python {versions['python']}, mosquitto {versions['mosquitto']} "
        f"(`set_tcp_nodelay true`, `sys_interval 1`), aiomqtt {versions['aiomqtt']}, "
        f"paho-mqtt {versions['paho-mqtt']}; load average {info['load_before'][0]:.2f} before, "
        f"{info['load_after'][0]:.2f} after. Every peer is its own process on 127.0.0.1.",
        "",
    ]
    if "idle" in data:
        lines += idle_section(data["idle"])
    if "join" in data:
        lines += join_section(data["join"])
    return "\n".join(lines)


# -- command line -------------------------------------------------------------------


class InterruptedRunError(Exception):
    """SIGTERM arrived while the event loop ran; the run was cancelled and cleaned up."""


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # outside the event loop: unwinds like Ctrl-C


async def run_all(args: argparse.Namespace, binary: str, peers: Peers) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_sigterm() -> None:
        received.append(signal.SIGTERM)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    results: dict[str, Any] = {}
    try:
        if args.scenario in ("idle", "all"):
            results["idle"] = await run_idle(args, binary, peers)
        if args.scenario in ("join", "all"):
            results["join"] = await run_join(args, binary, peers)
    except asyncio.CancelledError:
        if received:
            raise InterruptedRunError from None
        raise
    finally:
        with contextlib.suppress(Exception):
            await peers.stop_all()
        loop.remove_signal_handler(signal.SIGTERM)
    return results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scale_out",
        description="Idle managers' cost and managers joining a fleet, each on its own mosquitto.",
    )
    parser.add_argument("--scenario", choices=("idle", "join", "all"), default="all")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, help="directory for scale_out.md and scale_out.json")
    where.add_argument(
        "--update-results", action="store_true", help=f"write into {RESULTS_DIR} instead"
    )
    parser.add_argument("--mosquitto", help="mosquitto binary (default: found on PATH)")
    idle = parser.add_argument_group("idle")
    idle.add_argument("--seconds", type=float, default=10.0, help="measured window (10)")
    idle.add_argument("--inflight", type=int, default=100, help="calls in flight (100)")
    idle.add_argument("--idle-managers", type=int, default=20, help="idle managers in (b) (20)")
    idle.add_argument(
        "--reps", type=int, default=1, help="(a)/(b) pairs, interleaved; ratio = their median (1)"
    )
    join = parser.add_argument_group("join")
    join.add_argument("--processes", type=int, default=10, help="tool processes (10)")
    join.add_argument("--tools-per-process", type=int, default=100, help="(100)")
    join.add_argument("--joiners", type=int, default=20, help="managers joining (20)")
    join.add_argument(
        "--join-limit", type=float, default=30.0, help="seconds a joiner waits at most (30)"
    )
    args = parser.parse_args(argv)
    for name in ("seconds", "inflight", "reps", "processes", "tools_per_process", "joiners"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.idle_managers < 0:
        parser.error("--idle-managers must not be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    binary = find_mosquitto(args.mosquitto)
    if binary is None:
        print("error: mosquitto not found; install it or pass --mosquitto PATH", file=sys.stderr)
        return 2
    if args.update_results:
        out = RESULTS_DIR
    elif args.out is not None:
        out = args.out
    else:
        out = Path(tempfile.mkdtemp(prefix="scale-out-"))
    machine = machine_info(binary, None)
    del machine["versions"]["argentic"]
    started = time.monotonic()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    previous = signal.signal(signal.SIGTERM, _terminate)
    with tempfile.TemporaryDirectory(prefix="scale-out-logs-") as logdir:
        peers = Peers(Path(logdir))
        try:
            results = asyncio.run(run_all(args, binary, peers))
        except (KeyboardInterrupt, InterruptedRunError):
            log("interrupted: stopping every process the benchmark started")
            return 130
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
            signal.signal(signal.SIGTERM, previous)
    machine["load_after"] = list(os.getloadavg())
    data: dict[str, Any] = {
        "scenario": args.scenario,
        "started": started_at,
        "duration_s": time.monotonic() - started,
        "revision": git_revision(),
        "machine": machine,
        **results,
    }
    markdown = build_markdown(data)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale_out.md").write_text(markdown)
    (out / "scale_out.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(markdown)
    log(f"wrote {out / 'scale_out.md'} and {out / 'scale_out.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
