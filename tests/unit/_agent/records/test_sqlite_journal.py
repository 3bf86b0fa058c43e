"""The call journal's file: what it keeps, in what order, within what bounds."""

import dataclasses
import time
from pathlib import Path

import anyio
import pytest

from argentic_tools import JournaledCall, SqliteJournal
from argentic_tools._agent.records import sqlite_journal

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def call(task_id: str, label: str | None = None, started: float | None = None) -> JournaledCall:
    return JournaledCall(
        task_id=task_id,
        label=label,
        call_id=None,
        tool_name="echo",
        tool_id="echo-1",
        tool_source="tools-1",
        arguments={"message": task_id},
        context={"thread_id": "t"},
        started_at=started or time.time(),
        timeout=30.0,
        caller="agent",
    )


async def test_calls_begin_end_and_are_read_back_as_written(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "j" / "calls.journal")
    await journal.open()
    await journal.begin(call("a", "job-a", started=1.0))
    await journal.begin(call("b", started=2.0))
    journal.progressed("a", {"progress": 1, "total": 2})
    journal.ended("b", "success", '{"result": "b"}')
    found = await journal.find("job-a")  # a read sees the writes queued before it
    assert (
        found is not None and found.task_id == "a" and found.progress == {"progress": 1, "total": 2}
    )
    assert found.arguments == {"message": "a"} and found.context == {"thread_id": "t"}
    assert found.deadline == 31.0 and found.key == "job-a" and found.caller == "agent"
    assert [c.task_id for c in await journal.unfinished()] == ["a"]
    ended = await journal.find("b")
    assert ended is not None and ended.status == "success" and ended.result == {"result": "b"}
    journal.progressed("b", {"progress": 9})  # an ended call's progress is not changed
    await journal.resumed(["a"])
    await journal.close()
    reopened = SqliteJournal(tmp_path / "j" / "calls.journal")
    assert [c.task_id for c in reopened.newest()] == ["b", "a"]
    assert reopened.lookup("b").progress is None  # type: ignore[union-attr]
    assert reopened.lookup("a").restarts == 1  # type: ignore[union-attr]
    assert reopened.newest("running")[0].task_id == "a"


async def test_ended_calls_are_trimmed_by_count_and_age_but_running_ones_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_journal, "TRIM_INTERVAL_SECONDS", 0.0)
    journal = SqliteJournal(tmp_path / "calls.journal", max_calls=3, max_age_seconds=3600)
    await journal.open()
    for i in range(6):
        await journal.begin(call(f"c{i}", started=float(i)))
    for i in range(5):  # c5 keeps running
        journal.ended(f"c{i}", "success", "{}")
    await journal.begin(call("trigger"))  # the trim runs with the writes
    await journal.begin(call("trigger2"))
    kept = {c.task_id for c in await journal.calls(limit=100)}
    assert "c5" in kept and "trigger" in kept
    assert len([c for c in kept if c.startswith("c") and c != "c5"]) == 3
    await journal.close()


async def test_ended_calls_past_max_age_are_deleted_and_running_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_journal, "TRIM_INTERVAL_SECONDS", 0.0)  # trim on each write
    hour = 3600.0
    now = time.time()

    def ended(task_id: str, ago: float) -> JournaledCall:
        old = call(task_id, started=now - ago - 1)
        return dataclasses.replace(old, status="success", result={}, ended_at=now - ago)

    journal = SqliteJournal(tmp_path / "calls.journal", max_age_seconds=hour)
    with anyio.fail_after(10):
        await journal.open()
        await journal.begin(ended("two-hours-ago", 2 * hour))
        await journal.begin(ended("half-an-hour-ago", hour / 2))
        await journal.begin(call("running-for-two-hours", started=now - 2 * hour))
        await journal.begin(call("just-begun"))
        journal.ended("just-begun", "success", "{}")
        await journal.begin(call("trigger"))  # the trim runs with these writes
        kept = {c.task_id for c in await journal.calls(limit=100)}
        await journal.close()
    assert kept == {"half-an-hour-ago", "running-for-two-hours", "just-begun", "trigger"}


async def test_writing_before_open_is_refused(tmp_path: Path) -> None:
    journal = SqliteJournal(tmp_path / "calls.journal")
    with pytest.raises(RuntimeError, match="not open"):
        journal.ended("x", "success", "{}")
    assert journal.newest() == [] and journal.lookup("x") is None  # no file yet
