"""Long-running test tools: ``python -m tests.support.long_proc --broker URL --topic-prefix P``.

Each tool leaves files in the directory it is given, so a test can tell what
really happened in this process: ``LABEL.done`` (it ran to completion, which a
cancelled call must never reach), ``LABEL.stopped`` (it saw the cancellation),
``overlap`` (two calls of a ``max_concurrency=1`` tool ran at once).
"""

import pathlib
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator

import anyio

from argentic_tools import ToolContext, serve_main, tool


def mark(directory: str, name: str) -> None:
    """Leave the file ``name`` in ``directory``."""
    (pathlib.Path(directory) / name).write_text(name)


@tool
async def steps(
    context: ToolContext, count: int, interval: float, label: str = "", directory: str = ""
) -> int:
    """Report progress ``count`` times, ``interval`` seconds apart, then return ``count``."""
    try:
        for step in range(1, count + 1):
            await anyio.sleep(interval)
            await context.report_progress(step, count, f"step {step} of {count}")
    except anyio.get_cancelled_exc_class():
        if directory:
            mark(directory, f"{label}.stopped")
        raise
    if directory:
        mark(directory, f"{label}.done")
    return count


_active = 0
_active_lock = threading.Lock()


@tool(max_concurrency=1)
def sync_steps(context: ToolContext, label: str, seconds: float, directory: str) -> str:
    """A blocking tool that checks for cancellation and finishes its cleanup slowly."""
    global _active
    with _active_lock:
        _active += 1
        if _active > 1:
            mark(directory, "overlap")
    try:
        started = time.monotonic()
        step = 0
        while time.monotonic() - started < seconds:
            step += 1
            context.report_progress(step)
            if context.cancelled:
                mark(directory, f"{label}.stopped")
                time.sleep(0.3)  # cleanup that takes a while: the slot stays taken
                context.raise_if_cancelled()
            time.sleep(0.02)
        mark(directory, f"{label}.done")
        return label
    finally:
        with _active_lock:
            _active -= 1


@tool
async def chunks(count: int, interval: float) -> AsyncIterator[dict[str, int]]:
    """Yield ``count`` chunks ``{"i": i}``, ``interval`` seconds apart."""
    for i in range(count):
        yield {"i": i}
        await anyio.sleep(interval)


@tool
async def many(count: int, size: int) -> AsyncIterator[str]:
    """Yield ``count`` chunks of ``size`` characters as fast as they can be sent."""
    for i in range(count):
        yield f"{i:08d}".ljust(size, "x")


@tool
def many_sync(count: int, size: int) -> Iterator[str]:
    """:func:`many` as a sync generator (it runs in a worker thread)."""
    for i in range(count):
        yield f"{i:08d}".ljust(size, "x")


@tool
async def gappy(context: ToolContext, count: int, lost: int, hold: float) -> int:
    """Send chunks 0 to ``count - 1`` but ``lost`` (as if the broker lost it), then work
    ``hold`` seconds more before returning ``count``."""
    control = context._control
    assert control is not None
    for i in range(count):
        if i == lost:
            control.chunks += 1  # the seq is used, the chunk never leaves
            continue
        await context.send_partial({"i": i})
    await anyio.sleep(hold)
    return count


@tool
def flood(context: ToolContext, reports: int) -> int:
    """Report progress ``reports`` times in a tight loop."""
    for i in range(reports):
        context.report_progress(i + 1, reports)
    return reports


@tool
async def held_stream(count: int, directory: str) -> AsyncIterator[int]:
    """Yield ``count`` numbers, holding a resource that its ``finally`` releases."""
    try:
        for number in range(count):
            yield number
    finally:
        mark(directory, "async.released")


@tool
def held_stream_sync(count: int, directory: str) -> Iterator[int]:
    """:func:`held_stream` as a sync generator (runs in a worker thread)."""
    try:
        yield from range(count)
    finally:
        mark(directory, "sync.released")


@tool
async def finish_line(context: ToolContext) -> str:
    """Report 0, 50 and 100 % at once, then return (all within the rate limit's interval)."""
    for percent in (0, 50, 100):
        await context.report_progress(percent, 100)
    return "done"


@tool
async def silent(seconds: float) -> float:
    """Work for ``seconds`` without reporting progress."""
    await anyio.sleep(seconds)
    return seconds


@tool
async def counted(label: str, seconds: float, directory: str) -> str:
    """Note each run in ``directory/LABEL.runs`` (one line per run), work, return ``label``."""
    with (pathlib.Path(directory) / f"{label}.runs").open("a") as runs:
        runs.write("run\n")
    await anyio.sleep(seconds)
    return label


TOOLS = [
    steps,
    sync_steps,
    chunks,
    many,
    many_sync,
    gappy,
    flood,
    held_stream,
    held_stream_sync,
    finish_line,
    silent,
    counted,
]


def main(argv: list[str]) -> None:
    """Serve the long-running test tools."""
    serve_main(TOOLS, argv, prog="tests.support.long_proc")


if __name__ == "__main__":
    main(sys.argv[1:])
