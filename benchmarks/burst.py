"""A burst of slow calls to one tool: ``python -m benchmarks.burst [options]``.

The scenario: ``--calls`` (5,000) calls fired at once at one tool process serving
``burst_sleep`` with ``--max-concurrency`` (500); each call sleeps ``--seconds`` (2) in
the tool and has a ``--timeout`` (60 s) deadline. At 500 at a time that is 10 waves of
2 s: about 20 s when nothing is lost.

It runs the burst once per broker configuration, each on its own mosquitto on a free
127.0.0.1 port, with a fresh tool process (``benchmarks.burst_tool``) and the
ToolManager in a fresh process of this module (``--worker``), so that the manager's
memory is measured alone and one configuration's garbage cannot hide the next one's:

  shipped   the repository's ``mosquitto.conf`` (``--shipped-conf``), adapted: its
            listener becomes ``listener PORT 127.0.0.1``, ``persistence_location`` a
            temporary directory, the log goes to a file there (and ``user root`` is
            added when run as root, so mosquitto may write that directory)
  default   mosquitto's defaults: only ``listener PORT 127.0.0.1``,
            ``allow_anonymous true`` and ``set_tcp_nodelay true``

Neither sets ``max_inflight_messages`` or ``max_queued_messages``, so both run with
mosquitto's defaults of 20 in flight and 1,000 queued per client: a QoS 1 message beyond
those to a client that has not acknowledged the earlier ones is dropped.

Reported per configuration: calls that succeeded (their own ``n`` came back), timed
out, or ended otherwise; the wall time from the first call to the last result; the most
calls held in the manager at once (waiting for a slot at the tool instance; "n/a" for a
library without flow control); and the manager's memory per waiting call. That memory
is measured once every call has started and none has returned yet (all ``--calls`` are
pending): ``tracemalloc`` is started just before the first call is made, and the bytes
it traces at that moment (everything allocated since and still alive: the callers'
tasks and coroutine frames, futures, pending-call records, encoded tasks, the MQTT
client's outgoing messages) are divided by the number of pending calls. The growth of
the process's RSS over the same interval, less what tracemalloc reports for its own
bookkeeping, is given beside it as a cross-check (an overestimate: it includes allocator
slack and tracemalloc costs more than it reports). ``--memory rss`` runs without
tracemalloc, so that the RSS figure is clean.

Exit status: 0 when every call succeeded, 1 when one did not (or a run could not
complete), 2 for bad input, 130 after Ctrl-C or SIGTERM. Every process it starts runs in
its own session and is stopped before it exits.
"""

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import argentic_tools
from argentic_tools import Messager, ToolManager, ToolResult, Topics
from benchmarks._broker import find_mosquitto, free_port, wait_for_port
from benchmarks._procs import PACKAGE_PARENT, Children
from benchmarks.run import machine_info

TOOL = "burst_sleep"
CONFIGS = ("shipped", "default")
MEMORY_TARGET = 4096
"""Bytes per waiting call the manager may hold."""
MOSQUITTO_DEFAULTS = {"max_inflight_messages": "20", "max_queued_messages": "1000"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.burst",
        description="A burst of slow calls to one tool, behind mosquitto's per-client queue.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("--calls", type=int, default=5000, help="calls fired at once (5000)")
    parser.add_argument("--seconds", type=float, default=2.0, help="tool sleep per call (2)")
    parser.add_argument(
        "--concurrency", type=int, default=500, help="the tool's --max-concurrency (500)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per call (60)")
    parser.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help=f"broker configurations to run, in order ({','.join(CONFIGS)})",
    )
    parser.add_argument(
        "--shipped-conf",
        type=Path,
        default=PACKAGE_PARENT / "mosquitto.conf",
        help="the shipped mosquitto.conf to adapt (the repository's)",
    )
    parser.add_argument(
        "--memory",
        choices=("tracemalloc", "rss"),
        default="tracemalloc",
        help="tracemalloc (default; RSS beside it, less tracemalloc's bookkeeping) or rss "
        "only (no tracemalloc running, so the RSS figure is clean)",
    )
    parser.add_argument("--mosquitto", help="path of the mosquitto binary")
    parser.add_argument("--label", help="name of the library version in the report")
    # The manager's process for one configuration (started by the run itself).
    parser.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    parser.add_argument("--broker-url", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument(
        "--output", type=Path, help="also write the Markdown here, and the JSON beside it"
    )
    args = parser.parse_args(argv)
    args.config_list = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in args.config_list if c not in CONFIGS]
    if unknown or not args.config_list:
        parser.error(f"--configs takes {', '.join(CONFIGS)}; got {args.configs!r}")
    if args.calls < 1 or args.concurrency < 1:
        parser.error("--calls and --concurrency must be at least 1")
    if args.calls > 100_000:
        parser.error("--calls is limited to 100000")
    if args.seconds < 0 or not 0 < args.timeout <= 600:
        parser.error("--seconds must not be negative and --timeout must be in (0, 600]")
    if "shipped" in args.config_list and not args.shipped_conf.is_file():
        parser.error(f"--shipped-conf {args.shipped_conf} is not a file")
    return args


