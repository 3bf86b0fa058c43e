"""The tool process of the burst run: ``python -m benchmarks.burst_tool --broker URL ...``.

Serves one tool, ``burst_sleep(n, seconds)``, with ``serve_main`` (so ``--broker``,
``--topic-prefix``, ``--max-concurrency`` and ``--log-level`` apply). It sleeps
``seconds`` and returns ``n``, so the caller can check that each result is its own.
The first line of its log names the ``argentic_tools`` package it imported, so a run
against another checkout of the library can be verified.
"""

import asyncio
import sys

import argentic_tools
from argentic_tools import serve_main, tool


@tool
async def burst_sleep(n: int, seconds: float) -> int:
    """Sleep ``seconds``, then return ``n``."""
    await asyncio.sleep(seconds)
    return n


def main(argv: list[str]) -> None:
    print(f"argentic_tools from {argentic_tools.__file__}", file=sys.stderr, flush=True)
    serve_main([burst_sleep], argv, prog="benchmarks.burst_tool")


if __name__ == "__main__":
    main(sys.argv[1:])
