"""SqliteRecorder alone: retention, queries, the caps on what it stores, and the event loop
it must never stall."""

import contextlib
import gc
import json
import logging
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from argentic_tools import Annotations, EmbeddedResource, Image, SqliteRecorder, Text
from argentic_tools._agent.records import calls_table, history
from tests.support.observations import observation

pytestmark = pytest.mark.anyio


TIMEOUT = 60
"""Bound on any one wait: generous, since CI machines are slow."""

HISTORY_LOGGER = "argentic_tools.history"


async def test_calls_older_than_max_age_are_deleted(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    now = time.time()
    async with SqliteRecorder(path, max_age_seconds=3600) as recorder:
        for number in range(200):
            # Every other one ended two days ago; the rest just now.
            recorder.record(observation(number, ended=now - 2 * 86400 if number % 2 else now))

    kept = SqliteRecorder(path).query(limit=None)

    assert sorted(row.task_id for row in kept) == sorted(f"task-{n}" for n in range(0, 200, 2))


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
        assert ids(call="task-2") == ids(call="call-2") == ["task-2"]
        assert recorder.query(outcome="error")[0].error == "boom"
        with pytest.raises(TypeError, match="'tol'"):
            recorder.query(tol="a")  # type: ignore[call-arg]


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


async def test_content_blocks_are_kept_and_their_largest_binary_data_elided_past_the_cap(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    small = [Image(b"\x89PNG\r\n\x1a\n").wire(), Text("a caption").wire()]
    large = [
        Text("two pictures").wire(),
        Image(b"\x89PNG\r\n\x1a\n" + b"\x00" * 3000, annotations=Annotations(priority=1)).wire(),
        EmbeddedResource("file:///a.bin", blob=b"\x01" * 200).wire(),
    ]
    async with SqliteRecorder(path, max_argument_bytes=1024) as recorder:
        recorder.record(observation(1, content=small))
        recorder.record(observation(2, content=large))
        recorder.record(observation(3))

    rows = {row.task_id: row for row in SqliteRecorder(path).query()}
    assert rows["task-1"].content == small
    text, image, resource = rows["task-2"].content or []
    assert text == large[0]
    assert image == {
        "type": "image",
        "mimeType": "image/png",
        "annotations": {"priority": 1.0},
        "__truncated__": True,
        "bytes": 3008,
    }
    assert resource == large[2]  # the smaller data fits once the image's is gone
    assert rows["task-3"].content is None


ELICIT: dict[str, Any] = {
    "kind": "elicit",
    "at_ms": 1.5,
    "ask_id": "a1",
    "request": {"message": "Pay 30 EUR?", "requestedSchema": {"type": "object"}},
    "answer": {"action": "accept", "content": {"confirm": True}},
}
LOG: dict[str, Any] = {
    "kind": "log",
    "at_ms": 2.0,
    "record": {"level": "info", "message": "paid", "data": None, "logger": None},
}


async def test_a_calls_exchanges_are_kept_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, exchanges=[ELICIT, LOG]))
        recorder.record(observation(2))

    rows = {row.task_id: row for row in SqliteRecorder(path).query()}
    assert rows["task-1"].exchanges == [ELICIT, LOG]
    assert rows["task-2"].exchanges is None


async def test_exchanges_past_the_cap_lose_binary_data_long_texts_then_the_last_ones(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    image = Image(b"\x89PNG\r\n\x1a\n" + b"x" * 3000).wire()
    sample = {
        "kind": "sample",
        "at_ms": 1.0,
        "ask_id": "s1",
        "request": {"messages": [{"role": "user", "content": image}], "maxTokens": 10},
        "answer": {"role": "assistant", "content": {"type": "text", "text": "y" * 5000}},
    }
    many = [{**LOG, "record": {**LOG["record"], "message": f"line {n}"}} for n in range(100)]
    async with SqliteRecorder(path, max_argument_bytes=2048) as recorder:
        recorder.record(observation(1, exchanges=[sample, *many]))

    (row,) = SqliteRecorder(path).query()
    exchanges = row.exchanges or []
    assert len(json.dumps(exchanges, ensure_ascii=False, separators=(",", ":"))) <= 2048
    kept_image = exchanges[0]["request"]["messages"][0]["content"]
    assert kept_image["__truncated__"] is True and "data" not in kept_image
    reply = exchanges[0]["answer"]["content"]["text"]
    assert reply.startswith("yyy") and reply.endswith("[cut: 5000 bytes]")
    kept_lines = [e["record"]["message"] for e in exchanges[1:-1]]
    assert kept_lines == [f"line {n}" for n in range(len(kept_lines))]
    assert 0 < len(kept_lines) < 100
    last = exchanges[-1]["record"]
    assert last["level"] == "warning"
    assert (
        last["message"]
        == f"{100 - len(kept_lines)} more exchanges not kept (the history's size cap)"
    )


def old_history(path: Path, columns_added_since: str, column: str, value: str) -> None:
    """A history as an older version wrote it: without ``columns_added_since``, one call."""
    old_schema = calls_table.SCHEMA.replace(columns_added_since, "")
    assert old_schema != calls_table.SCHEMA
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.executescript(old_schema)
        connection.execute(
            "INSERT INTO calls (task_id, tool_name, status, duration_ms, started_at, ended_at, "
            f"{column}) VALUES ('old', 'a', 'success', 1, ?, ?, ?)",
            (time.time(), time.time(), value),
        )


async def test_a_history_written_before_content_blocks_is_read_and_extended(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    old_history(path, ",\n    content TEXT,\n    exchanges TEXT", "result", "5")
    (old,) = SqliteRecorder(path).query()
    assert (old.result, old.content) == (5, None)
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, content=[Text("new").wire()], exchanges=[LOG]))
    new, old = SqliteRecorder(path).query()
    assert new.content == [{"type": "text", "text": "new"}]
    assert (new.exchanges, old.exchanges) == ([LOG], None)


