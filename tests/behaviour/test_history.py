"""Persistent call history: SqliteRecorder under real managers, brokers and processes, its
retention, the event loop it must never stall, and ``argentic-tools history``."""

import gc
import itertools
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from argentic_tools import (
    Observation,
    SqliteRecorder,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from tests.support.brokers import Mosquitto, child_env
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ROOT

pytestmark = pytest.mark.anyio

TIMEOUT = 60
"""Bound on any one wait: generous, since CI machines are slow."""

CLI = Path(sys.executable).parent / "argentic-tools"
"""The installed console script, as users run it."""


@tool
def a(n: int) -> int:
    """Return n."""
    return n


@tool
def b(n: int) -> int:
    """Return -n."""
    return -n


def observation(
    number: int, *, ended: float | None = None, arguments: Any = None, **fields: Any
) -> Observation:
    values: dict[str, Any] = {
        "call_id": f"call-{number}",
        "task_id": f"task-{number}",
        "tool_name": "a",
        "tool_id": "a-1",
        "thread_id": "thread-1",
        "trace_id": None,
        "status": "success",
        "error_code": None,
        "duration_ms": 2.0,
        "arguments": {"n": number} if arguments is None else arguments,
        "result": number,
        "timestamp": time.time() if ended is None else ended,
    }
    values.update(fields)
    return Observation(**values)


async def call_in_batches(
    manager: ToolManager, count: int, *, tag: str, tools: Iterator[str], batch: int = 100
) -> dict[str, list[str]]:
    """Make ``count`` calls, ``batch`` at a time; the task ids of each tool, in call order."""
    task_ids: dict[str, list[str]] = {}
    for start in range(0, count, batch):
        names = [next(tools) for _ in range(start, min(start + batch, count))]
        calls = [
            {"call_id": f"{tag}-{i}", "tool_name": name, "arguments": {"n": i}}
            for i, name in enumerate(names, start)
        ]
        with anyio.fail_after(TIMEOUT):
            results = await manager.execute_tools(calls, thread_id=tag)
        for name, result in zip(names, results, strict=True):
            assert result.ok, result
            task_ids.setdefault(name, []).append(result.task_id)
    return task_ids


async def run_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    with anyio.fail_after(TIMEOUT):
        return await anyio.run_process([str(CLI), *args], check=False, env=child_env())


def one_error_line(completed: subprocess.CompletedProcess[bytes]) -> str:
    errors = completed.stderr.decode().strip().splitlines()
    assert len(errors) == 1, errors
    assert errors[0].startswith("error: ")
    return errors[0]


# -- through real managers ----------------------------------------------------------------


async def test_history_survives_a_manager_restart_and_the_cli_lists_exactly_one_tools_calls(
    mosquitto: Mosquitto, topics: Topics, tmp_path: Path
) -> None:
    path = tmp_path / "calls.db"
    calls_to: dict[str, set[str]] = {"a": set(), "b": set()}
    async with ToolService(mosquitto.url, [a, b], topics=topics):
        # 1,000 calls, then a new manager and recorder on the same file (a restart), then 10.
        for run, count in (("first", 1000), ("restarted", 10)):
            async with (
                SqliteRecorder(path) as recorder,
                messager_for(mosquitto.url, topics) as messager,
                manager_for(messager, topics, recorder=recorder) as manager,
            ):
                for name in ("a", "b"):
                    await manager.wait_for_tool(name, timeout=TIMEOUT)
                made = await call_in_batches(
                    manager, count, tag=run, tools=itertools.cycle("aaabb")
                )
                for name, task_ids in made.items():
                    calls_to[name].update(task_ids)
            assert recorder.dropped == 0
    assert (len(calls_to["a"]), len(calls_to["b"])) == (606, 404)

    completed = await run_cli(
        "history", "--history", str(path), "--tool", "a", "--json", "--limit", "0"
    )

    assert completed.returncode == 0, completed.stderr
    rows = json.loads(completed.stdout)
    assert len(rows) == 606
    assert {row["task_id"] for row in rows} == calls_to["a"]
    assert {row["tool_name"] for row in rows} == {"a"}
    assert {row["thread_id"] for row in rows} == {"first", "restarted"}
    assert all(row["status"] == "success" and row["result"] is not None for row in rows)
    assert len(SqliteRecorder(path).query(limit=None)) == 1010


WRITER = """
import asyncio, json, sys
from argentic_tools import Messager, SqliteRecorder, ToolManager, Topics

async def main(url: str, prefix: str, path: str, count: int) -> None:
    topics = Topics.with_prefix(prefix)
    task_ids = []
    async with (
        SqliteRecorder(path, batch_size=20, flush_interval=0) as recorder,
        Messager(url) as messager,
        ToolManager(messager, topics=topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("b", timeout=30)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # the test's go
        for start in range(0, count, 50):
            calls = [
                {"call_id": f"process-{i}", "tool_name": "b", "arguments": {"n": i}}
                for i in range(start, start + 50)
            ]
            results = await manager.execute_tools(calls, thread_id="process")
            task_ids += [result.task_id for result in results if result.ok]
    print(json.dumps(task_ids), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""
"""A manager in its own process writing the same file, once the test says go."""


async def test_managers_in_two_processes_and_two_in_one_write_one_file_and_lose_no_call(
    mosquitto: Mosquitto, topics: Topics, prefix: str, tmp_path: Path
) -> None:
    path = tmp_path / "calls.db"
    made: dict[str, list[str]] = {}

    async def in_process(tag: str) -> None:
        async with (
            SqliteRecorder(path, batch_size=20, flush_interval=0) as recorder,
            messager_for(mosquitto.url, topics) as messager,
            manager_for(messager, topics, recorder=recorder) as manager,
        ):
            await manager.wait_for_tool("a", timeout=TIMEOUT)
            tools = itertools.repeat("a")
            made[tag] = (await call_in_batches(manager, 500, tag=tag, tools=tools, batch=50))["a"]
        assert recorder.dropped == 0

    args = [sys.executable, "-c", WRITER, mosquitto.url, prefix, str(path), "500"]
    async with ToolService(mosquitto.url, [a, b], topics=topics):
        process = await anyio.open_process(args, cwd=ROOT, env=child_env(), stderr=None)
        async with process:
            assert process.stdout is not None and process.stdin is not None
            output = b""
            with anyio.fail_after(TIMEOUT):
                while b"ready\n" not in output:
                    output += await process.stdout.receive()
                async with anyio.create_task_group() as group:
                    await process.stdin.send(b"go\n")
                    group.start_soon(in_process, "one")
                    group.start_soon(in_process, "two")
                    async for chunk in process.stdout:
                        output += chunk
                assert await process.wait() == 0
    made["process"] = json.loads(output.split(b"ready\n", 1)[1])

    rows = SqliteRecorder(path).query(limit=None)

    assert [len(made[tag]) for tag in ("one", "two", "process")] == [500, 500, 500]
    assert len(rows) == 1500
    for tag, task_ids in made.items():
        assert {row.task_id for row in rows if row.thread_id == tag} == set(task_ids)


async def test_with_max_rows_the_table_keeps_only_the_newest_calls(
    mosquitto: Mosquitto, topics: Topics, tmp_path: Path
) -> None:
    path = tmp_path / "calls.db"
    async with (
        ToolService(mosquitto.url, [a], topics=topics),
        SqliteRecorder(path, max_rows=100, batch_size=25) as recorder,
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("a", timeout=TIMEOUT)
        # Batches one after another: every call of a batch is recorded after the last one's.
        task_ids = (
            await call_in_batches(manager, 600, tag="many", tools=itertools.repeat("a"), batch=50)
        )["a"]

    kept = {row.task_id for row in SqliteRecorder(path).query(limit=None)}

    assert len(kept) == 100
    assert kept == set(task_ids[-100:])


async def test_calls_older_than_max_age_are_deleted(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    now = time.time()
    async with SqliteRecorder(path, max_age_seconds=3600) as recorder:
        for number in range(200):
            # Every other one ended two days ago; the rest just now.
            recorder.record(observation(number, ended=now - 2 * 86400 if number % 2 else now))

    kept = SqliteRecorder(path).query(limit=None)

    assert sorted(row.task_id for row in kept) == sorted(f"task-{n}" for n in range(0, 200, 2))


# -- the recorder alone --------------------------------------------------------------------


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """The objects alive now left out of garbage collections until the test ends.

    A full collection of this test process (tens of thousands of objects from the
    tests before) takes ~50 ms on a 2-core machine, whichever thread's allocation
    happens to start it: a pause of any Python program, not of the code under test.
    Frozen, they are not traversed again; what the test allocates still is.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("frozen_heap")
async def test_recording_5000_observations_never_stalls_the_event_loop(tmp_path: Path) -> None:
    # A probe sleeps 1 ms again and again and counts the wakes that come more than
    # `stall` late. The writer thread's work (JSON, SQLite, the disk) must never hold
    # the loop: sqlite3 releases the GIL while SQLite works, and Python makes any
    # thread give the GIL back within 5 ms, so wakes come at most ~10 ms late on an
    # idle machine and ~20 ms late with both cores busy with other processes. 50 ms
    # leaves room for a busy 2-core machine (other tests' processes, a broker)
    # preempting this process now and then, while a recorder that wrote on the loop
    # (a batch of 500 rows and their indexes, a WAL checkpoint) or held the GIL for a
    # whole batch would still show, on most of its ten batches. A count of stalls, not a
    # time, is asserted; one is forgiven (the OS stopping this process once, under load).
    stall = 0.05
    wakes = stalls = 0
    done = anyio.Event()

    async def probe() -> None:
        nonlocal wakes, stalls
        while not done.is_set():
            before = time.perf_counter()
            await anyio.sleep(0.001)
            wakes += 1
            if time.perf_counter() - before - 0.001 > stall:
                stalls += 1

    text = "x" * 1000
    async with (
        SqliteRecorder(tmp_path / "calls.db") as recorder,
        anyio.create_task_group() as group,
    ):
        group.start_soon(probe)
        for number in range(5000):
            recorder.record(observation(number, arguments={"text": text, "n": number}))
            if number % 50 == 49:  # calls end a few at a time, as in a manager
                await anyio.lowlevel.checkpoint()
        with anyio.fail_after(TIMEOUT):
            await recorder.flush()
        done.set()

    assert len(recorder.query(limit=None)) == 5000
    assert wakes > 0
    assert stalls <= 1


async def test_query_filters_by_tool_thread_outcome_and_time_newest_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    now = time.time()
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, ended=now - 300))
        recorder.record(observation(2, ended=now - 200, tool_name="b", thread_id="thread-2"))
        recorder.record(
            observation(
                3, ended=now - 100, status="error", error_code="execution_error", error="boom"
            )
        )
        recorder.record(observation(4, ended=now - 50, status="timeout", error_code="timeout"))
        await recorder.flush()

        def ids(**filters: Any) -> list[str]:
            return [row.task_id for row in recorder.query(**filters)]

        assert ids() == ["task-4", "task-3", "task-2", "task-1"]
        assert ids(tool="a") == ["task-4", "task-3", "task-1"]
        assert ids(thread="thread-2") == ["task-2"]
        assert ids(outcome="error") == ["task-3"]
        assert ids(outcome="execution_error") == ["task-3"]
        assert ids(outcome="timeout") == ["task-4"]
        assert ids(since=now - 250, until=now - 60) == ["task-3", "task-2"]
        assert ids(limit=2) == ["task-4", "task-3"]
        assert recorder.query(outcome="error")[0].error == "boom"


