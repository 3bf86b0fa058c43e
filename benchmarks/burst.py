"""A burst of slow calls to one tool: ``python -m benchmarks.burst [options]``.

The scenario: ``--calls`` (5,000) calls fired at once at one tool process serving
``burst_sleep`` with ``--max-concurrency`` (500); each call sleeps ``--seconds`` (2) in
the tool and has a ``--timeout`` (60 s) deadline. At 500 at a time that is 10 waves of
2 s: about 20 s when nothing is lost.

It runs the burst once per broker configuration, each on its own mosquitto on a free
127.0.0.1 port, with the ToolManager in a fresh process (``benchmarks.burst_manager``,
which starts a fresh tool process, ``benchmarks.burst_tool``), so that the manager's
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
import functools
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.burst_report import build_markdown
from benchmarks.harness import cli
from benchmarks.harness.broker import Config, Mosquitto
from benchmarks.harness.machine import machine_info
from benchmarks.harness.procs import PACKAGE_PARENT, Children
from benchmarks.harness.results import to_json, write_report

CONFIGS = ("shipped", "default")
MOSQUITTO_DEFAULTS = {"max_inflight_messages": "20", "max_queued_messages": "1000"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        "python -m benchmarks.burst",
        "A burst of slow calls to one tool, behind mosquitto's per-client queue.",
        __doc__,
    )
    parser.add_argument(
        "--calls", type=cli.positive_int, default=5000, help="calls fired at once (5000)"
    )
    parser.add_argument(
        "--seconds", type=cli.non_negative_float, default=2.0, help="tool sleep per call (2)"
    )
    parser.add_argument(
        "--concurrency",
        type=cli.positive_int,
        default=500,
        help="the tool's --max-concurrency (500)",
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
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--label", help="name of the library version in the report")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument(
        "--output", type=Path, help="also write the Markdown here, and the JSON beside it"
    )
    args = cli.parse(parser, argv)
    args.config_list = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in args.config_list if c not in CONFIGS]
    if unknown or not args.config_list:
        parser.error(f"--configs takes {', '.join(CONFIGS)}; got {args.configs!r}")
    if args.calls > 100_000:
        parser.error("--calls is limited to 100000")
    if not 0 < args.timeout <= 600:
        parser.error("--timeout must be in (0, 600]")
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


def default_config(port: int, workdir: Path) -> str:
    return f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"


def effective(config: str, key: str) -> str:
    for line in config.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == key:
            return words[1]
    return f"{MOSQUITTO_DEFAULTS[key]} (default)"


def config_of(args: argparse.Namespace, name: str) -> Config:
    """The configuration ``name`` (one of CONFIGS) for a port and a working directory."""
    if name == "shipped":
        return functools.partial(adapt_shipped, args.shipped_conf.read_text())
    return default_config


# -- one configuration --------------------------------------------------------------------


def run_config(args: argparse.Namespace, binary: str, name: str) -> dict[str, Any]:
    """One configuration: its broker here, the manager in a fresh process."""
    with Mosquitto(binary, config=config_of(args, name)) as broker, Children() as children:
        cli.log(f"{name}: mosquitto on {broker.url}; firing {args.calls} calls")
        result_file = children.logdir / f"{name}.json"
        manager = children.python(
            f"manager-{name}",
            "benchmarks.burst_manager",
            *("--broker", broker.url, "--result-file", str(result_file)),
            *("--calls", str(args.calls), "--seconds", str(args.seconds)),
            *("--concurrency", str(args.concurrency), "--timeout", str(args.timeout)),
            *("--memory", args.memory),
        )
        manager.finish(timeout=args.timeout + 120)
        result: dict[str, Any] = json.loads(result_file.read_text())
    drops = [line for line in broker.log().splitlines() if "dropped" in line.lower()]
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
    cli.log(
        f"{name}: {result['succeeded']}/{args.calls} succeeded, {result['timed_out']} timed out, "
        f"{result['wall_s']:.1f} s"
    )
    return result


def measure(args: argparse.Namespace) -> int:
    """Every configuration in turn, and the report; 1 when a call did not succeed."""
    binary = cli.require_mosquitto(args.mosquitto)
    machine = machine_info(binary)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    runs = [run_config(args, binary, name) for name in args.config_list]
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
    markdown = build_markdown(data)
    sys.stdout.write(to_json(data) + "\n" if args.json else markdown)
    if args.output is not None:
        write_report(args.output, markdown, data)
    failed = any(run["succeeded"] != args.calls for run in runs)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    return cli.exit_status(lambda: measure(parse_args(argv)), "the burst")


if __name__ == "__main__":
    raise SystemExit(main())
