"""How long the commands that wait for the fleet take: list, describe, stats, call.

    PYTHONPATH=$PWD python scripts/cli_waits.py            # median of 3 runs each
    PYTHONPATH=$PWD python scripts/cli_waits.py --runs 7

Starts its own mosquitto on a free loopback port and one ``argentic-tools serve`` of
the test tools ``echo`` and ``sleep``, then times each command as a user runs it (a new
process each time). ``--version`` gives the cost of starting the process alone; the
others, what the command's wait adds to it: with ``--wait 10``, a command that spends
its whole ``--wait`` takes over 10 s, one that ends once the fleet has answered, about
a second. ``call ecko`` is a typo of ``echo``.
"""

import argparse
import statistics
import subprocess
import sys
import time
import uuid

from tests.support.brokers import child_env, running_mosquitto


def cli(*args: str) -> list[str]:
    """The command line of ``argentic-tools ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "argentic_tools", *args]


def main() -> None:
    """Start the broker and the tools, time each command, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (median)")
    options = parser.parse_args()
    with running_mosquitto() as broker:
        where = ["--broker", broker.url, "--topic-prefix", f"w{uuid.uuid4().hex[:8]}"]
        tools = ("tests.support.tool_proc:echo", "tests.support.tool_proc:sleep")
        serve = subprocess.Popen(  # noqa: S603
            cli("serve", *tools, *where),
            env=child_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            ready = ["--expect", "echo", "--expect", "sleep", "--wait", "30"]
            subprocess.run(cli("list", *ready, *where), env=child_env(), capture_output=True)  # noqa: S603
            commands = {
                "--version (start alone)": ["--version"],
                "list (--wait 1)": ["list", *where],
                "list --wait 10": ["list", "--wait", "10", *where],
                "describe --wait 10": ["describe", "--wait", "10", *where],
                "stats --wait 10": ["stats", "--wait", "10", *where],
                "call ecko (--wait 5)": ["call", "ecko", "{}", *where],
                "call echo message=hi": ["call", "echo", "message=hi", *where],
            }
            for label, args in commands.items():
                took = []
                for _ in range(options.runs):
                    started = time.perf_counter()
                    done = subprocess.run(cli(*args), env=child_env(), capture_output=True)  # noqa: S603
                    took.append(time.perf_counter() - started)
                median = statistics.median(took)
                print(f"{label:26s} {median:6.2f} s  exit {done.returncode}", flush=True)
        finally:
            serve.terminate()
            serve.wait(15)


if __name__ == "__main__":
    main()