async def test_arguments_and_results_past_the_cap_are_stored_cut_with_a_marker(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    async with SqliteRecorder(path, max_argument_bytes=1024) as recorder:
        recorder.record(observation(1, arguments={"text": "é" * 5000}, result="y" * 5000))
        recorder.record(observation(2, arguments={"text": "small"}))

    rows = {row.task_id: row for row in SqliteRecorder(path).query()}

    cut = rows["task-1"].arguments
    assert cut["__truncated__"] is True
    assert cut["bytes"] == len(b'{"text":"' + "é".encode() * 5000 + b'"}')
    assert cut["preview"].startswith('{"text":"ééé')
    assert len(json.dumps(cut, ensure_ascii=False).encode()) <= 1024
    assert rows["task-1"].result["__truncated__"] is True
    assert rows["task-2"].arguments == {"text": "small"}


async def test_a_recorder_never_closed_writes_its_queue_when_the_interpreter_exits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    script = (
        "import asyncio, sys, time\n"
        "from argentic_tools import Observation, SqliteRecorder\n"
        "recorder = SqliteRecorder(sys.argv[1], flush_interval=60)\n"
        "async def main() -> None:\n"
        "    for n in range(10):\n"
        "        recorder.record(Observation(None, f'task-{n}', 'a', None, None, None,\n"
        "                                    'success', None, 1.0, {}, timestamp=time.time()))\n"
        "asyncio.run(main())\n"
    )
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process([sys.executable, "-c", script, str(path)], check=False)
    assert done.returncode == 0, done.stderr

    assert len(SqliteRecorder(path).query(limit=None)) == 10


async def test_starting_a_recorder_on_a_path_it_cannot_open_raises(tmp_path: Path) -> None:
    recorder = SqliteRecorder(tmp_path / "missing-directory" / "calls.db")

    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        await recorder.start()


async def test_observations_recorded_after_close_are_counted_as_dropped(tmp_path: Path) -> None:
    async with SqliteRecorder(tmp_path / "calls.db") as recorder:
        recorder.record(observation(1))

    recorder.record(observation(2))

    assert recorder.dropped == 1
    assert [row.task_id for row in recorder.query()] == ["task-1"]


# -- the command line -------------------------------------------------------------------


@pytest.fixture
async def history_file(tmp_path: Path) -> Path:
    path = tmp_path / "calls.db"
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, ended=time.time() - 7200, thread_id="old-thread"))
        recorder.record(observation(2, status="error", error_code="invalid_arguments"))
    return path


