"""Persistent call history under real managers, brokers and processes: SqliteRecorder keeps
every call across a restart and across processes writing one file, and only the newest with
max_rows."""

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from argentic_tools import SqliteRecorder, ToolManager, ToolService, Topics, tool
from tests.support.brokers import Mosquitto, child_env
from tests.support.cli import run_installed_cli
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ROOT

pytestmark = pytest.mark.anyio

TIMEOUT = 60
"""Bound on any one wait: generous, since CI machines are slow."""


@tool
def a(n: int) -> int:
    """Return n."""
    return n


@tool
def b(n: int) -> int:
    """Return -n."""
    return -n


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

    completed = await run_installed_cli(
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
