"""The tool process of the soak run: ``python -m benchmarks.soak_tool --executions FILE ...``.

Serves one tool, ``soak_work``, with ``serve_main`` (so every ``serve_main`` option such
as ``--broker`` and ``--topic-prefix`` applies). Before it does any work, each execution
appends its task id to ``--executions`` with one ``write`` on an ``O_APPEND`` file: the
line is in the file even when the process is killed a moment later, so the soak runner
can count executions per task id across every process it started.
"""

import argparse
import asyncio
import os
import sys

from argentic_tools import ToolContext, serve_main, tool

_log_fd = -1


@tool
async def soak_work(
    n: int, work_ms: float = 0.0, fail: bool = False, *, context: ToolContext
) -> dict[str, int]:
    """Sleep ``work_ms`` milliseconds, then return ``n`` and this process's pid (or fail)."""
    os.write(_log_fd, f"{context.task_id}\n".encode())
    if work_ms > 0:
        await asyncio.sleep(work_ms / 1000)
    if fail:
        raise ValueError(f"call {n} was asked to fail")
    return {"n": n, "pid": os.getpid()}


def main(argv: list[str]) -> None:
    global _log_fd
    parser = argparse.ArgumentParser(prog="benchmarks.soak_tool", add_help=False)
    parser.add_argument("--executions", required=True, help="file of executed task ids")
    args, rest = parser.parse_known_args(argv)
    _log_fd = os.open(args.executions, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    serve_main([soak_work], rest, prog="benchmarks.soak_tool")


if __name__ == "__main__":
    main(sys.argv[1:])
