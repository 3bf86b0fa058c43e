"""``argentic-tools serve --reload``: a tool file edited while it is served, on a real broker."""

import signal
from pathlib import Path

import anyio
import pytest

from argentic_tools import ToolManager
from tests.support.brokers import Mosquitto
from tests.support.cli import (
    TIMEOUT,
    cli_process,
    connection,
    lines,
    processes_mentioning,
    read_rest,
    read_until,
)

pytestmark = pytest.mark.anyio

VERSION_1 = '''
from argentic_tools import tool


@tool
def version() -> int:
    """The version of this file."""
    return 1
'''

VERSION_2 = '''
from argentic_tools import tool


@tool
def version() -> int:
    """The version of this file."""
    return 2


@tool
def added() -> str:
    """A tool the second version brings."""
    return "new"
'''

BROKEN = "from argentic_tools import tool\n\ndef version(:\n"

FIXED = '''
from argentic_tools import tool


@tool
def fixed() -> str:
    """A tool the repaired file brings."""
    return "fixed"
'''


def tool_file(directory: Path) -> Path:
    path = directory / "my_tools.py"
    path.write_text(VERSION_1)
    return path


async def test_serve_reload_serves_the_edited_file_without_a_restart(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    path = tool_file(tmp_path)
    async with cli_process("serve", str(path), "--reload", *connection(mosquitto.url, prefix)):
        first = await manager.wait_for_tool("version", timeout=TIMEOUT)
        before = await manager.execute_tool("version", {}, timeout=10)
        path.write_text(VERSION_2)
        # The old process unregisters before the new one starts: once the new tool is
        # registered, "version" is the new one too.
        await manager.wait_for_tool("added", timeout=TIMEOUT)
        await manager.wait_for_tool_removed(first.id, timeout=TIMEOUT)
        after = await manager.execute_tool("version", {}, timeout=10)
        added = await manager.execute_tool("added", {}, timeout=10)
    assert before.result == 1
    assert after.result == 2
    assert added.result == "new"


async def test_serve_reload_logs_a_broken_edit_in_one_line_and_serves_the_fix(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    path = tool_file(tmp_path)
    args = ("serve", str(path), "--reload", *connection(mosquitto.url, prefix))
    async with cli_process(*args) as process:
        assert process.stderr is not None
        first = await manager.wait_for_tool("version", timeout=TIMEOUT)
        path.write_text(BROKEN)
        await manager.wait_for_tool_removed(first.id, timeout=TIMEOUT)
        seen = await read_until(process.stderr, b"error: ")
        seen += await read_until(process.stderr, b"\n")
        path.write_text(FIXED)
        await manager.wait_for_tool("fixed", timeout=TIMEOUT)
        result = await manager.execute_tool("fixed", {}, timeout=10)
        still_running = process.returncode is None
    errors = [line for line in lines(seen) if "error:" in line]
    assert len(errors) == 1, errors
    assert errors[0].startswith("error: importing")
    assert "SyntaxError" in errors[0]
    assert "Traceback" not in seen.decode()
    assert still_running
    assert result.result == "fixed"


async def test_sigint_stops_serve_reload_and_its_child_process(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    path = tool_file(tmp_path)
    args = ("serve", str(path), "--reload", *connection(mosquitto.url, prefix))
    async with cli_process(*args) as process:
        info = await manager.wait_for_tool("version", timeout=TIMEOUT)
        serving = processes_mentioning(prefix)
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(TIMEOUT):
            status = await process.wait()
        errors = lines(await read_rest(process.stderr))
        # The child said goodbye: the manager drops its tool without a Last Will.
        await manager.wait_for_tool_removed(info.id, timeout=10)
    assert len(serving) == 2  # the reloader and the child serving the tools
    assert status == 130
    assert errors[-1] == "interrupted"
    assert not any("Traceback" in line for line in errors)
    assert processes_mentioning(prefix) == []


async def test_a_child_whose_reloader_is_killed_unregisters_and_exits(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    path = tool_file(tmp_path)
    args = ("serve", str(path), "--reload", *connection(mosquitto.url, prefix))
    async with cli_process(*args) as process:
        info = await manager.wait_for_tool("version", timeout=TIMEOUT)
        process.kill()  # no chance to stop the child: its stdin pipe closes
        await manager.wait_for_tool_removed(info.id, timeout=TIMEOUT)
    # The child unregistered just before exiting: bounded polling of /proc for its end.
    with anyio.fail_after(TIMEOUT):
        while processes_mentioning(prefix):
            await anyio.sleep(0.05)
