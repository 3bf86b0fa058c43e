"""A flood of forged registrations against a manager: how long its event loop stalls.

Starts its own mosquitto on a free loopback port, a ToolManager (default bounds), one
real tool served in this process, and a forger that publishes ``--registrations``
REGISTER_TOOL messages, each with a new name, a new schema and one of 50 client ids.
Meanwhile the real tool is called in a loop and a 1 ms ticker measures the event loop's
lag. Reports the registry size, the real calls' outcomes and the worst lag.

    python -m benchmarks.registration_flood [--registrations 20000]
"""

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import aiomqtt

from argentic_tools import (
    Messager,
    RegisterToolMessage,
    ToolManager,
    ToolService,
    ToolSpec,
    Topics,
    tool,
)
from argentic_tools._protocol.messages import encode
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


def forged(n: int) -> bytes:
    schema = {"type": "object", "properties": {f"p{n}": {"type": "integer", "maximum": n}}}
    return encode(
        RegisterToolMessage(
            source=f"forger-{n % 50}",
            tool_name=f"forged-{n}",
            tool_manual="not a real tool",
            tool_api=json.dumps(schema),
            tool_spec=ToolSpec(name=f"forged-{n}", description="", input_schema=schema),
            protocol=1,
        )
    )


async def run(broker: Mosquitto, registrations: int, max_tools: int) -> dict[str, Any]:
    topics = Topics.with_prefix("flood")
    async with (
        Messager(broker.url, will_topic=None) as messager,
        ToolManager(
            messager,
            topics=topics,
            max_tools=max_tools,
            max_tools_per_client=max_tools,
        ) as manager,
        ToolService(broker.url, [add], topics=topics),
    ):
        await manager.wait_for_tool("add", timeout=10)
        lags: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            while not done.is_set():
                before = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append(time.perf_counter() - before - 0.001)

        outcomes: dict[str, int] = {}

        async def calls() -> None:
            n = 0
            while not done.is_set():
                result = await manager.execute_tool("add", {"a": n}, timeout=30)
                key = "success" if result.ok else str(getattr(result, "error_code", "?"))
                outcomes[key] = outcomes.get(key, 0) + 1
                n += 1

        ticking = asyncio.create_task(ticker())
        calling = asyncio.create_task(calls())
        started = time.perf_counter()
        async with aiomqtt.Client("127.0.0.1", broker.port) as forger:
            await forger.subscribe(topics.status, qos=1)
            for n in range(registrations):
                await forger.publish(topics.register, forged(n), qos=0)
            # Registrations are handled in order: the answer to this one (admitted or
            # refused) means the flood has been handled.
            marker = RegisterToolMessage(
                source="marker", tool_name="marker", tool_manual="", tool_api="{}", protocol=1
            )
            await forger.publish(topics.register, encode(marker), qos=1)
            async for message in forger.messages:
                if json.loads(message.payload).get("target") == "marker":
                    break
        elapsed = time.perf_counter() - started
        done.set()
        await asyncio.gather(ticking, calling)
        forged_tools = sum(1 for n in manager.get_tool_names() if n.startswith("forged-"))
    lags.sort()
    return {
        "registrations": registrations,
        "forged_tools_admitted": forged_tools,
        "real_calls": outcomes,
        "seconds_until_flood_handled": round(elapsed, 2),
        "loop_lag_ms_p99": round(lags[int(len(lags) * 0.99)] * 1000, 2) if lags else None,
        "loop_lag_ms_max": round(lags[-1] * 1000, 2) if lags else None,
    }


def measure(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    with Mosquitto(binary) as broker:
        result = cli.run_async(
            run(broker, args.registrations, args.max_tools or args.registrations + 10)
        )
    print(json.dumps(result, indent=2))
    return 0 if set(result["real_calls"]) == {"success"} else 1


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.registration_flood",
        "A flood of forged registrations against a manager.",
        __doc__,
    )
    parser.add_argument("--registrations", type=cli.positive_int, default=20_000)
    parser.add_argument(
        "--max-tools",
        type=int,
        default=0,
        help="the manager's bound (default: room for every forged tool, the worst case "
        "for schema compilation)",
    )
    cli.add_mosquitto_argument(parser)
    return cli.exit_status(lambda: measure(cli.parse(parser, argv)))


if __name__ == "__main__":
    sys.exit(main())