async def test_a_history_written_before_exchanges_is_read_and_extended(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    old_history(path, ",\n    exchanges TEXT", "content", "[]")
    (old,) = SqliteRecorder(path).query()
    assert (old.content, old.exchanges) == ([], None)
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, exchanges=[ELICIT]))
    new, _ = SqliteRecorder(path).query()
    assert new.exchanges == [ELICIT]


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


@contextlib.contextmanager
def inserts_refused(path: Path) -> Iterator[None]:
    """Every insert into the history at ``path`` fails while the block runs.

    A file made read-only with chmod would not do: root writes it anyway, and a
    connection opened before keeps writing it whoever runs. A trigger added by a second
    connection makes the recorder's own transactions fail with an ``sqlite3.Error``
    (the error a read-only or full file gives too), for any user, and dropping it
    lets them succeed again.
    """
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON calls "
            "BEGIN SELECT RAISE(ABORT, 'inserts refused by the test'); END"
        )
        try:
            yield
        finally:
            other.execute("DROP TRIGGER refuse")


def history_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == HISTORY_LOGGER]
    caplog.clear()
    return lines


async def test_a_history_that_cannot_be_written_logs_the_first_failure_then_its_recovery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "calls.db"
    caplog.set_level(logging.INFO, logger=HISTORY_LOGGER)
    # A batch waits for its flush (a minute at most), so each flush makes one batch.
    async with SqliteRecorder(path, flush_interval=TIMEOUT) as recorder:
        with inserts_refused(path):
            for number in range(40):
                recorder.record(observation(2 * number))
                recorder.record(observation(2 * number + 1))
                with anyio.fail_after(TIMEOUT):
                    await recorder.flush()  # ends the batch: 40 batches fail

            failing = history_lines(caplog)
            assert recorder.dropped == 80
            assert len(failing) == 1
            level, message = failing[0]
            assert level == logging.ERROR
            assert message.startswith(f"2 calls could not be written to {path}: ")
            assert "inserts refused by the test" in message

        recorder.record(observation(100))
        with anyio.fail_after(TIMEOUT):
            await recorder.flush()
        recovered = history_lines(caplog)
        assert len(recovered) == 1
        level, message = recovered[0]
        assert level == logging.WARNING
        assert f"the call history at {path} is written again; 80 calls in 40 batches" in message

        # A new failure is news again.
        with inserts_refused(path):
            recorder.record(observation(101))
            with anyio.fail_after(TIMEOUT):
                await recorder.flush()
        assert [level for level, _ in history_lines(caplog)] == [logging.ERROR]

    assert [row.task_id for row in recorder.query()] == ["task-100"]
    assert history_lines(caplog)[0][1].startswith(
        f"the call history at {path} was closed before writing worked again; 1 call in 1 batch"
    )


async def test_a_history_that_stays_unwritable_is_recalled_with_the_count_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "calls.db"
    monkeypatch.setattr(history, "FAILURE_REPORT_SECONDS", 0.0)  # a reminder each time
    caplog.set_level(logging.INFO, logger=HISTORY_LOGGER)
    async with SqliteRecorder(path, flush_interval=TIMEOUT) as recorder:
        with inserts_refused(path):
            for number in range(3):
                recorder.record(observation(number))
                with anyio.fail_after(TIMEOUT):
                    await recorder.flush()
            lines = history_lines(caplog)

    assert [level for level, _ in lines] == [logging.ERROR] * 3
    assert lines[2][1].startswith(
        f"the call history at {path} still cannot be written (inserts refused by the test): "
        "3 calls in 3 batches over "
    )