# -- brokers ------------------------------------------------------------------------------


def adapt_shipped(text: str, port: int, workdir: Path) -> str:
    """The shipped configuration on 127.0.0.1:``port``, writing only inside ``workdir``."""
    out: list[str] = []
    listeners = 0
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        key = words[0]
        if key == "listener":
            listeners += 1
            if listeners == 1:
                out.append(f"listener {port} 127.0.0.1")
        elif key == "persistence_location":
            out.append(f"persistence_location {workdir}/")
        elif key == "log_dest":
            if "log_dest stdout" not in out:
                out.append("log_dest stdout")  # stdout is the log file
        elif key in ("persistence_file", "autosave_interval", "log_type", "user"):
            out.append(line.strip())
        elif key in ("pid_file", "password_file", "acl_file", "include_dir"):
            continue  # nothing outside the temporary directory
        else:
            out.append(line.strip())
    if listeners == 0:
        out.insert(0, f"listener {port} 127.0.0.1")
    if os.geteuid() == 0 and not any(line.startswith("user ") for line in out):
        # As root, mosquitto would switch to user "mosquitto" and could not write workdir.
        out.append("user root")
    return "\n".join(out) + "\n"


def default_config(port: int) -> str:
    return f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"


def effective(config: str, key: str) -> str:
    for line in config.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == key:
            return words[1]
    return f"{MOSQUITTO_DEFAULTS[key]} (default)"


