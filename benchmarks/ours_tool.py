"""argentic-tools tools in their own process, for the benchmark.

``python -m benchmarks.ours_tool --broker URL --topic-prefix P [options]``

* default (``--kind function``): ``@tool`` functions served by ``serve_main``/ToolService:
  ``echo``, ``wait``, ``typed`` (five typed fields), ``empty`` (no arguments), ``image``
  (an :class:`~argentic_tools.Image` of ``size`` bytes, see :func:`png_bytes`) and
  ``echo0`` .. ``echo{N-1}`` (``--echo-tools N``). Remaining options (``--max-concurrency``,
  ``--log-level``...) go to ``serve_main``.
* ``--kind basetool``: ``BaseTool`` subclasses with a pydantic ``argument_schema``
  (``echo`` and ``echo0`` ..), each registered with ``tool.register(...)`` on one Messager.
* ``--many N``: only ``t0`` .. ``t{N-1}``, echo tools built with ``FunctionTool(func, name=...)``
  (the registration-storm scenario).
"""

import argparse
import asyncio
import functools
import random
import signal
import sys
from typing import Any

from pydantic import BaseModel, Field

from argentic_tools import BaseTool, FunctionTool, Image, Messager, Topics, serve_main, tool


@tool
async def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


@tool
async def wait(seconds: float) -> float:
    """Sleep for ``seconds`` and return it."""
    await asyncio.sleep(seconds)
    return seconds


@tool
async def typed(name: str, count: int, ratio: float, flag: bool, tags: list[str]) -> str:
    """Take five typed arguments and return the name (the input-validation scenario)."""
    return name


@tool
async def empty() -> str:
    """Take no arguments (the input-validation scenario's baseline)."""
    return "ok"


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@functools.cache
def png_bytes(size: int) -> bytes:
    """``size`` bytes that start as a PNG does, the rest random (incompressible), made once."""
    return PNG_SIGNATURE + random.Random(size).randbytes(max(0, size - len(PNG_SIGNATURE)))


@tool
async def image(size: int) -> Image:
    """Return an image of ``size`` bytes (the content-block scenario)."""
    return Image(png_bytes(size), mime_type="image/png")


async def _echo(message: str) -> str:
    """Return the message unchanged."""
    return message


class EchoArgs(BaseModel):
    """Arguments of the class-based echo tool."""

    message: str = Field(description="Text to send back")


class EchoTool(BaseTool):
    """The echo tool written as a BaseTool subclass."""

    def __init__(self, name: str, messager: Messager, max_concurrency: int) -> None:
        super().__init__(
            name=name,
            manual="Return the message unchanged.",
            api="",
            argument_schema=EchoArgs,
            messager=messager,
            max_concurrency=max_concurrency,
        )

    async def _execute(self, **kwargs: Any) -> Any:
        return kwargs["message"]


async def serve_basetools(args: argparse.Namespace) -> None:
    topics = Topics.with_prefix(args.topic_prefix)
    names = ["echo", *(f"echo{i}" for i in range(args.echo_tools))]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with Messager(args.broker, will_topic=topics.register, log_level="WARNING") as messager:
        tools = [EchoTool(name, messager, args.max_concurrency) for name in names]
        await asyncio.gather(
            *(
                t.register(topics.register, topics.status, topics.call_base, topics.response_base)
                for t in tools
            )
        )
        await stop.wait()
        await asyncio.gather(*(t.unregister() for t in tools), return_exceptions=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.ours_tool", add_help=False)
    parser.add_argument("--kind", choices=("function", "basetool"), default="function")
    parser.add_argument("--echo-tools", type=int, default=10)
    parser.add_argument("--many", type=int, default=0)
    parser.add_argument("--broker", required=True)
    parser.add_argument("--topic-prefix", required=True)
    parser.add_argument("--max-concurrency", type=int, default=20000)
    args, rest = parser.parse_known_args(argv)
    if args.kind == "basetool":
        asyncio.run(serve_basetools(args))
        return
    if args.many:
        tools: list[Any] = [FunctionTool(_echo, name=f"t{i}") for i in range(args.many)]
    else:
        tools = [echo, wait, typed, empty, image]
        tools += [FunctionTool(_echo, name=f"echo{i}") for i in range(args.echo_tools)]
    common = [
        "--broker",
        args.broker,
        "--topic-prefix",
        args.topic_prefix,
        "--max-concurrency",
        str(args.max_concurrency),
        "--log-level",
        "WARNING",
    ]
    serve_main(tools, [*common, *rest], prog="benchmarks.ours_tool")


if __name__ == "__main__":
    main(sys.argv[1:])
