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
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from argentic_tools import IncomingMessage, Messager, ToolManager, Topics
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto, free_port
from benchmarks.harness.machine import machine_info
from benchmarks.harness.procs import Child, Children
from benchmarks.harness.results import add_results_arguments, results_dir, stamped, write_report
from benchmarks.soak_report import TOOL, Call, Fault, build_markdown, classify, summarise

FAULTS = ("kill", "freeze", "broker", "drop-manager", "drop-tool")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        "python -m benchmarks.soak",
        "Calls under a fault schedule; checks that none is lost, late or doubled.",
        __doc__,
        ("", "--calls 2000 --faults kill,broker", "--calls 5000 --rate 500 --keep-logs logs"),
    )
    count = cli.positive_int
    parser.add_argument("--calls", type=count, default=20_000, help="calls to make (20000)")
    parser.add_argument("--inflight", type=count, default=200, help="calls at once at most (200)")
    parser.add_argument(
        "--rate", type=cli.non_negative_float, default=1000.0, help="calls started per second"
    )
    parser.add_argument("--tools", type=count, default=3, help="tool processes (3)")
    parser.add_argument(
        "--timeout", type=cli.positive_float, default=2.0, help="seconds per call (2)"
    )
    parser.add_argument("--work-ms", type=float, default=5.0, help="mean tool work, ms (5)")
    parser.add_argument(
        "--fail-every", type=count, default=50, help="every Nth call asks the tool to fail (50)"
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
    cli.add_mosquitto_argument(parser)
    add_results_arguments(parser)
    parser.add_argument("--keep-logs", type=Path, help="copy every process's log here")
    parser.add_argument(
        "--log-level", default="WARNING", help="of the manager and the tools (WARNING)"
    )
    args = cli.parse(parser, argv)
    args.fault_list = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in args.fault_list if f not in FAULTS]
    if unknown:
        parser.error(f"--faults takes {', '.join(FAULTS)}; got {', '.join(unknown)}")
    if args.tools < 2 and {"kill", "freeze"} & set(args.fault_list):
        parser.error("--tools must be at least 2 for the kill and freeze faults")
    return args


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

    @property
    def executions_log(self) -> Path:
        """The file every tool process appends an executed task id to, one a line."""
        return self.children.logdir / "executions.log"

    # -- processes ---------------------------------------------------------------

    def _start_tool(self, slot: int) -> Child:
        # Slot 0 reaches the broker through a relay, so that its connection can be cut.
        port = self.tool_relay_port if slot == 0 else self.broker.port
        self.started_tools += 1
        return self.children.python(
            f"tool{slot}-{self.started_tools}",
            "benchmarks.soak_tool",
            "--executions",
            str(self.executions_log),
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
            await asyncio.to_thread(relay.wait_listening, port, 10)
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
            cli.log(f"fault {k + 1}: {kind} at call {fault.at_call} ({fault.in_flight} in flight)")
            try:
                async with asyncio.timeout(self.args.recovery_limit):
                    await fault.recovered.wait()
            except TimeoutError:
                cli.log(
                    f"fault {k + 1}: {kind} did not recover within {self.args.recovery_limit} s"
                )
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
                    cli.log(f"--max-seconds reached after {n} calls: no more calls are made")
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
                manager_messager, log_level=self.args.log_level, topics=self.topics
            )
            async with manager:
                async with asyncio.timeout(30):
                    # The registry has no wait for "N instances of a name": poll it.
                    while self.instances(manager) < self.args.tools:  # noqa: ASYNC110
                        await asyncio.sleep(0.02)
                cli.log(
                    f"{self.args.tools} tool processes registered; making {self.args.calls} calls"
                )
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


def measure(args: argparse.Namespace) -> int:
    """The soak run and its report; 1 when a check failed."""
    binary = cli.require_mosquitto(args.mosquitto)
    machine = machine_info(binary)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    with Mosquitto(binary) as broker, Children() as children:
        soak = Soak(args, broker, children)
        try:
            cli.log(f"mosquitto on {broker.url}; {machine['cpu_count']} cores")
            wall = cli.run_async(soak.run())
            children.stop_all()  # every execution is in the log once the tools have stopped
            result = summarise(soak, wall)
        except Exception as exc:
            exc.add_note("\n".join(f"--- {c.name}\n{c.log_tail()}" for c in soak.slots))
            raise
        finally:
            children.stop_all()
            if args.keep_logs is not None:
                shutil.copytree(children.logdir, args.keep_logs, dirs_exist_ok=True)
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
    markdown = stamped(markdown)  # printed as written
    print(markdown)
    directory = results_dir(args)
    write_report(directory / "soak.md", markdown, data)
    cli.log(f"written: {directory / 'soak.md'} and soak.json")
    return 0 if result["passed"] else 1


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return cli.exit_status(lambda: measure(parse_args(argv)), "the soak")


if __name__ == "__main__":
    raise SystemExit(main())