class Broker:
    """One mosquitto with a given configuration; stdout and stderr go to a log file."""

    def __init__(self, binary: str, name: str, shipped_conf: Path) -> None:
        self.binary = binary
        self.name = name
        self.shipped_conf = shipped_conf
        self.port = free_port()
        self._tmp = tempfile.TemporaryDirectory(prefix=f"argentic-tools-burst-{name}-")
        self.workdir = Path(self._tmp.name)
        if name == "shipped":
            self.config = adapt_shipped(shipped_conf.read_text(), self.port, self.workdir)
        else:
            self.config = default_config(self.port)
        self.process: subprocess.Popen[bytes] | None = None
        self.log_text = ""

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> None:
        config = self.workdir / "mosquitto.conf"
        config.write_text(self.config)
        with (self.workdir / "mosquitto.log").open("wb") as log_file:
            self.process = subprocess.Popen(
                [self.binary, "-c", str(config)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
            )
        try:
            wait_for_port(self.port, self.process, timeout=10)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.log_text = (self.workdir / "mosquitto.log").read_text(errors="replace")
        self._tmp.cleanup()


# -- the burst ----------------------------------------------------------------------------


def vm_rss_kib() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def window_of(manager: ToolManager, tool_id: str) -> Any:
    """The manager's flow-control window for the tool instance (None without flow control).

    Read only for the report (how many calls it holds back); a library without per-tool
    flow control has none.
    """
    calls = getattr(manager, "_calls", None)
    lookup = getattr(calls, "window_of", None)
    return lookup(tool_id) if callable(lookup) else None


class Sampler(threading.Thread):
    """The most calls held in the manager and outstanding at the tool at once."""

    def __init__(self, manager: ToolManager, tool_id: str, interval: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.manager = manager
        self.tool_id = tool_id
        self.interval = interval
        self.flow_control: bool | None = None
        self.peak_held = 0
        self.peak_outstanding = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            window = window_of(self.manager, self.tool_id)
            if window is not None:
                self.flow_control = True
                self.peak_held = max(self.peak_held, window.waiting)
                self.peak_outstanding = max(self.peak_outstanding, window.in_use)
            time.sleep(self.interval)

    def finish(self) -> None:
        self._done.set()
        self.join()


def classify(result: ToolResult, n: int) -> str:
    if result.ok:
        return "success" if getattr(result, "result", None) == n else "wrong_result"
    return getattr(result, "error_code", None) or str(result.status.value)


def by_package(snapshot: tracemalloc.Snapshot) -> dict[str, int]:
    """Traced bytes grouped by where they were allocated (groups under 1 KiB left out)."""
    groups: Counter[str] = Counter()
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename.replace(os.sep, "/")
        if "/argentic_tools/" in name:
            group = "argentic_tools"
        elif "/paho/" in name:
            group = "paho-mqtt"
        elif "/aiomqtt/" in name:
            group = "aiomqtt"
        elif "/asyncio/" in name:
            group = "asyncio"
        elif name.endswith("benchmarks/burst.py"):
            group = "this benchmark (the callers' tasks)"
        else:
            group = "other: " + "/".join(name.rsplit("/", 2)[-2:])
        groups[group] += stat.size
    return {group: size for group, size in groups.most_common() if size >= 1024}


async def burst(args: argparse.Namespace, name: str, url: str) -> dict[str, Any]:
    prefix = f"burst{uuid.uuid4().hex[:8]}"
    topics = Topics.with_prefix(prefix)
    children = Children()
    try:
        tool_proc = children.python(
            f"tool-{name}",
            "benchmarks.burst_tool",
            "--broker",
            url,
            "--topic-prefix",
            prefix,
            "--max-concurrency",
            str(args.concurrency),
            "--log-level",
            "WARNING",
        )
        async with (
            Messager(url, will_topic=None, log_level="WARNING") as messager,
            ToolManager(
                messager,
                log_level="WARNING",
                register_topic=topics.register,
                tool_call_topic_base=topics.call_base,
                tool_response_topic_base=topics.response_base,
                status_topic=topics.status,
            ) as manager,
        ):
            info = await manager.wait_for_tool(TOOL, timeout=30)
            advertised = info.metadata.get("max_concurrency")
            # Warm up every code path once, so first-use allocations are not counted.
            await asyncio.gather(
                *(manager.execute_tool(TOOL, {"n": n, "seconds": 0}, timeout=10) for n in range(50))
            )
            banner = tool_proc.log_path.read_text(errors="replace").partition("\n")[0]
            return await fire(args, manager, info.id, advertised, banner)
    finally:
        children.cleanup()


async def fire(
    args: argparse.Namespace,
    manager: ToolManager,
    tool_id: str,
    advertised: Any,
    tool_banner: str,
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    outcomes: list[str] = [""] * args.calls
    ended: list[float] = [0.0] * args.calls

    async def one(n: int) -> None:
        result = await manager.execute_tool(
            TOOL, {"n": n, "seconds": args.seconds}, timeout=args.timeout
        )
        outcomes[n] = classify(result, n)
        ended[n] = loop.time()

    gc.collect()
    rss_before = vm_rss_kib()
    sampler = Sampler(manager, tool_id)
    if args.memory == "tracemalloc":
        tracemalloc.start()
    started = loop.time()
    sampler.start()
    tasks = [loop.create_task(one(n)) for n in range(args.calls)]
    memory: dict[str, Any] = {}
    try:
        # Every call has started and none has returned: all of them are waiting. (With a
        # short --seconds the first results may come first; then fewer are counted.)
        limit = started + max(0.5, min(args.seconds * 0.5, 5.0))
        # The manager has no event for "N calls pending": poll it.
        while loop.time() < limit and manager.pending_calls < args.calls:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await asyncio.sleep(min(0.25, max(0.0, limit - loop.time())))
        waiting = manager.pending_calls
        tracing = tracemalloc.is_tracing()
        traced = tracemalloc.get_traced_memory()[0] if tracing else None
        overhead = tracemalloc.get_tracemalloc_memory() if tracing else 0
        rss_growth = (vm_rss_kib() - rss_before) * 1024 - overhead
        window = window_of(manager, tool_id)
        memory = {
            "method": args.memory,
            "at_s": loop.time() - started,
            "waiting": waiting,
            "held_in_manager": window.waiting if window is not None else None,
            "traced_bytes": traced,
            "bytes_per_waiting_call": traced / waiting if traced is not None and waiting else None,
            "rss_growth_bytes": rss_growth,
            "rss_bytes_per_waiting_call": rss_growth / waiting if waiting else None,
            "tracemalloc_overhead_bytes": overhead,
            "by_package": by_package(tracemalloc.take_snapshot()) if tracing else {},
        }
        tracemalloc.stop()
        unfinished = 0
        try:
            async with asyncio.timeout(args.timeout + 30):
                await asyncio.gather(*tasks)
        except TimeoutError:
            unfinished = sum(1 for task in tasks if not task.done())
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        sampler.finish()
    wall = loop.time() - started
    counts = Counter(outcome or "unfinished" for outcome in outcomes)
    success_s = sorted(ended[n] - started for n in range(args.calls) if outcomes[n] == "success")
    return {
        "tool_banner": tool_banner,
        "advertised_max_concurrency": advertised,
        "wall_s": wall,
        "unfinished": unfinished,
        "outcomes": dict(counts.most_common()),
        "succeeded": counts.get("success", 0),
        "timed_out": counts.get("timeout", 0),
        "other": args.calls - counts.get("success", 0) - counts.get("timeout", 0),
        "last_success_s": success_s[-1] if success_s else None,
        "median_success_s": statistics.median(success_s) if success_s else None,
        "flow_control": bool(sampler.flow_control),
        "peak_held_in_manager": sampler.peak_held if sampler.flow_control else None,
        "peak_outstanding_at_tool": sampler.peak_outstanding if sampler.flow_control else None,
        "memory": memory,
    }


def worker(args: argparse.Namespace) -> int:
    """The manager's side of one configuration, in a fresh process: writes its JSON."""
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = asyncio.run(burst(args, args.worker, args.broker_url))
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    result["library"] = str(Path(argentic_tools.__file__).parent)
    args.result_file.write_text(json.dumps(result, default=str))
    return 0


def run_config(args: argparse.Namespace, binary: str, name: str) -> dict[str, Any]:
    """One configuration: its broker here, the manager in a fresh process of this module."""
    broker = Broker(binary, name, args.shipped_conf)
    children = Children()
    try:
        broker.start()
        log(f"{name}: mosquitto on {broker.url}; firing {args.calls} calls")
        result_file = children.logdir / f"{name}.json"
        manager = children.python(
            f"manager-{name}",
            "benchmarks.burst",
            *("--worker", name, "--broker-url", broker.url, "--result-file", str(result_file)),
            *("--calls", str(args.calls), "--seconds", str(args.seconds)),
            *("--concurrency", str(args.concurrency), "--timeout", str(args.timeout)),
            *("--memory", args.memory),
        )
        assert manager.process is not None
        try:
            status = manager.process.wait(timeout=args.timeout + 120)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{name}: the manager process did not finish in time") from None
        if status != 0 or not result_file.exists():
            raise RuntimeError(
                f"{name}: the manager process exited with status {status}:\n" + manager.log_tail()
            )
        result: dict[str, Any] = json.loads(result_file.read_text())
    finally:
        children.cleanup()
        broker.stop()
    drops = [line for line in broker.log_text.splitlines() if "dropped" in line.lower()]
    result.update(
        {
            "config": name,
            "mosquitto_conf": broker.config.replace(str(broker.workdir), "<tmp>"),
            "max_inflight_messages": effective(broker.config, "max_inflight_messages"),
            "max_queued_messages": effective(broker.config, "max_queued_messages"),
            "broker_drop_log_lines": len(drops),
            "broker_drop_log_example": drops[0] if drops else None,
        }
    )
    log(
        f"{name}: {result['succeeded']}/{args.calls} succeeded, {result['timed_out']} timed out, "
        f"{result['wall_s']:.1f} s"
    )
    return result


# -- report -------------------------------------------------------------------------------


def _num(value: Any, fmt: str = ",") -> str:
    return "n/a" if value is None else format(value, fmt)


def build_markdown(data: dict[str, Any]) -> str:
    cfg, machine = data["config"], data["machine"]
    lines = [
        f"## Burst: {data['label']}",
        "",
        f"{cfg['calls']:,} calls fired at once at one tool process (`--max-concurrency "
        f"{cfg['concurrency']}`), {cfg['seconds']:g} s each in the tool, {cfg['timeout']:g} s "
        f"timeout. `argentic_tools` from `{data['library']}`. {machine['cpu_count']} cores, "
        f"mosquitto {machine['versions']['mosquitto']}, Python {machine['versions']['python']}; "
        f"started {data['started']}.",
        "",
        "| broker config | inflight / queue | succeeded | timed out | other | wall | "
        "held in manager (peak) | bytes per waiting call (tracemalloc) | RSS growth per "
        "waiting call |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in data["runs"]:
        mem = run["memory"]
        inflight = run["max_inflight_messages"].replace(" (default)", "")
        queued = run["max_queued_messages"].replace(" (default)", "")
        lines.append(
            f"| {run['config']} | {inflight} / {queued} | {run['succeeded']:,} | "
            f"{run['timed_out']:,} | {run['other']:,} | {run['wall_s']:.1f} s | "
            f"{_num(run['peak_held_in_manager'])} | "
            f"{_num(mem.get('bytes_per_waiting_call'), ',.0f')} | "
            f"{_num(mem.get('rss_bytes_per_waiting_call'), ',.0f')} |"
        )
    lines += [
        "",
        "Memory: the manager runs in a fresh process per configuration and is measured "
        "once every call has started and none has returned (all of them waiting for a "
        "result). `tracemalloc` is started just before the first call; the bytes it traces "
        "then (allocated since and still alive: the callers' tasks and coroutines, futures, "
        "pending-call records, encoded tasks, the MQTT client's outgoing messages) are "
        "divided by the calls waiting. RSS growth is VmRSS then minus VmRSS just before the "
        "burst, "
        + (
            "less tracemalloc's own bookkeeping (approximate: it also carries allocator "
            "slack and what tracemalloc's bookkeeping costs beyond what it reports; "
            "`--memory rss` measures RSS with tracemalloc off)."
            if cfg.get("memory") == "tracemalloc"
            else "with tracemalloc off (`--memory rss`)."
        )
        + f" Target: under {MEMORY_TARGET:,} bytes per waiting call.",
        "",
    ]
    for run in data["runs"]:
        mem = run["memory"]
        traced = mem.get("traced_bytes")
        parts = ", ".join(f"{k} {v / 1024:,.0f} KiB" for k, v in mem.get("by_package", {}).items())
        where = "" if traced is None else f"traced {traced / 1024:,.0f} KiB ({parts}); "
        lines.append(
            f"- {run['config']}: {mem.get('waiting', 0):,} waiting at "
            f"{mem.get('at_s', 0):.2f} s ({_num(mem.get('held_in_manager'))} of them held in "
            f"the manager); {where}"
            f"outcomes {run['outcomes']}; last success at {_num(run['last_success_s'], '.1f')} s; "
            f"mosquitto logged {run['broker_drop_log_lines']} 'dropped' lines; the tool "
            f"advertised max_concurrency {run['advertised_max_concurrency']}."
        )
    for run in data["runs"]:
        conf = run["mosquitto_conf"].strip().replace("\n", "`, `")
        lines.append(f"- {run['config']} mosquitto.conf: `{conf}`")
    return "\n".join(lines) + "\n"


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.worker:
        return worker(args)
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
    started = datetime.now(UTC).isoformat(timespec="seconds")
    previous = signal.signal(signal.SIGTERM, _terminate)
    runs: list[dict[str, Any]] = []
    try:
        for name in args.config_list:
            runs.append(run_config(args, binary, name))
    except KeyboardInterrupt:
        log("interrupted: every process the run started is stopped")
        return 130
    except Exception as exc:
        print(f"error: the burst could not complete: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    machine["load_after"] = list(os.getloadavg())
    library = ", ".join(sorted({run["library"] for run in runs}))
    data = {
        "label": args.label or library,
        "library": library,
        "started": started,
        "machine": machine,
        "config": {
            "calls": args.calls,
            "seconds": args.seconds,
            "concurrency": args.concurrency,
            "timeout": args.timeout,
            "memory": args.memory,
            "shipped_conf": str(args.shipped_conf),
        },
        "runs": runs,
    }
    as_json = json.dumps(data, indent=2, default=str) + "\n"
    markdown = build_markdown(data)
    sys.stdout.write(as_json if args.json else markdown)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(markdown)
        args.output.with_suffix(".json").write_text(as_json)
    failed = any(run["succeeded"] != args.calls for run in runs)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