async def test_history_prints_a_table_of_the_calls_newest_first(history_file: Path) -> None:
    completed = await run_cli("history", "--history", str(history_file))

    assert completed.returncode == 0, completed.stderr
    table = completed.stdout.decode()
    assert table.index("task-2") < table.index("task-1")
    assert "invalid_arguments" in table
    assert "old-thread" in table


async def test_history_filters_by_outcome_and_since(history_file: Path) -> None:
    failed = await run_cli(
        "history", "--history", str(history_file), "--outcome", "error", "--json"
    )
    recent = await run_cli("history", "--history", str(history_file), "--since", "1h", "--json")

    assert [row["task_id"] for row in json.loads(failed.stdout)] == ["task-2"]
    assert [row["task_id"] for row in json.loads(recent.stdout)] == ["task-2"]


async def test_history_of_a_missing_file_exits_2_with_one_line(tmp_path: Path) -> None:
    completed = await run_cli("history", "--history", str(tmp_path / "nothing.db"))

    assert completed.returncode == 2
    assert "no such file" in one_error_line(completed)


async def test_history_with_an_unreadable_time_exits_2_with_one_line(history_file: Path) -> None:
    completed = await run_cli("history", "--history", str(history_file), "--since", "last week")

    assert completed.returncode == 2
    assert "--since 'last week'" in one_error_line(completed)


async def test_history_of_a_file_that_is_not_a_history_exits_2_with_one_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n" * 100)

    completed = await run_cli("history", "--history", str(path))

    assert completed.returncode == 2
    assert "cannot be read as a call history" in one_error_line(completed)
