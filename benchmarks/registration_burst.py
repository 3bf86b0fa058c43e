"""One process registers, then unregisters, thousands of tools; another tool is called meanwhile.

Starts its own mosquitto on a free loopback port with mosquitto's default per-client
limits (1,000 queued and 20 in-flight messages, the rest dropped), a ToolManager and one
real tool in this process, and a second process serving ``--tools`` tools on one
connection (an MCP bridge of a very large server), which stops 3 s after it entered.
The real tool is called in a loop (5 s timeout) all along. Reports the calls' outcomes,
how many tools were confirmed when the big process entered, what the registry holds once
it left, and mosquitto's warnings about dropped messages.

    python -m benchmarks.registration_burst [--tools 10000]
"""

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import Counter
from typing import Any

from pydantic import BaseModel

from argentic_tools import BaseTool, Messager, ToolManager, ToolService, Topics, tool
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto

DEFAULT_LIMITS = "max_queued_messages 1000\nmax_inflight_messages 20\n"
PREFIX = "burst-reg"


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


class Arguments(BaseModel):
    x: int = 0


class Numbered(BaseTool):
    """One of many identical tools, told apart by name (its schema given as JSON)."""

    def __init__(self, number: int) -> None:
        super().__init__(
            f"many-{number}", "Return x.", json.dumps(Arguments.model_json_schema()), Arguments
        )

    async def _execute(self, **kwargs: Any) -> Any:
        return kwargs.get("x", 0)


async def serve_many(url: str, count: int, hold: float) -> None:
    """The registering process: serve ``count`` tools, report, hold, and stop."""
    tools = [Numbered(n) for n in range(count)]
    started = time.perf_counter()
    async with ToolService(url, tools, topics=Topics.with_prefix(PREFIX)) as service:
        confirmed = sum(e.confirmed.is_set() for e in service.endpoints)
        print(
            json.dumps(
                {"entered_s": round(time.perf_counter() - started, 1), "confirmed": confirmed}
            )
        )
        await asyncio.sleep(hold)


async def run(broker: Mosquitto, count: int) -> dict[str, Any]:
    topics = Topics.with_prefix(PREFIX)
    outcomes: Counter[str] = Counter()
    async with (
        Messager(broker.url, will_topic=None) as messager,
        ToolManager(
            messager, topics=topics, max_tools=count + 10, max_tools_per_client=count + 10
        ) as manager,
        ToolService(broker.url, [add], topics=topics),
    ):
        await manager.wait_for_tool("add", timeout=10)
        done = asyncio.Event()

        async def calls() -> None:
            n = 0
            while not done.is_set():
                result = await manager.execute_tool("add", {"a": n}, timeout=5)
                outcomes["success" if result.ok else str(getattr(result, "error_code", "?"))] += 1
                n += 1

        calling = asyncio.create_task(calls())
        started = time.perf_counter()
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.registration_burst",
            "--serve",
            broker.url,
            "--tools",
            str(count),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await child.communicate()
        # Unregistrations still on their way are handled in order: let the registry settle.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(30):
                while len(manager.get_tool_names()) > 1:
                    await manager.registry_changed()
        elapsed = time.perf_counter() - started
        done.set()
        await calling
        left = len(manager.get_tool_names()) - 1
    entered = json.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {}
    return {
        "tools": count,
        "calls_meanwhile": dict(outcomes),
        "entered_after_s": entered.get("entered_s"),
        "confirmed_when_entered": entered.get("confirmed"),
        "tools_left_in_registry": left,
        "seconds_in_all": round(elapsed, 1),
        "broker_drop_warnings": [
            line for line in broker.log().splitlines() if "being dropped" in line
        ],
    }


def measure(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    with Mosquitto(binary, extra_config=DEFAULT_LIMITS) as broker:
        result = cli.run_async(run(broker, args.tools))
    print(json.dumps(result, indent=2))
    return 0 if set(result["calls_meanwhile"]) == {"success"} else 1


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.registration_burst",
        "One process registering thousands of tools, another tool called meanwhile.",
        __doc__,
    )
    parser.add_argument("--tools", type=cli.positive_int, default=10_000)
    parser.add_argument("--serve", metavar="URL", help=argparse.SUPPRESS)
    cli.add_mosquitto_argument(parser)
    args = cli.parse(parser, argv)
    if args.serve:
        asyncio.run(serve_many(args.serve, args.tools, hold=3.0))
        return 0
    return cli.exit_status(lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
