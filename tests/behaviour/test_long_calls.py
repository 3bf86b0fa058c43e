"""Long calls against a real tool process: progress, idle timeouts, cancellation that
stops a sync tool's thread, streamed chunks, and the tool-side rate limit."""

import asyncio
import contextlib
import json
import logging
import os
import pathlib
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiomqtt
import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from argentic_tools import (
    BaseTool,
    TaskErrorMessage,
    TaskResultMessage,
    TaskStatus,
    ToolCallRequest,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from argentic_tools._agent.calls.pending import progress
from argentic_tools._agent.calls.pending.progress import STREAM_GAP_SECONDS
from argentic_tools._agent.calls.results.streams import STREAM_BUFFER_CHUNKS
from argentic_tools._tools.hosting.watchdog import LoopWatchdog
from tests.support import long_proc
from tests.support.brokers import Mosquitto
from tests.support.cli import cli_process, connection, lines, read_rest, read_until, run_cli
from tests.support.clients import manager_for, manager_with_tools, messager_for
from tests.support.processes import ToolProcess, serving

pytestmark = pytest.mark.anyio

LONG_TOOLS = (
    "steps",
    "sync_steps",
    "chunks",
    "many",
    "many_sync",
    "gappy",
    "flood",
    "held_stream",
    "held_stream_sync",
    "finish_line",
    "silent",
)


@pytest.fixture(scope="module")
def long_prefix() -> str:
    return f"l{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def long_process(mosquitto: Mosquitto, long_prefix: str) -> Iterator[ToolProcess]:
    """One process serving ``tests.support.long_proc`` for the whole module."""
    with serving("tests.support.long_proc", mosquitto.url, long_prefix, LONG_TOOLS) as process:
        yield process


@pytest.fixture
async def long_manager(
    mosquitto: Mosquitto, long_prefix: str, long_process: ToolProcess
) -> AsyncIterator[ToolManager]:
    topics = Topics.with_prefix(long_prefix)
    async with manager_with_tools(mosquitto.url, topics, LONG_TOOLS, default_timeout=10) as manager:
        yield manager


def files_in(directory: pathlib.Path) -> list[str]:
    """Names of the files the tool process left in ``directory``."""
    return sorted(os.listdir(directory))


class Reports:
    """Progress reports as a callback sees them."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []
        self.first = anyio.Event()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        self.first.set()


class ResponseSpy:
    """Counts the messages of each type on one tool's call and response topics."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self.messages: list[dict[str, Any]] = []

    async def until(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Read until a message of ``kind`` (or a result with status ``kind``) with ``fields``."""

        def matches(message: dict[str, Any]) -> bool:
            found = message.get("type") == kind or message.get("status") == kind
            return found and all(message.get(k) == v for k, v in fields.items())

        with anyio.fail_after(15):
            while not any(matches(m) for m in self.messages):
                incoming = await anext(aiter(self.client.messages))
                self.messages.append(json.loads(incoming.payload))
        return next(m for m in self.messages if matches(m))

    def count(self, kind: str, task_id: str) -> int:
        return sum(1 for m in self.messages if m.get("type") == kind and m["task_id"] == task_id)


@contextlib.asynccontextmanager
async def spy_on(manager: ToolManager, port: int, name: str) -> AsyncIterator[ResponseSpy]:
    """A :class:`ResponseSpy` on the tool ``name``'s topics."""
    tool_id = manager.tools_by_name[name]["id"]
    async with aiomqtt.Client("127.0.0.1", port) as client:
        await client.subscribe(manager.topics.call(tool_id), qos=1)
        await client.subscribe(manager.topics.response(tool_id) + "/#", qos=1)
        yield ResponseSpy(client)


async def test_progress_resets_the_idle_timeout_and_the_cap_still_applies(
    long_manager: ToolManager,
) -> None:
    reported = Reports()
    capped = Reports()
    # Concurrently: 15 reports 0.2 s apart (3 s) under a 2 s idle timeout; the same work
    # under a 1.5 s cap; and a tool that never reports under a 0.5 s idle timeout. The
    # margins (10x the report interval, 7 reports before the cap) hold on a loaded machine.
    long_work, cut_short, quiet = await asyncio.gather(
        long_manager.execute_tool(
            "steps", {"count": 15, "interval": 0.2}, on_progress=reported, idle_timeout=2
        ),
        long_manager.execute_tool(
            "steps",
            {"count": 15, "interval": 0.2},
            on_progress=capped,
            idle_timeout=2,
            max_duration=1.5,
        ),
        long_manager.execute_tool("silent", {"seconds": 3}, idle_timeout=0.5),
    )
    assert long_work.ok, long_work
    assert long_work.result == 15
    assert reported.seen == [(float(i), 15.0, f"step {i} of 15") for i in range(1, 16)]
    assert cut_short.status == TaskStatus.TIMEOUT
    assert "max_duration of 1.5 s" in getattr(cut_short, "error", "")
    assert 0 < len(capped.seen) < 15
    assert quiet.status == TaskStatus.TIMEOUT
    assert "sent no progress report" in getattr(quiet, "error", "")
    assert long_manager.pending_calls == 0


async def test_async_callbacks_and_batches_get_progress(long_manager: ToolManager) -> None:
    seen: list[tuple[str | None, float]] = []

    async def on_call_progress(
        call_id: str | None, progress: float, total: float | None, message: str | None
    ) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append((call_id, progress))

    results = await long_manager.execute_tools(
        [
            {"call_id": "a", "tool_name": "steps", "arguments": {"count": 2, "interval": 0.15}},
            {"call_id": "b", "tool_name": "steps", "arguments": {"count": 3, "interval": 0.15}},
        ],
        on_progress=on_call_progress,
    )
    assert [r.ok for r in results] == [True, True]
    assert [p for c, p in seen if c == "a"] == [1.0, 2.0]
    assert [p for c, p in seen if c == "b"] == [1.0, 2.0, 3.0]

    seen.clear()
    batch, failed = await long_manager.get_tool_results(
        [
            ToolCallRequest(
                tool_id="steps",
                arguments={"count": 2, "interval": 0.15},
                call_id="one",
                idle_timeout=5,
            )
        ],
        on_progress=on_call_progress,
    )
    assert not failed
    assert batch[0].result == 2
    assert seen == [("one", 1.0), ("one", 2.0)]


@pytest.mark.parametrize(
    ("name", "arguments", "last"),
    [("finish_line", {}, (100.0, 100.0)), ("flood", {"reports": 3}, (3.0, 3.0))],
)
async def test_the_last_progress_report_before_the_result_always_reaches_the_caller(
    long_manager: ToolManager, name: str, arguments: dict[str, Any], last: tuple[float, float]
) -> None:
    seen: list[tuple[float, float | None]] = []

    def record(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    result = await long_manager.execute_tool(name, arguments, on_progress=record, timeout=10)
    assert result.ok, result
    # Reports within the rate limit's interval are merged, but the latest is never lost.
    assert seen[-1] == last, seen
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)


async def test_a_progress_flood_is_rate_limited_at_the_tool(
    long_manager: ToolManager, mosquitto: Mosquitto
) -> None:
    async with spy_on(long_manager, mosquitto.port, "flood") as spy:
        reports = Reports()
        result = await long_manager.execute_tool(
            "flood", {"reports": 100_000}, on_progress=reports, timeout=30
        )
        assert result.ok and result.result == 100_000
        task = await spy.until("TASK", call_id=None)
        await spy.until("success", task_id=task["task_id"])
        on_the_wire = spy.count("TOOL_PROGRESS", task["task_id"])
        # 100,000 reports in a tight loop: a handful of messages, at most ten a second.
        assert 1 <= on_the_wire < 100
        assert len(reports.seen) <= on_the_wire
        assert [p for p, _, _ in reports.seen] == sorted(p for p, _, _ in reports.seen)


async def test_a_cancelled_sync_tool_stops_and_keeps_its_slot_until_its_thread_returns(
    long_manager: ToolManager, mosquitto: Mosquitto, tmp_path: pathlib.Path
) -> None:
    async with spy_on(long_manager, mosquitto.port, "sync_steps") as spy:
        started = Reports()
        first = asyncio.ensure_future(
            long_manager.execute_tool(
                "sync_steps",
                {"label": "a", "seconds": 30, "directory": str(tmp_path)},
                on_progress=started,
                call_id="a",
            )
        )
        with anyio.fail_after(10):
            await started.first.wait()
        # Cancelled through wait_for's timeout while its thread is running; at once a
        # second call comes, which must wait for the first thread's slow cleanup.
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        second = await long_manager.execute_tool(
            "sync_steps", {"label": "b", "seconds": 0.2, "directory": str(tmp_path)}
        )
        assert second.ok, second
        sent = await spy.until("TASK", call_id="a")
        await spy.until("TOOL_CANCEL", task_id=sent["task_id"])
        reply = await spy.until("cancelled", task_id=sent["task_id"])
        assert reply["error_code"] == "cancelled"
        assert files_in(tmp_path) == ["a.stopped", "b.done"]
        # One reply per task, never a result after "cancelled".
        replies = [m for m in spy.messages if m.get("task_id") == sent["task_id"] and "status" in m]
        assert len(replies) == 1
        assert long_manager.pending_calls == 0


async def wait_for_files(directory: pathlib.Path, names: list[str]) -> None:
    """Wait (bounded) until exactly ``names`` are in ``directory``."""
    with anyio.fail_after(10):
        while files_in(directory) != names:
            await anyio.sleep(0.02)


@pytest.mark.parametrize(
    ("name", "marker"), [("held_stream", "async"), ("held_stream_sync", "sync")]
)
async def test_a_generator_tool_whose_stream_is_closed_early_is_closed_at_once(
    long_manager: ToolManager, tmp_path: pathlib.Path, name: str, marker: str
) -> None:
    arguments = {"count": 10_000_000, "directory": str(tmp_path)}
    async with long_manager.stream_tool(name, arguments) as stream:
        async for _ in stream:
            break  # one chunk, then the stream is closed: the call is cancelled at the tool
    # The generator's ``finally`` ran: what it held is released now, not at its end.
    await wait_for_files(tmp_path, [f"{marker}.released"])


async def test_wait_for_and_manager_cancel_stop_an_async_tool_in_another_process(
    long_manager: ToolManager, tmp_path: pathlib.Path
) -> None:
    started = Reports()
    arguments = {"count": 50, "interval": 0.1, "directory": str(tmp_path)}
    running = asyncio.ensure_future(
        long_manager.execute_tool("steps", {**arguments, "label": "w"}, on_progress=started)
    )
    with anyio.fail_after(10):
        await started.first.wait()  # the task is running in the tool's process
    with pytest.raises(TimeoutError):  # wait_for cancels the call at its timeout
        await asyncio.wait_for(running, timeout=0.1)
    started = Reports()
    call = asyncio.ensure_future(
        long_manager.execute_tool(
            "steps", {**arguments, "label": "m"}, task_id_override="job-m", on_progress=started
        )
    )
    with anyio.fail_after(10):
        await started.first.wait()
    assert await long_manager.cancel("job-m", reason="no longer needed")
    result = await call
    assert result.status == TaskStatus.CANCELLED
    # Each task was cancelled in the tool's process, long before it could finish.
    await wait_for_files(tmp_path, ["m.stopped", "w.stopped"])
    assert long_manager.pending_calls == 0


async def test_chunks_stream_in_order_while_the_tool_runs(long_manager: ToolManager) -> None:
    seen: list[Any] = []
    result_when_first_came: list[Any] = []
    async with long_manager.stream_tool("chunks", {"count": 6, "interval": 0.1}) as stream:
        async for chunk in stream:
            if not seen:
                result_when_first_came.append(stream.result)
            seen.append(chunk)
    assert result_when_first_came == [None]
    assert seen == [{"i": i} for i in range(6)]
    assert stream.result is not None and stream.result.ok
    assert stream.result.result == seen
    # Not streamed: the collected chunks are the result.
    whole = await long_manager.execute_tool("chunks", {"count": 3, "interval": 0})
    assert isinstance(whole, TaskResultMessage)
    assert whole.result == [{"i": 0}, {"i": 1}, {"i": 2}]


async def test_leaving_a_stream_early_cancels_it_at_the_tool(
    long_manager: ToolManager, mosquitto: Mosquitto
) -> None:
    async with spy_on(long_manager, mosquitto.port, "chunks") as spy:
        async with long_manager.stream_tool("chunks", {"count": 100, "interval": 0.05}) as stream:
            async for chunk in stream:
                if chunk["i"] == 2:
                    break
        assert stream.result is not None
        assert stream.result.status == TaskStatus.CANCELLED
        sent = await spy.until("TASK")
        await spy.until("TOOL_CANCEL", task_id=sent["task_id"])
        await spy.until("cancelled", task_id=sent["task_id"])
        assert long_manager.pending_calls == 0


async def test_a_stream_of_a_tool_older_than_credit_nobody_reads_ends_at_its_bound(
    mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    # A tool of protocol 2 is sent no window (as a caller older than protocol 3 sends
    # none): it sends as fast as the broker takes the chunks, and the caller's bound on
    # unread chunks ends the call. (A paced stream pauses instead: test_stream_pacing.)
    count = 20 * STREAM_BUFFER_CHUNKS
    async with (
        ToolProcess("tests.support.unpaced_proc", mosquitto.url, prefix),
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, default_timeout=30) as long_manager,
    ):
        await long_manager.wait_for_tool("many", timeout=15)
        async with (
            spy_on(long_manager, mosquitto.port, "many") as spy,
            long_manager.stream_tool("many", {"count": count, "size": 1024}) as stream,
        ):
            first = await anext(stream)
            # The caller stops reading; the call ends by itself once the bound is reached.
            runner = stream._runner
            assert runner is not None
            with anyio.fail_after(30):
                await asyncio.wait({runner})
            task = await spy.until("TASK")
            assert task["stream"] is True and "stream_window" not in task
            # The chunks held for the caller: the bound, not the 20,000 the tool would send.
            assert len(stream._chunks) == STREAM_BUFFER_CHUNKS
            result = stream.result
            assert isinstance(result, TaskErrorMessage), result
            assert result.error_code == "stream_interrupted"
            assert f"at most {STREAM_BUFFER_CHUNKS}" in result.error
            assert result.details["limit"] == STREAM_BUFFER_CHUNKS
            # The chunks held so far are still read, in order, then the iteration ends.
            rest = [chunk async for chunk in stream]
            assert [int(chunk[:8]) for chunk in [first, *rest]] == list(range(1 + len(rest)))
            assert len(rest) == STREAM_BUFFER_CHUNKS
            await spy.until("TOOL_CANCEL", task_id=result.task_id)
            await spy.until("cancelled", task_id=result.task_id)
        assert long_manager.pending_calls == 0


async def test_a_reading_caller_gets_every_chunk_of_a_long_stream_in_order(
    long_manager: ToolManager,
) -> None:
    count = 5 * STREAM_BUFFER_CHUNKS
    seen: list[int] = []
    with anyio.fail_after(60):
        async with long_manager.stream_tool(
            "many", {"count": count, "size": 1024}, timeout=60
        ) as stream:
            async for chunk in stream:
                seen.append(int(chunk[:8]))
    assert stream.result is not None and stream.result.ok, stream.result
    assert seen == list(range(count))


async def test_a_missing_chunk_ends_the_stream_without_waiting_for_the_result(
    long_manager: ToolManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gap's bound, shortened from 5 s: what is tested is that the call ends at the
    # bound rather than at the tool's result 120 s later; with the chunks lost for good,
    # the rest of the 5 s was only waited out.
    monkeypatch.setattr(progress, "STREAM_GAP_SECONDS", 1.0)
    seen: list[Any] = []
    # The tool works 120 s after its chunks; the call ends within the gap's bound.
    with anyio.fail_after(STREAM_GAP_SECONDS + 15):
        async with long_manager.stream_tool(
            "gappy", {"count": 10, "lost": 3, "hold": 120}, timeout=180
        ) as stream:
            async for chunk in stream:
                seen.append(chunk)
    assert seen == [{"i": 0}, {"i": 1}, {"i": 2}]
    result = stream.result
    assert isinstance(result, TaskErrorMessage), result
    assert result.error_code == "stream_interrupted"
    assert "chunk 3 never came" in result.error
    # What was lost, and why as far as the caller knows: no connection dropped.
    assert "3 chunk(s) were delivered, in order (the last one received was chunk 9)" in (
        result.error
    )
    assert "although both connections stayed up" in result.error
    assert result.details == {
        "delivered": 3,
        "missing": 3,
        "held": 6,
        "last_seq": 9,
        "cause": "broker_queue",
    }
    assert long_manager.pending_calls == 0


async def test_a_broker_restart_mid_stream_never_duplicates_or_reorders_chunks(
    private_mosquitto: Mosquitto, topics: Topics
) -> None:
    broker = private_mosquitto
    async with (
        ToolService(broker.url, [long_proc.chunks], topics=topics),
        messager_for(broker.url, topics) as messager,
        manager_for(messager, topics) as manager,
    ):
        await manager.wait_for_tool("chunks", timeout=10)
        seen: list[Any] = []
        # The call's own deadline lies past this bound: a stream left hanging after the
        # restart fails the test here instead of ending as a timeout the test accepted.
        with anyio.fail_after(30):
            async with manager.stream_tool(
                "chunks", {"count": 40, "interval": 0.05}, timeout=120
            ) as stream:
                async for chunk in stream:
                    seen.append(chunk)
                    if len(seen) == 5:
                        broker.kill()
                        await anyio.to_thread.run_sync(broker.start)
        result = stream.result
        assert result is not None
        # In order, each chunk once; then either the whole result or the error that
        # says chunks were lost with the dropped connection (nothing else).
        assert seen == [{"i": i} for i in range(len(seen))]
        if isinstance(result, TaskErrorMessage):
            assert result.error_code == "stream_interrupted", result
            assert result.details["cause"] == "reconnected", result.details
            assert result.details["delivered"] == len(seen), result.details
            assert result.error.startswith("Tool 'chunks'")
            assert "a connection to the broker dropped during the call" in result.error
        else:
            assert len(seen) == 40
            assert result.result == seen
        assert manager.pending_calls == 0


async def test_a_tool_blocking_its_event_loop_is_named_once_and_keeps_its_connection(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    async def blocker(seconds: float) -> float:
        """Block the event loop (the mistake this test is about)."""
        time.sleep(seconds)  # noqa: ASYNC251 - on purpose
        return seconds

    # keepalive 1 s: the watchdog pings every 1/3 s while the loop is blocked. (Without
    # the pings, the test's mosquitto dropped such a client blocked for 6 s every time:
    # measured, and too slow to repeat here; the pings are what this test checks.)
    service = ToolService(
        mosquitto.url, [blocker], topics=topics, blocked_loop_threshold=0.2, keepalive=1
    )
    async with service:
        watchdog = service.watchdog
        assert watchdog is not None
        await manager.wait_for_tool("blocker", timeout=10)
        connections = service.messager.connections
        with caplog.at_level(logging.DEBUG, logger="argentic_tools.tool"):
            for seconds in (1.2, 0.6):
                assert (await manager.execute_tool("blocker", {"seconds": seconds})).ok
            # The stall is reported when the loop runs again: wait for that, bounded.
            with anyio.fail_after(5):
                while len(stalls_of(watchdog, "blocker")) < 2:
                    await anyio.sleep(0.05)
            # Had the broker dropped the process, it would have reconnected by now.
            assert (await manager.execute_tool("blocker", {"seconds": 0})).ok
        assert service.messager.connections == connections
        assert watchdog.pings >= 2
    # (A loaded machine may stall the test's own loop too: those stalls name no tool.)
    assert all(seconds > 0.2 for seconds in stalls_of(watchdog, "blocker"))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    named = [w for w in warnings if "'blocker' blocked the event loop" in w]
    assert len(named) == 1, warnings
    assert "make it a plain 'def'" in named[0]


def stalls_of(watchdog: LoopWatchdog, tool_name: str) -> list[float]:
    """How long each stall the watchdog blamed on ``tool_name`` lasted."""
    return [seconds for name, seconds in watchdog.stalls if name == tool_name]


async def test_the_cli_prints_progress_and_chunks_as_json_lines(
    mosquitto: Mosquitto, long_prefix: str, long_process: ToolProcess
) -> None:
    where = connection(mosquitto.url, long_prefix)
    steps, chunked = await asyncio.gather(
        run_cli("call", "steps", '{"count": 3, "interval": 0.15}', "--json", *where),
        run_cli("call", "chunks", '{"count": 3, "interval": 0}', "--json", *where),
    )
    assert steps.returncode == 0, steps.stderr
    assert [json.loads(line) for line in lines(steps.stdout)] == [
        {"progress": i, "total": 3, "message": f"step {i} of 3"} for i in (1, 2, 3)
    ] + [{"result": 3}]
    assert chunked.returncode == 0, chunked.stderr
    assert [json.loads(line) for line in lines(chunked.stdout)] == [
        {"chunk": {"i": 0}},
        {"chunk": {"i": 1}},
        {"chunk": {"i": 2}},
        {"result": [{"i": 0}, {"i": 1}, {"i": 2}]},
    ]


async def test_ctrl_c_on_the_cli_cancels_the_call_at_the_tool(
    mosquitto: Mosquitto, long_prefix: str, long_process: ToolProcess, tmp_path: pathlib.Path
) -> None:
    arguments = json.dumps(
        {"count": 100, "interval": 0.1, "label": "cli", "directory": str(tmp_path)}
    )
    where = connection(mosquitto.url, long_prefix)
    async with cli_process("call", "steps", arguments, "--json", *where) as call:
        assert call.stdout is not None
        await read_until(call.stdout, b'"progress"')
        call.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            status = await call.wait()
        errors = lines(await read_rest(call.stderr))
    assert status == 130
    await wait_for_files(tmp_path, ["cli.stopped"])
    # Nothing but the word: no "Future exception was never retrieved" from the closing
    # manager failing the call nobody awaits any more.
    assert errors == ["interrupted"]


class Pages(BaseModel):
    pages: int


class Reader(BaseTool):
    """A class-based tool that streams pages and reports progress through ``self.context``."""

    def __init__(self) -> None:
        super().__init__("reader", "Read pages one by one.", "", Pages)

    async def _execute(self, **kwargs: Any) -> AsyncIterator[str]:  # type: ignore[override]
        pages = kwargs["pages"]
        for page in range(pages):
            context = self.context
            assert context is not None
            await context.report_progress(page + 1, pages)
            yield f"page {page}"


async def test_a_base_tool_streams_and_reports_through_self_context(
    mosquitto: Mosquitto, topics: Topics, manager: ToolManager
) -> None:
    async with ToolService(mosquitto.url, [Reader()], topics=topics):
        await manager.wait_for_tool("reader", timeout=10)
        reports = Reports()
        async with manager.stream_tool("reader", {"pages": 3}, on_progress=reports) as stream:
            pages = [page async for page in stream]
        assert pages == ["page 0", "page 1", "page 2"]
        assert stream.result is not None and stream.result.result == pages
        assert reports.seen[0] == (1.0, 3.0, None)
        collected = await manager.execute_tool("reader", {"pages": 2})
        assert collected.result == ["page 0", "page 1"]
