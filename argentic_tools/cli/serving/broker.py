"""``broker``: the embedded MQTT broker, until Ctrl-C."""

import argparse

from ..common import EXIT_OK, CliError, StopRequest, stdout
from ..options import Commands, add_command


async def broker_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``broker``: run the embedded MQTT broker until Ctrl-C."""
    from ..._broker import EmbeddedBroker

    broker = EmbeddedBroker(args.host, args.port)
    try:
        await broker.start()
    except (RuntimeError, OSError) as exc:
        raise CliError(str(exc)) from None
    try:
        stdout.print(f"MQTT broker listening on {broker.url}; press Ctrl-C to stop.")
        await stop.requested.wait()
    finally:
        await broker.stop()
    return EXIT_OK


def add_parser(commands: Commands) -> None:
    """``broker``: its options (no client's: it is the broker)."""
    broker = add_command(
        commands,
        "broker",
        "run the embedded MQTT broker until Ctrl-C",
        ("argentic-tools broker", "argentic-tools broker --port 1884"),
        client=False,
        long_running=True,
    )
    broker.add_argument("--host", default="127.0.0.1", help="address to listen on")
    broker.add_argument("--port", type=int, default=1883, help="TCP port (0 picks a free one)")
    broker.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    broker.set_defaults(run=broker_command, graceful=True)
