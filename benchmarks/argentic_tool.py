"""argentic 0.16 echo tools in their own process, written as an argentic user would.

``python -m benchmarks.argentic_tool --port N --prefix P [--echo-tools 10]`` registers
argentic ``BaseTool`` subclasses ``echo`` and ``echo0`` .. ``echo{N-1}`` on one argentic
Messager (its defaults: QoS 0, no TCP_NODELAY) and serves them until SIGTERM. Logging is
set to WARNING, as on every side of the benchmark, so that terminal output is not measured.
"""

import argparse
import asyncio
import os
import signal
import uuid
from typing import Any

from argentic.core.logger import set_global_log_level
from argentic.core.messager.messager import Messager
from argentic.core.tools.tool_base import BaseTool
from pydantic import BaseModel, Field


class EchoArgs(BaseModel):
    """Arguments of the echo tool."""

    message: str = Field(description="Text to send back")


class EchoTool(BaseTool):  # type: ignore[misc]
    """Returns the message unchanged."""

    def __init__(self, name: str, messager: Messager) -> None:
        super().__init__(
            name=name,
            manual="Return the message unchanged.",
            api='{"type": "object", "properties": {"message": {"type": "string"}}, '
            '"required": ["message"]}',
            argument_schema=EchoArgs,
            messager=messager,
        )

    async def _execute(self, **kwargs: Any) -> Any:
        return kwargs["message"]


async def main() -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.argentic_tool")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--echo-tools", type=int, default=10)
    args = parser.parse_args()
    p = args.prefix
    messager = Messager(
        broker_address="127.0.0.1",
        port=args.port,
        # argentic's default id is client-<unix seconds>: two clients started in the same
        # second would kick each other off the broker.
        client_id=f"bench-argentic-tool-{os.getpid()}-{uuid.uuid4().hex[:8]}",
        log_level="WARNING",
    )
    if not await messager.connect():
        raise SystemExit("argentic tool: cannot connect to the broker")
    names = ["echo", *(f"echo{i}" for i in range(args.echo_tools))]
    tools = [EchoTool(name, messager) for name in names]
    set_global_log_level("WARNING")
    for item in tools:
        await item.register(
            f"{p}/agent/tools/register",
            f"{p}/agent/status/info",
            f"{p}/agent/tools/call",
            f"{p}/agent/tools/response",
            f"{p}/agent/tools/cancel",
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for item in tools:
        if getattr(item, "id", None):
            await item.unregister()
    await messager.disconnect()


if __name__ == "__main__":
    asyncio.run(main())
