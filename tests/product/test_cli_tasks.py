"""``argentic-tools tasks`` over a real call journal, with a real tool process and broker."""

import asyncio
import json
import pathlib
import uuid

import anyio
import pytest

from argentic_tools import Messager, TaskErrorMessage, ToolManager, ToolResult, Topics
from tests.support.brokers import Mosquitto
from tests.support.cli import connection, run_cli
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio


async def test_tasks_lists_shows_waits_for_and_cancels_journaled_calls(
    mosquitto: Mosquitto, tmp_path: pathlib.Path
) -> None:
    prefix = f"c{uuid.uuid4().hex[:10]}"
    topics = Topics.with_prefix(prefix)
    journal = tmp_path / "calls.journal"
    runs = tmp_path / "runs"
    runs.mkdir()
    async with (
        ToolProcess("tests.support.long_proc", mosquitto.url, prefix),
        Messager(mosquitto.url, client_id=f"agent-{prefix}") as messager,
        ToolManager(messager, topics=topics, journal=journal) as manager,
    ):
        await manager.wait_for_tool("counted", timeout=20)
        quick = await manager.execute_tool(
            "counted", {"label": "q", "seconds": 0, "directory": str(runs)}, "quick"
        )
        assert quick.ok
        slow: asyncio.Task[ToolResult] = asyncio.create_task(
            manager.execute_tool(
                "counted", {"label": "s", "seconds": 60, "directory": str(runs)}, "slow", 120
            )
        )
        with anyio.fail_after(20):
            while not (runs / "s.runs").exists():  # the tool is running it
                await anyio.sleep(0.02)

        listed = await run_cli("tasks", "list", "--journal", str(journal), "--json")
        assert listed.returncode == 0, listed.stderr
        by_id = {call["id"]: call for call in json.loads(listed.stdout)}
        assert by_id["quick"]["status"] == "success" and by_id["slow"]["status"] == "running"
        table = await run_cli("tasks", "list", "--journal", str(journal))
        assert b"slow" in table.stdout and b"running" in table.stdout

        shown = await run_cli("tasks", "show", "quick", "--journal", str(journal))
        assert json.loads(shown.stdout)["result"]["result"] == "q"
        still = await run_cli(
            "tasks", "wait", "slow", "--journal", str(journal), "--timeout", "0.3"
        )
        assert still.returncode == 1 and json.loads(still.stdout)["status"] == "running"

        cancelled = await run_cli(
            "tasks", "cancel", "slow", "--journal", str(journal), *connection(mosquitto.url, prefix)
        )
        assert cancelled.returncode == 0, cancelled.stderr
        with anyio.fail_after(20):
            result = await slow
        assert isinstance(result, TaskErrorMessage) and result.error_code == "cancelled"
        waited = await run_cli(
            "tasks", "wait", "slow", "--journal", str(journal), "--timeout", "20"
        )
        assert waited.returncode == 0 and json.loads(waited.stdout)["status"] == "cancelled"

    unknown = await run_cli("tasks", "show", "nobody", "--journal", str(journal))
    assert unknown.returncode != 0 and b"no call 'nobody'" in unknown.stderr
    missing = await run_cli("tasks", "list", "--journal", str(tmp_path / "none"))
    assert missing.returncode != 0 and b"no such file" in missing.stderr
