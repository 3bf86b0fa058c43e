"""``argentic-tools history``: the calls a SqliteRecorder kept, as a table or JSON, filtered."""

import json
import time
from pathlib import Path

import pytest

from argentic_tools import SqliteRecorder
from tests.support.cli import one_error_line, run_installed_cli
from tests.support.observations import observation

pytestmark = pytest.mark.anyio


@pytest.fixture
async def history_file(tmp_path: Path) -> Path:
    path = tmp_path / "calls.db"
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, ended=time.time() - 7200, thread_id="old-thread"))
        recorder.record(observation(2, status="error", error_code="invalid_arguments"))
    return path


async def test_history_prints_a_table_of_the_calls_newest_first(history_file: Path) -> None:
    completed = await run_installed_cli("history", "--history", str(history_file))

    assert completed.returncode == 0, completed.stderr
    table = completed.stdout.decode()
    assert table.index("task-2") < table.index("task-1")
    assert "invalid_arguments" in table
    assert "old-thread" in table


async def test_history_filters_by_outcome_and_since(history_file: Path) -> None:
    failed = await run_installed_cli(
        "history", "--history", str(history_file), "--outcome", "error", "--json"
    )
    recent = await run_installed_cli(
        "history", "--history", str(history_file), "--since", "1h", "--json"
    )

    assert [row["task_id"] for row in json.loads(failed.stdout)] == ["task-2"]
    assert [row["task_id"] for row in json.loads(recent.stdout)] == ["task-2"]


async def test_history_of_a_missing_file_exits_2_with_one_line(tmp_path: Path) -> None:
    completed = await run_installed_cli("history", "--history", str(tmp_path / "nothing.db"))

    assert completed.returncode == 2
    assert "no such file" in one_error_line(completed)


async def test_history_with_an_unreadable_time_exits_2_with_one_line(history_file: Path) -> None:
    completed = await run_installed_cli(
        "history", "--history", str(history_file), "--since", "last week"
    )

    assert completed.returncode == 2
    assert "--since 'last week'" in one_error_line(completed)


async def test_history_of_a_file_that_is_not_a_history_exits_2_with_one_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n" * 100)

    completed = await run_installed_cli("history", "--history", str(path))

    assert completed.returncode == 2
    assert "cannot be read as a call history" in one_error_line(completed)
