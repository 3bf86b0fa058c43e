"""Clients that register and leave with a clean DISCONNECT, never unregistering.

Starts its own mosquitto on a free loopback port, a ToolManager and one idle tool
served in this process. For ``--seconds`` seconds, batches of ``--batch`` clients each
connect, register ``--tools`` tools (protocol 2, as this library's tools do; names drawn
from ``--names``) and close their connection cleanly, which discards their Last Will.
Reports what the registry holds when the churn stops, then how long it takes to hold
only the live tool again (at most ``--wait`` seconds; the documented bound is 50 s).

    python -m benchmarks.registration_churn [--seconds 20]
"""

import argparse
import asyncio
import json
import sys
import time
import uuid
from typing import Any

from argentic_tools import Messager, ToolManager, ToolService, ToolSpec, Topics, tool
from argentic_tools._protocol.fleet_messages import RegisterToolMessage
from argentic_tools._protocol.messages import encode
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


@tool
def idle(text: str) -> str:
    """Return the text (the live tool that must stay registered)."""
    return text


async def leave_cleanly(url: str, topics: Topics, tools: int, names: int, n: int) -> None:
    async with Messager(url, will_topic=topics.register) as messager:
        for k in range(tools):
            name = f"churn-{(n * tools + k) % names}"
            message = RegisterToolMessage(
                source=messager.client_id,
                tool_name=name,
                tool_manual="",
                tool_api=json.dumps(SCHEMA),
                tool_spec=ToolSpec(name=name, input_schema=SCHEMA),
                tool_id=str(uuid.uuid4()),
                protocol=2,
            )
            await messager.publish(topics.register, encode(message))


async def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    topics = Topics.with_prefix("churn")
    async with (
        Messager(url, will_topic=None) as messager,
        ToolManager(messager, topics=topics, max_tools=100_000) as manager,
        ToolService(url, [idle], topics=topics),
    ):
        await manager.wait_for_tool("idle", timeout=10)
        started = time.perf_counter()
        clients = 0
        while time.perf_counter() - started < args.seconds:
            await asyncio.gather(
                *(
                    leave_cleanly(url, topics, args.tools, args.names, clients + i)
                    for i in range(args.batch)
                )
            )
            clients += args.batch
        stopped = time.perf_counter()
        at_stop = len(manager.tools_by_id) - 1
        names_at_stop = len(manager.get_tool_names()) - 1
        back_after: float | None = None
        try:
            async with asyncio.timeout(args.wait):
                while len(manager.tools_by_id) > 1:
                    await manager.registry_changed()
            back_after = round(time.perf_counter() - stopped, 1)
        except TimeoutError:
            pass
        return {
            "clients": clients,
            "tools_registered": clients * args.tools,
            "stale_instances_when_churn_stopped": at_stop,
            "stale_names_when_churn_stopped": names_at_stop,
            "seconds_until_only_live_tools": back_after,
            "stale_instances_at_the_end": len(manager.tools_by_id) - 1,
            "live_tool_still_registered": "idle" in manager.get_tool_names(),
        }


def measure(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    with Mosquitto(binary) as broker:
        result = cli.run_async(run(broker.url, args))
    print(json.dumps(result, indent=2))
    ok = result["stale_instances_at_the_end"] == 0 and result["live_tool_still_registered"]
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "python -m benchmarks.registration_churn",
        "Clients that register and leave with a clean DISCONNECT.",
        __doc__,
    )
    parser.add_argument("--seconds", type=cli.positive_float, default=20.0)
    parser.add_argument("--batch", type=cli.positive_int, default=20)
    parser.add_argument("--tools", type=cli.positive_int, default=5)
    parser.add_argument("--names", type=cli.positive_int, default=90)
    parser.add_argument("--wait", type=cli.positive_float, default=90.0)
    cli.add_mosquitto_argument(parser)
    return cli.exit_status(lambda: measure(cli.parse(parser, argv)))


if __name__ == "__main__":
    sys.exit(main())
