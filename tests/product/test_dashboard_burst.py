"""The dashboard under a burst of calls with many pages open, on mosquitto's default limits.

A real ``argentic-tools dashboard`` process, a real tool process, 20 event streams read
as fast as they come, and 2,000 calls at once: mosquitto (20 messages in flight and
1,000 queued per client, as the shipped ``mosquitto.conf`` leaves them) drops the
messages of a client that falls behind, so the dashboard's observer must keep up, and
when it knows it missed something it must say so rather than show a call as timed out.
"""

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import anyio.abc
import pytest

from argentic_tools import Topics
from tests.support.brokers import Mosquitto
from tests.support.cli import cli_process, connection, read_until
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio

CALLS = 2000
PAGES = 20
CALL_TIMEOUT = 5.0
"""Every call succeeds well within it; the dashboard ends a call it lost 1 s past it."""
BOUND = 120.0
"""Bound on the burst and on the dashboard settling (seconds on a loaded 2-core machine)."""


@contextlib.asynccontextmanager
async def dashboard_process(url: str, prefix: str) -> AsyncIterator[int]:
    """``argentic-tools dashboard`` on a free loopback port; yields the port."""
    async with cli_process("dashboard", *connection(url, prefix), "--http", "127.0.0.1:0") as proc:
        assert proc.stderr is not None
        printed = await read_until(proc.stderr, b"/\n")
        found = re.search(rb"http://127\.0\.0\.1:(\d+)/", printed)
        assert found, printed
        yield int(found.group(1))


async def open_stream(port: int) -> anyio.abc.SocketStream:
    stream = await anyio.connect_tcp("127.0.0.1", port)
    await stream.send(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return stream


async def drain(stream: anyio.abc.SocketStream) -> None:
    """A page that reads as fast as the events come (until the stream ends)."""
    with contextlib.suppress(
        anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError
    ):
        while True:
            await stream.receive(65536)


class Page:
    """A page that follows the calls and counters as the dashboard's script does."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.statuses: dict[str, str] = {}
        self.counters: dict[str, Any] = {}
        self.changed = anyio.Event()

    async def next_event(self) -> tuple[str, Any]:
        while b"\n\n" not in self.buffer:
            self.buffer += await self.stream.receive(65536)
        block, self.buffer = self.buffer.split(b"\n\n", 1)
        kind, data = "", cast(Any, None)
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                kind = line[7:].decode()
            elif line.startswith(b"data: "):
                data = json.loads(line[6:])
        if kind == "call":
            self.statuses[data["task_id"]] = data["status"]
        elif kind in ("snapshot", "tick"):
            self.counters = data["counters"]
        self.changed.set()
        self.changed = anyio.Event()
        return kind, data

    async def until_settled(self, calls: int) -> dict[str, Any]:
        """The counters of the first tick with nothing in flight once the calls are over.

        They are over when all of them have ended, or when the dashboard knows it lost
        some (then it counts them apart), or when it shows a timeout (which it must not).
        """
        while True:
            kind, _ = await self.next_event()
            counters = self.counters
            ended = sum(counters.get(key, 0) for key in ("succeeded", "failed", "not_seen"))
            if (
                kind == "tick"
                and counters["in_flight"] == 0
                and (ended >= calls or counters.get("lost", 0) > 0 or counters["timed_out"] > 0)
            ):
                return counters


async def test_a_burst_with_twenty_pages_open_is_counted_exactly_or_its_losses_are_shown(
    default_limits_mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    url = default_limits_mosquitto.url
    async with (
        ToolProcess("tests.support.tool_proc", url, prefix),
        dashboard_process(url, prefix) as port,
        messager_for(url, topics) as messager,
        manager_for(messager, topics) as manager,
        anyio.create_task_group() as pages,
    ):
        await manager.wait_for_tool("echo", timeout=30)
        streams = [await open_stream(port) for _ in range(PAGES)]
        watched = Page(streams[0])
        with anyio.fail_after(BOUND):
            while not watched.counters:  # the snapshot: the page is live
                await watched.next_event()
        for stream in streams[1:]:
            pages.start_soon(drain, stream)
        settled: list[dict[str, Any]] = []
        pages.start_soon(_follow, watched, settled)
        with anyio.fail_after(BOUND):
            results = await _burst(manager)
        assert [result.error for result in results if not result.ok] == []
        with anyio.fail_after(BOUND):
            while not settled:
                await watched.changed.wait()
        counters = settled[0]
        for stream in streams:
            await stream.aclose()
    # A call whose result the dashboard missed is never shown as timed out.
    assert counters["timed_out"] == 0, counters
    assert "timeout" not in watched.statuses.values()
    if counters.get("lost", 0) == 0:
        assert (counters["started"], counters["succeeded"]) == (CALLS, CALLS), counters
    else:  # it lost messages, and says how many; the calls it lost are 'unknown'
        assert counters["succeeded"] + counters["not_seen"] <= CALLS, counters


async def _follow(page: Page, settled: list[dict[str, Any]]) -> None:
    try:
        settled.append(await page.until_settled(CALLS))
    except anyio.EndOfStream:
        pytest.fail("the dashboard ended the page's event stream during the burst")
    page.changed.set()


async def _burst(manager: Any) -> list[Any]:
    results: list[Any] = []

    async def one(index: int) -> None:
        results.append(
            await manager.execute_tool("echo", {"message": f"m{index}"}, timeout=CALL_TIMEOUT)
        )

    async with anyio.create_task_group() as group:
        for index in range(CALLS):
            group.start_soon(one, index)
    return results
