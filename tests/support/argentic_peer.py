"""An unmodified argentic 0.16 tool in its own process, for interoperability tests.

``python -m tests.support.argentic_peer --broker-port N --topic-prefix P`` registers an
argentic ``BaseTool`` named ``argentic_upper`` and serves it until SIGTERM.
"""

import argparse
import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator
from typing import Any

from argentic.core.messager.messager import Messager
from argentic.core.tools.tool_base import BaseTool
from pydantic import BaseModel, Field

from argentic_tools import Topics


class UpperArgs(BaseModel):
    """Arguments of the argentic test tool."""

    text: str = Field(description="Text to upper-case")


class UpperTool(BaseTool):  # type: ignore[misc]  # argentic ships no type information
    """Upper-cases text: written exactly as an argentic user would."""

    def __init__(self, messager: Messager) -> None:
        super().__init__(
            name="argentic_upper",
            manual="Return the text in upper case.",
            api='{"type": "object", "properties": {"text": {"type": "string"}}, '
            '"required": ["text"]}',
            argument_schema=UpperArgs,
            messager=messager,
        )

    async def _execute(self, **kwargs: Any) -> Any:
        return kwargs["text"].upper()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--broker-port", type=int, required=True)
    parser.add_argument("--topic-prefix", required=True)
    args = parser.parse_args()
    p = args.topic_prefix
    messager = Messager(broker_address="127.0.0.1", port=args.broker_port, log_level="WARNING")
    if not await messager.connect():
        raise SystemExit("cannot connect")
    tool = UpperTool(messager)
    await tool.register(
        f"{p}/agent/tools/register",
        f"{p}/agent/status/info",
        f"{p}/agent/tools/call",
        f"{p}/agent/tools/response",
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await tool.unregister()
    await messager.disconnect()


@contextlib.asynccontextmanager
async def argentic_manager(port: int, topics: Topics) -> AsyncIterator[Any]:
    """An unmodified argentic 0.16 ToolManager on 127.0.0.1:``port``, initialised."""
    from argentic.core.tools.tool_manager import ToolManager as ArgenticToolManager

    logging.getLogger("argentic").setLevel(logging.WARNING)
    peer = Messager(broker_address="127.0.0.1", port=port, log_level="WARNING")
    assert await peer.connect()
    try:
        manager = ArgenticToolManager(
            peer,
            log_level="WARNING",
            register_topic=topics.register,
            tool_call_topic_base=topics.call_base,
            tool_response_topic_base=topics.response_base,
            status_topic=topics.status,
            default_timeout=10,
        )
        await manager.async_init()
        yield manager
    finally:
        await peer.disconnect()


if __name__ == "__main__":
    asyncio.run(main())
