"""Soak run under faults: ``python -m benchmarks.soak [--calls N] [options]``.

Starts its own mosquitto on a free 127.0.0.1 port, ``--tools`` tool processes serving
the same tool (``benchmarks.soak_tool``), and a ToolManager in this process. It makes
``--calls`` calls (at most ``--inflight`` at once, paced at ``--rate`` per second) while
a fault schedule runs, one fault at a time, each fired under load once the previous one
has recovered. Faults are spread evenly over the calls; when recoveries run late, calls
go on past ``--calls`` until the last fault has recovered (or ``--max-seconds``):

  kill          SIGKILL a tool process, then start a new one in its place
  freeze        SIGSTOP a tool process for ``--freeze`` seconds, then SIGCONT
  broker        SIGKILL mosquitto, keep it down ``--broker-down`` seconds, start it again
                (no persistence: every session and queued message is lost)
  drop-manager  reset the manager's TCP connection (it goes through a relay)
  drop-tool     reset one tool process's TCP connection (the same way)

What it checks, from records kept on both sides (the manager's returned results, the
result messages seen on the wire by an observer client, and the task ids each tool
process appends to a file before it executes one):

  * every call ended with exactly one result, and no call ended later than its
    deadline + 1 s;
  * no task id was executed twice, across every process that served the tool;
  * every success carries the caller's own ``n`` back;
  * every fault recovered: after it ended, every live tool process served a call.

Recovery time is from the end of a fault (new process started, SIGCONT sent, broker
listening again, connection reset) until every live tool process has answered a call
started after it. Prints a Markdown report and writes ``soak.md`` and ``soak.json`` to
``--results-dir`` (default: a new scratch directory; ``--update-results``: the committed
ones). Exit status: 0 when every check holds, 1 when one does not (or the
run could not complete), 2 for bad input, 130 after Ctrl-C or SIGTERM.
"""

import argparse
import asyncio
import json
import logging
import os
import random
import shutil
import signal
import statistics
import sys
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from argentic_tools import IncomingMessage, Messager, ToolManager, ToolResult, Topics
from benchmarks._broker import Mosquitto, find_mosquitto, free_port, wait_for_port
from benchmarks._procs import Child, Children
from benchmarks.run import add_results_arguments, machine_info, results_dir

