"""What a caller holds for a stream it does not read, a lost chunk, and a frozen replica.

    PYTHONPATH=$PWD python scripts/stream_bounds.py                 # all three
    PYTHONPATH=$PWD python scripts/stream_bounds.py --mode unread --chunks 100000

Starts its own mosquitto on a free loopback port (queueing up to 100,000 messages per
client, as the tests' brokers do) and ``python -m tests.support.long_proc``.

- ``unread``: ``stream_tool("many")`` of ``--chunks`` chunks of 1 KB; the caller reads the
  first chunk and then nothing. Figures: the caller's peak RSS growth, the chunks the
  stream held unread when the call ended, how it ended, and after how long.
- ``reading``: the same stream read as fast as it comes: the most chunks it held unread.
- ``gap``: ``stream_tool("gappy")``: chunk 3 of 10 is never sent and the tool works 60 s
  more. Figure: how long the chunks after the gap are held before the call ends.
- ``frozen``: two processes serving ``long_proc``'s tools without a Last Will (as on a
  broker node that died), one SIGSTOPped; calls every
  0.2 s. Figure: whether and when the frozen one leaves the registry, and whether every
  call after the first timeout was served.
"""

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from argentic_tools import Messager, TaskErrorMessage, ToolManager, Topics

ROOT = Path(__file__).resolve().parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss() -> int:
    """The resident memory of the running process, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


@contextlib.contextmanager
def broker() -> Iterator[str]:
    """A mosquitto of our own; yields its URL."""
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        config = Path(workdir) / "mosquitto.conf"
        # As the tests' brokers: mosquitto's default queue (1,000 messages per client)
        # drops the chunks of a fast stream that a caller falls behind on.
        config.write_text(
            f"listener {port} 127.0.0.1\nallow_anonymous true\n"
            "max_queued_messages 100000\nmax_inflight_messages 0\n"
        )
        process = subprocess.Popen(  # noqa: S603
            [binary, "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            time.sleep(0.5)
            yield f"mqtt://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=10)


def tool_process(url: str, prefix: str, *extra: str) -> subprocess.Popen[bytes]:
    """``tests.support.long_proc`` serving under ``prefix``."""
    command = [sys.executable, "-m", "tests.support.long_proc", "--broker", url]
    return subprocess.Popen(  # noqa: S603
        [*command, "--topic-prefix", prefix, *extra], cwd=ROOT
    )


def replica_without_will(url: str, prefix: str) -> subprocess.Popen[bytes]:
    """A process of this script serving ``long_proc``'s tools under ``prefix`` with no Last Will."""
    command = [sys.executable, __file__, "--serve-without-will", url, prefix]
    return subprocess.Popen(command, cwd=ROOT)  # noqa: S603


@contextlib.asynccontextmanager
async def manager_on(url: str, prefix: str) -> AsyncIterator[ToolManager]:
    """A manager on ``prefix``."""
    async with (
        Messager(url, will_topic=None) as messager,
        ToolManager(messager, topics=Topics.with_prefix(prefix)) as manager,
    ):
        yield manager


async def unread(url: str, chunks: int) -> None:
    """A stream read once, then left alone."""
    prefix = f"sb{os.getpid()}u"
    tool = tool_process(url, prefix)
    try:
        async with manager_on(url, prefix) as manager:
            await manager.wait_for_tool("many", timeout=30)
            base = rss()
            peak = base
            started = time.monotonic()
            stream = manager.stream_tool("many", {"count": chunks, "size": 1024}, timeout=600)
            async with stream:
                await anext(stream)
                runner = stream._runner
                assert runner is not None
                while not runner.done():
                    peak = max(peak, rss())
                    await asyncio.wait({runner}, timeout=0.05)
                held = len(stream._chunks)
                ended = time.monotonic() - started
                result = stream.result
                code = getattr(result, "error_code", None) or "ok"
                print(
                    f"unread: {chunks} chunks of 1 KB, read 1: peak RSS growth "
                    f"{(peak - base) / 2**20:.1f} MB, {held} chunks held unread when the "
                    f"call ended ({code}) after {ended:.1f} s",
                    flush=True,
                )
    finally:
        tool.kill()
        tool.wait(timeout=10)


