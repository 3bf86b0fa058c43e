"""``serve --reload``: seconds from an edit of a served file to its new tool answering.

Starts its own mosquitto on a free loopback port, ``argentic-tools serve FILE --reload``
on a file in a scratch directory, and a ToolManager. Each of ``--edits`` rewrites the
file with a tool of a new name; the time runs until that tool has registered and
answered a call (the old process stopped, a fresh one imported the file).

    python -m benchmarks.reload_latency [--edits 7]
"""

import argparse
import json
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from argentic_tools import Messager, ToolManager, Topics
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto

SOURCE = '''import anyio

from argentic_tools import tool


@tool
def version_{n}() -> int:
    """The version of this file."""
    return {n}
'''


async def run(broker: Mosquitto, scratch: Path, edits: int) -> dict[str, Any]:
    prefix = f"reload{uuid.uuid4().hex[:8]}"
    served = scratch / "my_tools.py"
    served.write_text(SOURCE.format(n=0))
    command = [sys.executable, "-m", "argentic_tools", "serve", str(served), "--reload"]
    where = ["--broker", broker.url, "--topic-prefix", prefix, "--log-level", "WARNING"]
    process = await anyio.open_process([*command, *where], stdin=None, stdout=None, stderr=None)
    seconds = []
    try:
        topics = Topics.with_prefix(prefix)
        async with (
            Messager(broker.url) as messager,
            ToolManager(messager, topics=topics) as manager,
        ):
            await manager.wait_for_tool("version_0", timeout=30)
            for n in range(1, edits + 1):
                started = time.perf_counter()
                served.write_text(SOURCE.format(n=n))
                await manager.wait_for_tool(f"version_{n}", timeout=30)
                result = await manager.execute_tool(f"version_{n}", {}, timeout=10)
                seconds.append(time.perf_counter() - started)
                if result.result != n:
                    raise RuntimeError(f"version_{n} answered {result.result!r}")
    finally:
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            await process.wait()
    return {
        "edits": edits,
        "seconds_edit_to_answer_median": round(statistics.median(seconds), 2),
        "seconds_edit_to_answer_max": round(max(seconds), 2),
    }


def measure(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    with Mosquitto(binary) as broker, tempfile.TemporaryDirectory() as scratch:
        result = cli.run_async(run(broker, Path(scratch), args.edits))
    print(json.dumps(result, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.reload_latency",
        "Seconds from an edit of a file `serve --reload` serves to its new tool answering.",
        __doc__,
    )
    parser.add_argument("--edits", type=cli.positive_int, default=7)
    cli.add_mosquitto_argument(parser)
    return cli.exit_status(lambda: measure(cli.parse(parser, argv)))


if __name__ == "__main__":
    sys.exit(main())