FAULTS = ("kill", "freeze", "broker", "drop-manager", "drop-tool")
TOOL = "soak_work"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak",
        description="Calls under a fault schedule; checks that none is lost, late or doubled.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("--calls", type=int, default=20_000, help="calls to make (20000)")
    parser.add_argument("--inflight", type=int, default=200, help="calls at once at most (200)")
    parser.add_argument("--rate", type=float, default=1000.0, help="calls started per second")
    parser.add_argument("--tools", type=int, default=3, help="tool processes (3)")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per call (2)")
    parser.add_argument("--work-ms", type=float, default=5.0, help="mean tool work, ms (5)")
    parser.add_argument(
        "--fail-every", type=int, default=50, help="every Nth call asks the tool to fail (50)"
    )
    parser.add_argument("--freeze", type=float, default=3.0, help="seconds a tool stays frozen")
    parser.add_argument(
        "--broker-down", type=float, default=0.5, help="seconds the broker stays down"
    )
    parser.add_argument(
        "--faults", default=",".join(FAULTS), help=f"comma-separated, in order ({','.join(FAULTS)})"
    )
    parser.add_argument(
        "--recovery-limit", type=float, default=30.0, help="seconds a fault may take to recover"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=900.0, help="stop making calls after this long"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed for the work durations")
    parser.add_argument("--mosquitto", help="path of the mosquitto binary")
    add_results_arguments(parser)
    parser.add_argument("--keep-logs", type=Path, help="copy every process's log here")
    parser.add_argument(
        "--log-level", default="WARNING", help="of the manager and the tools (WARNING)"
    )
    args = parser.parse_args(argv)
    args.results_dir = results_dir(args)
    args.fault_list = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in args.fault_list if f not in FAULTS]
    if unknown:
        parser.error(f"--faults takes {', '.join(FAULTS)}; got {', '.join(unknown)}")
    for name in ("calls", "inflight", "tools", "fail_every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.tools < 2 and {"kill", "freeze"} & set(args.fault_list):
        parser.error("--tools must be at least 2 for the kill and freeze faults")
    if args.timeout <= 0 or args.rate < 0:
        parser.error("--timeout must be positive and --rate not negative (0: unpaced)")
    return args


@dataclass(slots=True)
class Call:
    """One call's record, as the caller saw it."""

    n: int
    task_id: str
    started: float
    ended: float = 0.0
    outcome: str = ""
    pid: int | None = None
    error: str | None = None


@dataclass
class Fault:
    """One fault: when it hit, when it ended, and when every tool process served again."""

    kind: str
    target: str
    at_call: int
    in_flight: int
    fired_at: float
    ended_at: float | None = None
    recovered_at: float | None = None
    expected: set[int] = field(default_factory=set)
    served: set[int] = field(default_factory=set)
    recovered: asyncio.Event = field(default_factory=asyncio.Event)

    def note_success(self, pid: int | None, started: float, now: float) -> None:
        if self.ended_at is None or self.recovered_at is not None or started < self.ended_at:
            return
        if pid is not None:
            self.served.add(pid)
        if self.expected <= self.served:
            self.recovered_at = now
            self.recovered.set()


class Soak:
    """The processes of one soak run and the records it keeps."""

    def __init__(self, args: argparse.Namespace, broker: Mosquitto, children: Children) -> None:
        self.args = args
        self.broker = broker
        self.children = children
        self.prefix = f"soak{uuid.uuid4().hex[:8]}"
        self.topics = Topics.with_prefix(self.prefix)
        self.manager_relay_port = free_port()
        self.tool_relay_port = free_port()
        self.relays: dict[str, Child] = {}
        self.slots: list[Child] = []
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.current: Fault | None = None
        self.in_flight = 0
        self.issued = 0
        self.wire_results: Counter[str] = Counter()
        self.thresholds: list[asyncio.Event] = []
        self.rng = random.Random(args.seed)
        self.started_tools = 0

    # -- processes ---------------------------------------------------------------

    def _start_tool(self, slot: int) -> Child:
        # Slot 0 reaches the broker through a relay, so that its connection can be cut.
        port = self.tool_relay_port if slot == 0 else self.broker.port
        self.started_tools += 1
        return self.children.python(
            f"tool{slot}-{self.started_tools}",
            "benchmarks.soak_tool",
            "--executions",
            str(self.children.logdir / "executions.log"),
            "--broker",
            f"mqtt://127.0.0.1:{port}",
            "--topic-prefix",
            self.prefix,
            "--max-concurrency",
            "10000",
            "--log-level",
            self.args.log_level,
        )

    async def start(self) -> None:
        for name, port in (("manager", self.manager_relay_port), ("tool", self.tool_relay_port)):
            relay = self.children.python(
                f"relay-{name}", "benchmarks.soak_proxy", str(port), str(self.broker.port)
            )
            self.relays[name] = relay
            assert relay.process is not None
            await asyncio.to_thread(wait_for_port, port, relay.process, 10, relay.name)
        for slot in range(self.args.tools):
            self.slots.append(self._start_tool(slot))

    def pids(self) -> set[int]:
        return {child.pid for child in self.slots if child.pid is not None}

    def instances(self, manager: ToolManager) -> int:
        return sum(1 for info in manager.tools_by_id.values() if info.get("name") == TOOL)

    # -- faults -----------------------------------------------------------------

    async def inject(self, kind: str) -> Fault:
        loop = asyncio.get_running_loop()
        # Slot 0 is the one behind a relay; the kill and the freeze take the last two.
        victim = len(self.slots) - 1 if kind == "kill" else max(len(self.slots) - 2, 0)
        target = {
            "kill": f"tool process {victim}",
            "freeze": f"tool process {victim}",
            "broker": "mosquitto",
            "drop-manager": "manager connection",
            "drop-tool": "tool process 0 connection",
        }[kind]
        fault = Fault(kind, target, self.issued, self.in_flight, loop.time())
        self.faults.append(fault)
        self.current = fault
        if kind == "kill":
            child = self.slots[victim]
            assert child.process is not None
            child.process.kill()
            await asyncio.to_thread(child.process.wait, 5)
            self.slots[victim] = self._start_tool(victim)
        elif kind == "freeze":
            pid = self.slots[victim].pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)
            try:
                await asyncio.sleep(self.args.freeze)
            finally:
                os.kill(pid, signal.SIGCONT)
        elif kind == "broker":
            await asyncio.to_thread(self.broker.kill)
            await asyncio.sleep(self.args.broker_down)
            await asyncio.to_thread(self.broker.start)
        else:
            relay = self.relays["manager" if kind == "drop-manager" else "tool"]
            assert relay.pid is not None
            os.kill(relay.pid, signal.SIGUSR1)
        fault.expected = self.pids()
        fault.ended_at = loop.time()
        return fault

    async def run_faults(self) -> None:
        for k, kind in enumerate(self.args.fault_list):
            await self.thresholds[k].wait()
            fault = await self.inject(kind)
            log(f"fault {k + 1}: {kind} at call {fault.at_call} ({fault.in_flight} in flight)")
            try:
                async with asyncio.timeout(self.args.recovery_limit):
                    await fault.recovered.wait()
            except TimeoutError:
                log(f"fault {k + 1}: {kind} did not recover within {self.args.recovery_limit} s")
            self.current = None

    # -- calls ------------------------------------------------------------------

    async def one_call(self, manager: ToolManager, n: int, gate: asyncio.Semaphore) -> None:
        loop = asyncio.get_running_loop()
        fail = n % self.args.fail_every == 0
        work = self.rng.expovariate(1 / self.args.work_ms) if self.args.work_ms > 0 else 0.0
        call = Call(n, f"{self.prefix}-{n}", loop.time())
        self.calls.append(call)
        self.in_flight += 1
        try:
            result = await manager.execute_tool(
                TOOL,
                {"n": n, "work_ms": round(work, 3), "fail": fail},
                call_id=call.task_id,
                timeout=self.args.timeout,
            )
        finally:
            self.in_flight -= 1
            gate.release()
        call.ended = loop.time()
        call.outcome, call.pid, call.error = classify(result, n, fail)
        if call.outcome == "success" and self.current is not None:
            self.current.note_success(call.pid, call.started, call.ended)

    async def run_calls(self, manager: ToolManager, schedule: "asyncio.Task[None]") -> None:
        loop = asyncio.get_running_loop()
        faults = len(self.args.fault_list)
        marks = [(k + 1) * self.args.calls // (faults + 1) for k in range(faults)]
        gate = asyncio.Semaphore(self.args.inflight)
        interval = 1 / self.args.rate if self.args.rate > 0 else 0.0
        deadline = loop.time() + self.args.max_seconds
        next_at = loop.time()
        n = 0
        async with asyncio.TaskGroup() as group:
            # Calls go on past --calls while the fault schedule runs late (a slow
            # recovery), so that every fault fires under load and has calls to recover
            # with; a fault can only recover on calls started after it ended.
            while n < self.args.calls or not schedule.done():
                if loop.time() > deadline:
                    log(f"--max-seconds reached after {n} calls: no more calls are made")
                    break
                if interval:
                    next_at += interval
                    delay = next_at - loop.time()
                    if delay > 0.001:
                        await asyncio.sleep(delay)
                    elif delay < -1:
                        next_at = loop.time()  # fell behind (a fault): do not burst to catch up
                await gate.acquire()
                self.issued = n + 1
                group.create_task(self.one_call(manager, n, gate))
                n += 1
                for k, mark in enumerate(marks):
                    if self.issued >= mark:
                        self.thresholds[k].set()

    async def run(self) -> float:
        await self.start()
        observer = Messager(
            self.broker.url, will_topic=None, log_level="ERROR", persistent_session=False
        )
        manager_messager = Messager(
            f"mqtt://127.0.0.1:{self.manager_relay_port}",
            will_topic=None,
            log_level=self.args.log_level,
        )
        async with observer, manager_messager:
            await observer.subscribe(self.topics.response_filter, self.count_result)
            manager = ToolManager(
                manager_messager,
                log_level=self.args.log_level,
                register_topic=self.topics.register,
                tool_call_topic_base=self.topics.call_base,
                tool_response_topic_base=self.topics.response_base,
                status_topic=self.topics.status,
            )
            async with manager:
                async with asyncio.timeout(30):
                    # The registry has no wait for "N instances of a name": poll it.
                    while self.instances(manager) < self.args.tools:  # noqa: ASYNC110
                        await asyncio.sleep(0.02)
                log(f"{self.args.tools} tool processes registered; making {self.args.calls} calls")
                self.thresholds = [asyncio.Event() for _ in self.args.fault_list]
                started = asyncio.get_running_loop().time()
                faults = asyncio.create_task(self.run_faults(), name="soak-faults")
                try:
                    await self.run_calls(manager, faults)
                finally:
                    faults.cancel()
                    await asyncio.gather(faults, return_exceptions=True)
                return asyncio.get_running_loop().time() - started

    def count_result(self, message: IncomingMessage) -> None:
        # Counted by the call's own id: the task id on the wire is the manager's, fresh
        # for every call, and the call id travels with the task and its result.
        try:
            call_id = json.loads(message.payload).get("call_id")
        except (ValueError, AttributeError):
            return
        if isinstance(call_id, str):
            self.wire_results[call_id] += 1


def classify(result: ToolResult, n: int, fail: bool) -> tuple[str, int | None, str | None]:
    """``(outcome, pid, error)`` of one call; a success must carry its own ``n`` back."""
    if result.ok:
        value = getattr(result, "result", None)
        if fail or not isinstance(value, dict) or value.get("n") != n:
            return "wrong_result", None, f"got {value!r}"
        pid = value.get("pid")
        return "success", pid if isinstance(pid, int) else None, None
    code = getattr(result, "error_code", None) or str(result.status.value)
    error = getattr(result, "error", None)
    if code == "execution_error" and fail:
        return "tool_error (asked for)", None, None
    return code, None, error


def summarise(soak: Soak, wall: float) -> dict[str, Any]:
    args = soak.args
    calls = soak.calls
    outcomes = Counter(call.outcome for call in calls)
    late = [c for c in calls if c.ended - c.started > args.timeout + 1.0]
    per_task = Counter(call.task_id for call in calls)
    log_path = soak.children.logdir / "executions.log"
    executions = Counter(log_path.read_text().split()) if log_path.exists() else Counter()
    duplicates = {task: count for task, count in executions.items() if count > 1}
    ok_latency = sorted((c.ended - c.started) * 1000 for c in calls if c.outcome == "success")
    examples: dict[str, str] = {}
    for call in calls:
        if call.error and call.outcome not in examples:
            examples[call.outcome] = call.error[:200]
    by_task = {call.task_id: call for call in calls}
    repeated = [task for task, count in soak.wire_results.items() if count > 1]
    faults = []
    # Each call counts for the first fault it overlapped: in flight when the fault hit,
    # or started before that fault had recovered.
    around: list[Counter[str]] = [Counter() for _ in soak.faults]
    for call in calls:
        for i, fault in enumerate(soak.faults):
            end = fault.recovered_at or fault.ended_at or fault.fired_at
            if call.started <= end and call.ended >= fault.fired_at:
                around[i][call.outcome] += 1
                break
    for fault, touched in zip(soak.faults, around, strict=True):
        faults.append(
            {
                "kind": fault.kind,
                "target": fault.target,
                "at_call": fault.at_call,
                "in_flight": fault.in_flight,
                "duration_s": (fault.ended_at or fault.fired_at) - fault.fired_at,
                "recovery_s": (
                    None
                    if fault.recovered_at is None or fault.ended_at is None
                    else fault.recovered_at - fault.ended_at
                ),
                "calls_during": dict(touched),
            }
        )
    planned = len(args.fault_list)
    checks = {
        "ended": {"value": len(calls), "required": soak.issued, "ok": len(calls) == soak.issued},
        "all_made": {
            "value": soak.issued,
            "required": args.calls,
            "ok": soak.issued >= args.calls,
        },
        "late": {"value": len(late), "required": 0, "ok": not late},
        "multiple_results": {
            "value": sum(1 for count in per_task.values() if count > 1),
            "required": 0,
            "ok": all(count == 1 for count in per_task.values()),
        },
        "wrong_results": {
            "value": outcomes.get("wrong_result", 0),
            "required": 0,
            "ok": not outcomes.get("wrong_result"),
        },
        "duplicate_executions": {"value": len(duplicates), "required": 0, "ok": not duplicates},
        "faults_recovered": {
            "value": sum(1 for f in faults if f["recovery_s"] is not None),
            "required": planned,
            "ok": sum(1 for f in faults if f["recovery_s"] is not None) == planned,
        },
    }
    return {
        "wall_s": wall,
        "calls": len(calls),
        "outcomes": dict(outcomes.most_common()),
        "error_examples": examples,
        "late": [asdict(c) for c in late[:20]],
        "executions": sum(executions.values()),
        "executed_task_ids": len(executions),
        "duplicate_executions": dict(list(duplicates.items())[:20]),
        "wire_results_over_one": len(repeated),
        "wire_results_over_one_calls": sorted(by_task[t].n for t in repeated if t in by_task)[:50],
        "wire_results_over_one_by_outcome": dict(
            Counter(by_task[t].outcome if t in by_task else "unknown" for t in repeated)
        ),
        "success_ms": {
            "p50": statistics.median(ok_latency) if ok_latency else None,
            "p99": ok_latency[int(len(ok_latency) * 0.99)] if ok_latency else None,
            "max": ok_latency[-1] if ok_latency else None,
        },
        "faults": faults,
        "checks": checks,
        "passed": all(check["ok"] for check in checks.values()),
    }


def build_markdown(data: dict[str, Any]) -> str:
    cfg, res, machine = data["config"], data["result"], data["machine"]
    lines = [
        "# Soak under faults",
        "",
        f"{machine['cpu_count']} cores, load {machine['load_before'][0]:.2f} before and "
        f"{machine['load_after'][0]:.2f} after; mosquitto {machine['versions']['mosquitto']}, "
        f"Python {machine['versions']['python']}; started {data['started']}.",
        "",
        f"{res['calls']:,} calls ({cfg['calls']:,} asked for, more while a fault was still "
        f"recovering), at most {cfg['inflight']} in flight, paced at "
        f"{cfg['rate']:g}/s, over {cfg['tools']} tool processes serving `{TOOL}`; "
        f"timeout {cfg['timeout']:g} s per call, tool work {cfg['work_ms']:g} ms on average, "
        f"every {cfg['fail_every']}th call asks the tool to fail. Faults in order: "
        f"{', '.join(cfg['faults'])}. Wall time {res['wall_s']:.1f} s.",
        "",
        "## Checks",
        "",
        "| check | measured | required | |",
        "|---|---|---|---|",
    ]
    names = {
        "ended": "calls that ended (one result each)",
        "all_made": "calls made (at least)",
        "late": "calls ended later than deadline + 1 s",
        "multiple_results": "calls with more than one result",
        "wrong_results": "successes carrying another call's value",
        "duplicate_executions": "task ids executed more than once",
        "faults_recovered": "faults recovered",
    }
    for key, check in res["checks"].items():
        verdict = "ok" if check["ok"] else "**FAILED**"
        lines.append(f"| {names[key]} | {check['value']:,} | {check['required']:,} | {verdict} |")
    lines += ["", "## Outcomes", "", "| outcome | calls |", "|---|---|"]
    lines += [f"| {outcome} | {count:,} |" for outcome, count in res["outcomes"].items()]
    ms = res["success_ms"]
    if ms["p50"] is not None:
        lines += [
            "",
            f"Successful calls: p50 {ms['p50']:.2f} ms, p99 {ms['p99']:.2f} ms, "
            f"max {ms['max']:.0f} ms. Tool executions logged: {res['executions']:,} "
            f"({res['executed_task_ids']:,} task ids). Task ids with more than one result "
            f"message on the wire (redelivered; the manager keeps the first): "
            f"{res['wire_results_over_one']}.",
        ]
    lines += [
        "",
        "## Faults",
        "",
        "| # | fault | target | at call | in flight | lasted | recovered in | calls around it |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, fault in enumerate(res["faults"], 1):
        recovery = (
            "**not recovered**" if fault["recovery_s"] is None else f"{fault['recovery_s']:.2f} s"
        )
        around = ", ".join(f"{k} {v}" for k, v in sorted(fault["calls_during"].items()))
        lines.append(
            f"| {i} | {fault['kind']} | {fault['target']} | {fault['at_call']:,} | "
            f"{fault['in_flight']} | {fault['duration_s']:.2f} s | {recovery} | {around} |"
        )
    if res["error_examples"]:
        lines += ["", "## An example of each error", ""]
        lines += [f"- {outcome}: {text}" for outcome, text in res["error_examples"].items()]
    verdict = "passed" if res["passed"] else "FAILED"
    lines += ["", f"**Soak {verdict}.**"]
    return "\n".join(lines) + "\n"


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    binary = find_mosquitto(args.mosquitto)
    if binary is None:
        print(
            "error: mosquitto not found; install it (`apt-get install mosquitto`) or pass "
            "--mosquitto PATH",
            file=sys.stderr,
        )
        return 2
    machine = machine_info(binary, None)
    del machine["versions"]["argentic"]
    broker = Mosquitto(binary, free_port())
    children = Children()
    previous = signal.signal(signal.SIGTERM, _terminate)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    soak = Soak(args, broker, children)
    try:
        broker.start()
        log(f"mosquitto on {broker.url}; {machine['cpu_count']} cores")
        wall = asyncio.run(soak.run())
        children.stop_all()  # every execution is in the log once the tools have stopped
        result = summarise(soak, wall)
    except KeyboardInterrupt:
        log("interrupted: stopping every process the soak started")
        return 130
    except Exception as exc:
        tails = "\n".join(f"--- {c.name}\n{c.log_tail()}" for c in soak.slots)
        print(
            f"error: the soak could not complete: {type(exc).__name__}: {exc}\n{tails}",
            file=sys.stderr,
        )
        return 1
    finally:
        children.stop_all()
        if args.keep_logs is not None:
            shutil.copytree(children.logdir, args.keep_logs, dirs_exist_ok=True)
        children.cleanup()
        broker.stop()
        signal.signal(signal.SIGTERM, previous)
    machine["load_after"] = list(os.getloadavg())
    data = {
        "started": started_at,
        "machine": machine,
        "config": {
            "calls": args.calls,
            "inflight": args.inflight,
            "rate": args.rate,
            "tools": args.tools,
            "timeout": args.timeout,
            "work_ms": args.work_ms,
            "fail_every": args.fail_every,
            "freeze": args.freeze,
            "broker_down": args.broker_down,
            "faults": args.fault_list,
            "seed": args.seed,
        },
        "result": result,
    }
    markdown = build_markdown(data)
    print(markdown)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "soak.md").write_text(markdown)
    (args.results_dir / "soak.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    log(f"written: {args.results_dir / 'soak.md'} and soak.json")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