async def reading(url: str, chunks: int) -> None:
    """A stream read as fast as it comes."""
    prefix = f"sb{os.getpid()}r"
    tool = tool_process(url, prefix)
    try:
        async with manager_on(url, prefix) as manager:
            await manager.wait_for_tool("many", timeout=30)
            most = 0
            count = 0
            stream = manager.stream_tool("many", {"count": chunks, "size": 1024}, timeout=600)
            async with stream:
                async for _ in stream:
                    count += 1
                    most = max(most, len(stream._chunks))
            code = getattr(stream.result, "error_code", None) or "ok"
            print(
                f"reading: {count} of {chunks} chunks read ({code}); at most {most} held unread"
                f" {getattr(stream.result, 'error', None) or ''}",
                flush=True,
            )
    finally:
        tool.kill()
        tool.wait(timeout=10)


async def gap(url: str) -> None:
    """A chunk that never comes, then a tool that works 60 s more."""
    prefix = f"sb{os.getpid()}g"
    tool = tool_process(url, prefix)
    try:
        async with manager_on(url, prefix) as manager:
            await manager.wait_for_tool("gappy", timeout=30)
            started = time.monotonic()
            arguments = {"count": 10, "lost": 3, "hold": 60}
            async with manager.stream_tool("gappy", arguments, timeout=120) as stream:
                seen = [chunk async for chunk in stream]
            result = stream.result
            text = result.error if isinstance(result, TaskErrorMessage) else "ok"
            print(
                f"gap: {len(seen)} chunks delivered; chunks after the gap held "
                f"{time.monotonic() - started:.1f} s until: {text}",
                flush=True,
            )
    finally:
        tool.kill()
        tool.wait(timeout=10)


async def frozen(url: str, bound: float) -> None:
    """Two replicas without a Last Will; one is frozen."""
    prefix = f"sb{os.getpid()}f"
    replicas = [replica_without_will(url, prefix) for _ in range(2)]
    try:
        async with manager_on(url, prefix) as manager:
            while len([t for t in manager.tools_by_id.values() if t["name"] == "silent"]) < 2:
                await manager._registry.changed()
            ids = [t["id"] for t in manager.tools_by_id.values() if t["name"] == "silent"]
            replicas[0].send_signal(signal.SIGSTOP)
            stopped = time.monotonic()
            outcomes: dict[str, int] = {}
            retired_after: float | None = None
            while time.monotonic() - stopped < bound:
                result = await manager.execute_tool("silent", {"seconds": 0}, timeout=2)
                key = "ok" if result.ok else str(getattr(result, "error_code", None))
                outcomes[key] = outcomes.get(key, 0) + 1
                if retired_after is None and not all(i in manager.tools_by_id for i in ids):
                    retired_after = time.monotonic() - stopped
                await asyncio.sleep(0.2)
            shown = "never" if retired_after is None else f"after {retired_after:.1f} s"
            print(
                f"frozen: the frozen replica left the registry {shown} (watched {bound:g} s); "
                f"calls: {outcomes}",
                flush=True,
            )
    finally:
        for replica in replicas:
            replica.send_signal(signal.SIGCONT)
            replica.kill()
            replica.wait(timeout=10)


async def serve_without_will(url: str, prefix: str) -> None:
    """Serve ``long_proc``'s tools with no Last Will, as on a broker node that died."""
    from argentic_tools import ToolService
    from tests.support.long_proc import TOOLS

    async with ToolService(url, TOOLS, topics=Topics.with_prefix(prefix), will_topic=None):
        await asyncio.Event().wait()


def main() -> None:
    """Run the chosen figures and print one line each."""
    if sys.argv[1:2] == ["--serve-without-will"]:
        asyncio.run(serve_without_will(sys.argv[2], sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode", choices=["unread", "reading", "gap", "frozen", "all"], default="all"
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--frozen-seconds", type=float, default=60.0)
    args = parser.parse_args()
    with broker() as url:
        if args.mode in ("unread", "all"):
            asyncio.run(unread(url, args.chunks))
        if args.mode in ("reading", "all"):
            asyncio.run(reading(url, args.chunks))
        if args.mode in ("gap", "all"):
            asyncio.run(gap(url))
        if args.mode in ("frozen", "all"):
            asyncio.run(frozen(url, args.frozen_seconds))


if __name__ == "__main__":
    main()
