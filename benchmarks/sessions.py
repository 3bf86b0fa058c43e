"""Broker sessions left behind by clients that crash or exit: ``python -m benchmarks.sessions``.

Starts its own mosquitto on a free 127.0.0.1 port (``sys_interval 1``, so its ``$SYS``
counters are current within a second). ``--crashes`` times it starts a tool process
(``benchmarks.ours_tool``) and a manager process (this module, ``--role manager``) with
default options, lets the manager make a few calls, and SIGKILLs both; ``--exits`` times
it does the same but stops both with SIGTERM (a clean shutdown). Then a live manager (in
this process) calls a live tool process ``--calls`` times on the same topics.

It prints what the broker still holds, from ``$SYS/broker/clients/disconnected`` (sessions
kept for clients that are gone) and ``$SYS/broker/store/messages/count`` and ``/bytes``
(messages held, including those queued for the sessions of the dead): after the crashes
and exits, and after the live calls. Nothing is left behind when the first stays 0 and
the live calls do not grow the store.
"""

import argparse
import asyncio
import signal
import sys
import uuid

from argentic_tools import IncomingMessage, Messager, ToolManager, Topics
from benchmarks.harness import cli
from benchmarks.harness.broker import Mosquitto
from benchmarks.harness.procs import Children

COUNTERS = (
    "$SYS/broker/clients/connected",
    "$SYS/broker/clients/disconnected",
    "$SYS/broker/store/messages/count",
    "$SYS/broker/store/messages/bytes",
)
WAIT = 30.0


def manager_for(messager: Messager, topics: Topics) -> ToolManager:
    return ToolManager(messager, log_level="WARNING", topics=topics)


async def manager_role(url: str, prefix: str, calls: int) -> None:
    """A manager process with default options: make ``calls`` calls, say so, wait to die."""
    topics = Topics.with_prefix(prefix)
    async with (
        Messager(url, will_topic=topics.register, log_level="WARNING") as messager,
        manager_for(messager, topics) as manager,
    ):
        await manager.wait_for_tool("echo", timeout=WAIT)
        for n in range(calls):
            await manager.execute_tool("echo", {"message": str(n)})
        print("ready", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()


class Sys:
    """The broker's ``$SYS`` counters, as last published."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self.ticks = 0
        self.changed = asyncio.Event()

    def on_message(self, message: IncomingMessage) -> None:
        if message.topic == "$SYS/broker/uptime":
            self.ticks += 1
        else:
            self.values[message.topic] = int(message.payload)
        self.changed.set()
        self.changed = asyncio.Event()

    async def settled(self, connected: int) -> dict[str, int]:
        """The counters once only ``connected`` clients remain."""
        async with asyncio.timeout(WAIT):
            while True:
                # Each tick publishes the uptime, then the counters that changed: two
                # uptimes from now, the counters of a tick that began after now are in.
                target = self.ticks + 2
                while self.ticks < target:
                    await self.changed.wait()
                if self.values.get(COUNTERS[0]) == connected:
                    return {topic.split("/", 3)[-1]: v for topic, v in self.values.items()}


async def run(args: argparse.Namespace, broker: Mosquitto, children: Children) -> None:
    prefix = f"sessions{uuid.uuid4().hex[:8]}"
    topics = Topics.with_prefix(prefix)
    counters = Sys()
    connection = ("--broker", broker.url, "--topic-prefix", prefix)
    async with Messager(broker.url, will_topic=None, log_level="WARNING") as observer:
        for topic in (*COUNTERS, "$SYS/broker/uptime"):
            await observer.subscribe(topic, counters.on_message)
        start = await counters.settled(connected=1)
        for k in range(args.crashes + args.exits):
            crash = k < args.crashes
            tool = children.python(
                f"tool{k}", "benchmarks.ours_tool", *connection, "--log-level", "WARNING"
            )
            manager = children.python(
                f"manager{k}", "benchmarks.sessions", "--role", "manager", *connection
            )
            await manager.wait_for_output("ready", WAIT)
            for child in (manager, tool):
                if crash:
                    assert child.process is not None
                    child.process.kill()
                children.stop(child)
        after_exits = await counters.settled(connected=1)
        tool = children.python(
            "live-tool", "benchmarks.ours_tool", *connection, "--log-level", "WARNING"
        )
        async with (
            Messager(broker.url, will_topic=topics.register, log_level="WARNING") as m,
            manager_for(m, topics) as live,
        ):
            await live.wait_for_tool("echo", timeout=WAIT)
            for n in range(args.calls):
                await live.execute_tool("echo", {"message": str(n)})
            after_calls = await counters.settled(connected=3)
        children.stop(tool)
    print(
        f"mosquitto {broker.port}: {args.crashes} manager+tool pairs SIGKILLed, "
        f"{args.exits} stopped with SIGTERM, then {args.calls} calls"
    )
    print("| counter | at start | after crashes/exits | after the calls |")
    print("|---|---:|---:|---:|")
    for name in start:
        print(f"| {name} | {start[name]} | {after_exits[name]} | {after_calls[name]} |")


def measure(args: argparse.Namespace) -> int:
    binary = cli.require_mosquitto(args.mosquitto)
    with Mosquitto(binary, extra_config="sys_interval 1\n") as broker, Children() as children:
        cli.run_async(run(args, broker, children))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser("python -m benchmarks.sessions", __doc__.splitlines()[0], __doc__)
    parser.add_argument("--crashes", type=int, default=4, help="pairs SIGKILLed (4)")
    parser.add_argument("--exits", type=int, default=2, help="pairs stopped cleanly (2)")
    parser.add_argument("--calls", type=int, default=1000, help="live calls afterwards (1000)")
    cli.add_mosquitto_argument(parser)
    parser.add_argument("--role", choices=("runner", "manager"), default="runner")
    parser.add_argument("--broker", help="(--role manager) broker URL")
    parser.add_argument("--topic-prefix", help="(--role manager) topic prefix")
    args = cli.parse(parser, argv)
    if args.role == "manager":
        asyncio.run(manager_role(args.broker, args.topic_prefix, 10))
        return 0
    return cli.exit_status(lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
