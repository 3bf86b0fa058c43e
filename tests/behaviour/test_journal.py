"""Calls that outlive their caller: an agent process killed with calls pending, started
again on the same journal, gets every result, and no tool runs a task twice."""

import json
import pathlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from argentic_tools import Messager, TaskErrorMessage, TaskResultMessage, ToolManager, Topics
from argentic_tools._agent.records.sqlite_journal import SqliteJournal
from tests.support.brokers import Mosquitto, child_env, running_mosquitto
from tests.support.cli import read_until
from tests.support.processes import ToolProcess, python_cmd
from tests.support.requirements import require_mosquitto

pytestmark = pytest.mark.anyio

CALLS = 20


async def agent(
    mode: str, url: str, prefix: str, journal: pathlib.Path, runs: pathlib.Path
) -> Process:
    """The journaling agent process (``tests.support.journal_agent``) in ``mode``."""
    return await anyio.open_process(
        python_cmd(
            "-m",
            "tests.support.journal_agent",
            mode,
            "--broker",
            url,
            "--topic-prefix",
            prefix,
            "--journal",
            str(journal),
            "--client-id",
            f"agent-{prefix}",
            "--directory",
            str(runs),
            "--calls",
            str(CALLS),
            "--seconds",
            "4",
        ),
        env=child_env(),
    )


async def resumed_results(process: Process) -> list[dict[str, Any]]:
    """The JSON lines the resumed agent prints, until ``done``."""
    assert process.stdout is not None
    seen = (await read_until(process.stdout, b"done\n", timeout=90)).decode()
    with anyio.fail_after(30):
        await process.wait()
    results = [json.loads(line) for line in seen.splitlines() if line.startswith("{")]
    assert f"{len(results)} observed as reattached" in seen  # what the dashboard marks
    return results


def runs_of(directory: pathlib.Path) -> dict[str, int]:
    """How many times the tool ran each job."""
    return {
        path.name.removesuffix(".runs"): len(path.read_text().splitlines())
        for path in directory.glob("*.runs")
    }


@pytest.fixture
async def killed_agent(
    tmp_path: pathlib.Path,
) -> AsyncIterator[tuple[Mosquitto, str, pathlib.Path, pathlib.Path]]:
    """A private broker, the long tools, and an agent SIGKILLed with 20 calls pending."""
    require_mosquitto()
    prefix = f"j{uuid.uuid4().hex[:10]}"
    journal, runs = tmp_path / "calls.journal", tmp_path / "runs"
    runs.mkdir()
    with running_mosquitto() as broker:
        async with ToolProcess("tests.support.long_proc", broker.url, prefix):
            process = await agent("start", broker.url, prefix, journal, runs)
            try:
                assert process.stdout is not None
                await read_until(process.stdout, b"sent\n", timeout=60)
            finally:
                process.kill()
                with anyio.fail_after(10):
                    await process.wait()
            yield broker, prefix, journal, runs


async def test_a_killed_agent_restarted_on_its_journal_gets_every_result_once(
    killed_agent: tuple[Mosquitto, str, pathlib.Path, pathlib.Path],
) -> None:
    broker, prefix, journal, runs = killed_agent
    left = await SqliteJournal(journal).unfinished()
    assert len(left) == CALLS  # what the killed process left running
    resumed = await agent("resume", broker.url, prefix, journal, runs)
    results = await resumed_results(resumed)
    assert sorted(r["task_id"] for r in results) == sorted(f"job-{i}" for i in range(CALLS))
    assert all(r["status"] == "success" and r["result"] == r["task_id"] for r in results), results
    assert runs_of(runs) == {f"job-{i}": 1 for i in range(CALLS)}  # none ran twice
    ended = SqliteJournal(journal).newest(limit=100)
    assert len(ended) == CALLS
    assert all(call.status == "success" and call.restarts == 1 for call in ended)


async def test_the_same_with_the_broker_restarted_while_the_agent_was_down(
    killed_agent: tuple[Mosquitto, str, pathlib.Path, pathlib.Path],
) -> None:
    broker, prefix, journal, runs = killed_agent
    broker.restart()  # the queued results and sessions are gone with it
    resumed = await agent("resume", broker.url, prefix, journal, runs)
    results = await resumed_results(resumed)
    assert len(results) == CALLS
    for result in results:
        # The tool reconnected and kept each result: it comes again, never run twice.
        assert result["status"] == "success", result
    assert runs_of(runs) == {f"job-{i}": 1 for i in range(CALLS)}


async def test_result_reads_an_ended_call_and_refuses_an_unknown_one(
    mosquitto: Mosquitto, tmp_path: pathlib.Path
) -> None:
    prefix = f"r{uuid.uuid4().hex[:10]}"
    topics = Topics.with_prefix(prefix)
    runs = tmp_path / "runs"
    runs.mkdir()
    journal = tmp_path / "calls.journal"
    async with (
        ToolProcess("tests.support.long_proc", mosquitto.url, prefix),
        Messager(mosquitto.url, client_id=f"agent-{prefix}") as messager,
        ToolManager(messager, topics=topics, journal=journal) as manager,
    ):
        await manager.wait_for_tool("counted", timeout=20)
        done = await manager.execute_tool(
            "counted", {"label": "a", "seconds": 0, "directory": str(runs)}, "mine"
        )
        assert isinstance(done, TaskResultMessage)
        again = await manager.result("mine")
        assert isinstance(again, TaskResultMessage) and again.result == "a"
        with pytest.raises(KeyError):
            await manager.result("nobody")
        bad = await manager.execute_tool("counted", {"label": 1}, "bad")
        assert isinstance(bad, TaskErrorMessage)  # refused before anything was journaled
        with pytest.raises(KeyError):
            await manager.result("bad")
    with pytest.raises(ValueError, match="stable client id"):
        ToolManager(Messager(mosquitto.url), topics=topics, journal=journal)


async def test_the_journal_keeps_a_running_calls_latest_progress(
    mosquitto: Mosquitto, tmp_path: pathlib.Path
) -> None:
    prefix = f"p{uuid.uuid4().hex[:10]}"
    topics = Topics.with_prefix(prefix)
    journal = SqliteJournal(tmp_path / "calls.journal")
    seen = anyio.Event()
    async with (
        ToolProcess("tests.support.long_proc", mosquitto.url, prefix),
        Messager(mosquitto.url, client_id=f"agent-{prefix}") as messager,
        ToolManager(messager, topics=topics, journal=journal) as manager,
    ):
        await manager.wait_for_tool("steps", timeout=20)

        def reported(progress: float, total: float | None, message: str | None) -> None:
            if progress >= 2:
                seen.set()

        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: manager.execute_tool(
                    "steps", {"count": 30, "interval": 0.1}, "stepper", on_progress=reported
                )
            )
            with anyio.fail_after(20):
                await seen.wait()
            running = await journal.find("stepper")
            assert running is not None and running.status == "running"
            assert running.progress is not None and running.progress["progress"] >= 1
            assert running.progress["total"] == 30
            group.cancel_scope.cancel()
