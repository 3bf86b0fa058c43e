"""``argentic-tools history``: the calls a SqliteRecorder kept, as a table or JSON, filtered."""

import base64
import json
import time
from pathlib import Path

import pytest

from argentic_tools import (
    CallRef,
    ElicitRequest,
    ElicitResult,
    Image,
    ResourceLink,
    SqliteRecorder,
    Text,
    Topics,
)
from tests.support.brokers import Mosquitto
from tests.support.cli import lines, one_error_line, run_installed_cli
from tests.support.clients import manager_with_tools
from tests.support.media_tools import TINY_PNG
from tests.support.observations import EXCHANGES, observation
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio


@pytest.fixture
async def history_file(tmp_path: Path) -> Path:
    path = tmp_path / "calls.db"
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, ended=time.time() - 7200, thread_id="old-thread"))
        recorder.record(observation(2, status="error", error_code="invalid_arguments"))
        recorder.record(observation(3, user_id="reports-bot"))
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
    assert [row["task_id"] for row in json.loads(recent.stdout)] == ["task-3", "task-2"]


async def test_history_filters_by_the_user_a_call_was_made_for(history_file: Path) -> None:
    mine = await run_installed_cli(
        "history", "--history", str(history_file), "--user", "reports-bot", "--json"
    )

    assert mine.returncode == 0, mine.stderr
    (row,) = json.loads(mine.stdout)
    assert row["task_id"] == "task-3" and row["user_id"] == "reports-bot"


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


async def test_history_shows_content_blocks_as_call_prints_them_and_large_data_as_its_size(
    tmp_path: Path,
) -> None:
    path = tmp_path / "media.db"
    mixed = [Text("a chart"), Image(TINY_PNG), ResourceLink("file:///chart.csv", "chart.csv")]
    large = Image(TINY_PNG + bytes(100_000 - len(TINY_PNG)))
    async with SqliteRecorder(path) as recorder:  # a 16 KiB cap
        recorder.record(observation(1, tool_name="mixed", content=[b.wire() for b in mixed]))
        recorder.record(observation(2, tool_name="big_image", content=[large.wire()]))
    table = await run_installed_cli("history", "--history", str(path))
    assert table.returncode == 0, table.stderr
    text = table.stdout.decode()
    assert "Content" in text
    assert f"[image/png, {len(TINY_PNG)} B]" in text  # kept whole: it fits the cap
    assert "[link chart.csv: file:///chart.csv]" in text
    assert "[image/png, 100.0 KB, not kept]" in text  # past the cap: its type and size
    as_json = await run_installed_cli("history", "--history", str(path), "--json")
    calls = {call["tool_name"]: call for call in json.loads(as_json.stdout)}
    assert calls["big_image"]["content"] == [
        {"type": "image", "mimeType": "image/png", "__truncated__": True, "bytes": 100_000}
    ]
    assert calls["mixed"]["content"][1]["data"] == base64.b64encode(TINY_PNG).decode()


async def test_history_shows_one_calls_exchange_with_its_caller_in_order(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, tool_name="pay", exchanges=EXCHANGES))
        recorder.record(observation(2))

    table = await run_installed_cli("history", "--history", str(path))
    one = await run_installed_cli("history", "--history", str(path), "call-1")
    missing = await run_installed_cli("history", "--history", str(path), "task-9")

    assert table.returncode == 0, table.stderr
    assert "4 questions, 1 log record" in table.stdout.decode()
    assert one.returncode == 0, one.stderr
    lines = [line.rstrip() for line in one.stdout.decode().splitlines()]
    start = lines.index("Exchange (4 questions, 1 log record)")
    assert lines[start + 1 :] == [
        "     0.013 s  asked Pay 30 EUR to <b>ACME</b>?",
        "                  fields: confirm",
        '              answered {"confirm": true}',
        "     0.020 s  asked for a completion:",
        "                  user: Summarise the invoice",
        "                  user: [image/png, 3.0 KB, not kept]",
        "              reply from m1: An invoice.",
        "     0.025 s  asked Sure?",
        "              declined",
        "     0.030 s  asked Again?",
        "              no answer: no person",
        '     0.040 s  warning  pay (bank): paid late {"days": 2}',
    ]
    assert "Call to pay: success" in lines[0]
    assert missing.returncode == 2
    assert "no call 'task-9'" in one_error_line(missing)


async def test_history_shows_what_a_real_tool_asked_its_caller_and_logged(
    mosquitto: Mosquitto, prefix: str, topics: Topics, tmp_path: Path
) -> None:
    path = tmp_path / "calls.db"
    logged: list[str] = []

    def yes(request: ElicitRequest, call: CallRef) -> ElicitResult:
        return ElicitResult(action="accept", content={"confirm": True})

    async with (
        ToolProcess("tests.support.asking_tools", mosquitto.url, prefix),
        SqliteRecorder(path) as recorder,
        manager_with_tools(mosquitto.url, topics, ["pay", "chatty"], recorder=recorder) as manager,
    ):
        paid = await manager.execute_tool("pay", {"amount": 5, "to": "Bo"}, on_elicit=yes)
        chatty = await manager.execute_tool(
            "chatty", {"lines": 1}, on_log=lambda record, call: logged.append(record.message)
        )
        await manager.flush_observations()
        await recorder.flush()
    assert paid.ok and chatty.ok, (paid, chatty)
    assert logged == ["detail 0", "halfway there", "almost done"]

    shown = await run_installed_cli("history", "--history", str(path), paid.task_id)
    logs = await run_installed_cli("history", "--history", str(path), chatty.task_id)

    assert shown.returncode == 0, shown.stderr
    text = shown.stdout.decode()
    assert "Exchange (1 question)" in text
    assert "asked Pay 5.00 EUR to Bo?" in text
    assert 'answered {"confirm": true}' in text
    log_lines = [line.split(" s  ", 1)[-1] for line in lines(logs.stdout) if " s  " in line]
    assert log_lines == [
        "debug    chatty: detail 0",
        'info     chatty (chatty): halfway there {"lines": 1}',
        "warning  chatty: almost done",
    ]
