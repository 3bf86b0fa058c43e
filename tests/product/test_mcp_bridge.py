"""The bridge facing an MCP server some of whose tools a manager refuses.

A real MCP server process (``tests/support/mcp_server.py``, the official SDK over
stdio) offers two good tools, ``shout`` and ``add``, next to bad ones; the bridge
serves it on a real mosquitto to a real ToolManager. Each refused tool is logged with
the manager's reason and left out, the others are served, and the server is started
once: a refusal is no reason to restart a healthy server.
"""

import json
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from argentic_tools import (
    CallRef,
    ElicitRequest,
    ElicitResult,
    LogRecord,
    ToolManager,
    Topics,
)
from argentic_tools.mcp.bridge import McpBridge
from argentic_tools.mcp.bridge import bridge as bridge_module
from argentic_tools.mcp.bridge.server_process import ServerNotFoundError
from tests.support.brokers import Mosquitto
from tests.support.cli import cli_process, connection, one_error_line, run_cli
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ROOT, ToolProcess

pytestmark = pytest.mark.anyio

SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")


@asynccontextmanager
async def bridged(
    mosquitto: Mosquitto, prefix: str, starts: Path, *options: str
) -> AsyncIterator[McpBridge]:
    """The test MCP server with ``options``, bridged; entered once its tools were offered."""
    command = [sys.executable, SERVER, "--starts", str(starts), *options]
    bridge = McpBridge(mosquitto.url, command=command, topic_prefix=prefix)
    async with anyio.create_task_group() as group:
        with anyio.fail_after(30):
            await group.start(bridge.run)
        yield bridge
        group.cancel_scope.cancel()


async def assert_good_tools_answer(manager: ToolManager) -> None:
    shout = await manager.execute_tool("shout", {"text": "hi"}, timeout=10)
    assert shout.ok, shout
    assert shout.result == "HI"
    add = await manager.execute_tool("add", {"a": 2, "b": 3}, timeout=10)
    assert add.ok, add
    assert add.result == "5"


def refusals(caplog: pytest.LogCaptureFixture) -> dict[str, str]:
    """The tools the bridge's service logged as refused, with the line that says so."""
    lines: dict[str, str] = {}
    for record in caplog.records:
        message = record.getMessage()
        if record.name == "argentic_tools.service" and "is not served" in message:
            lines[message.split("'")[1]] = message
    return lines


def starts_of(starts: Path) -> int:
    return len(starts.read_text().splitlines())


async def test_a_colliding_tool_and_a_huge_schema_are_refused_and_the_good_tools_serve(
    mosquitto: Mosquitto,
    prefix: str,
    manager: ToolManager,
    tool_process: ToolProcess,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A tool process serves `echo` first; the MCP server offers an `echo` of another schema.
    fleet_echo = await manager.wait_for_tool("echo", timeout=15)
    starts = tmp_path / "starts"
    with caplog.at_level(logging.WARNING, logger="argentic_tools.service"):
        async with bridged(mosquitto, prefix, starts, "--collide", "echo", "--huge") as bridge:
            await manager.wait_for_tool("shout", timeout=10)
            await manager.wait_for_tool("add", timeout=10)
            await assert_good_tools_answer(manager)
            assert sorted(bridge.tool_names) == ["add", "shout"]
            assert "huge" not in manager.get_tool_names()
            echoes = [i for i in manager.tools_by_id.values() if i["name"] == "echo"]
            assert [e["id"] for e in echoes] == [fleet_echo.id]
            echo = await manager.execute_tool("echo", {"message": "still the fleet's"})
            assert echo.result == "still the fleet's"
            assert bridge.restarts == 0
    assert starts_of(starts) == 1
    logged = refusals(caplog)
    assert sorted(logged) == ["echo", "huge"]
    assert "different schema" in logged["echo"]
    assert "too large" in logged["huge"]


async def test_tools_past_the_managers_per_client_bound_are_refused_and_the_first_ones_serve(
    mosquitto: Mosquitto,
    prefix: str,
    topics: Topics,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    starts = tmp_path / "starts"
    # shout, add, filler_0 ... filler_5: eight tools for a bound of five.
    fillers: Sequence[str] = ("--fillers", "6")
    with caplog.at_level(logging.WARNING, logger="argentic_tools.service"):
        async with (
            messager_for(mosquitto.url, topics) as messager,
            manager_for(messager, topics, max_tools_per_client=5) as manager,
            bridged(mosquitto, prefix, starts, *fillers) as bridge,
        ):
            served = ["shout", "add", "filler_0", "filler_1", "filler_2"]
            for name in served:
                await manager.wait_for_tool(name, timeout=10)
            await assert_good_tools_answer(manager)
            for name in served[2:]:
                result = await manager.execute_tool(name, {}, timeout=10)
                assert result.result == name
            assert sorted(manager.get_tool_names()) == sorted(served)
            assert bridge.tool_names == served
            assert bridge.restarts == 0
    assert starts_of(starts) == 1
    logged = refusals(caplog)
    assert sorted(logged) == ["filler_3", "filler_4", "filler_5"]
    assert all("max_tools_per_client" in line for line in logged.values())


async def test_a_server_whose_every_tool_is_refused_is_watched_not_restarted(
    mosquitto: Mosquitto,
    prefix: str,
    manager: ToolManager,
    tool_process: ToolProcess,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await manager.wait_for_tool("echo", timeout=15)
    starts = tmp_path / "starts"
    with caplog.at_level(logging.WARNING, logger="argentic_tools.mcp"):
        async with bridged(mosquitto, prefix, starts, "--no-good", "--collide", "echo") as bridge:
            assert bridge.tool_names == []
            assert bridge.restarts == 0
            # The fleet's echo is untouched and answers.
            echo = await manager.execute_tool("echo", {"message": "fleet"})
            assert echo.result == "fleet"
    assert starts_of(starts) == 1
    (line,) = [r.getMessage() for r in caplog.records if "serving none" in r.getMessage()]
    assert "tool 'echo': " in line
    assert "different schema" in line


def stopped_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "stopped:" in r.getMessage()]


async def test_a_server_reading_a_token_gets_it_with_env_and_without_it_the_log_says_why(
    mosquitto: Mosquitto,
    prefix: str,
    manager: ToolManager,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    command = [sys.executable, SERVER, "--require-env", "ARGENTIC_TEST_TOKEN"]
    # Without the variable the server exits at once, and the log says how and why.
    bridge = McpBridge(mosquitto.url, command=command, topic_prefix=prefix)
    with caplog.at_level(logging.WARNING, logger="argentic_tools.mcp"):
        async with anyio.create_task_group() as group:
            group.start_soon(bridge.run)
            with anyio.fail_after(15):
                while not stopped_lines(caplog):
                    await anyio.sleep(0.02)
            group.cancel_scope.cancel()
    line = stopped_lines(caplog)[0]
    assert "exited with status 3" in line
    assert "ARGENTIC_TEST_TOKEN is not set" in line  # its last stderr line
    assert "-e KEY=VALUE" in line
    assert "TaskGroup" not in line
    # With it, the server starts and its tools see it.
    bridge = McpBridge(
        mosquitto.url, command=command, env={"ARGENTIC_TEST_TOKEN": "!"}, topic_prefix=prefix
    )
    async with anyio.create_task_group() as group:
        with anyio.fail_after(30):
            await group.start(bridge.run)
        shout = await manager.execute_tool("shout", {"text": "hi"}, timeout=10)
        assert shout.result == "HI!"
        group.cancel_scope.cancel()


async def test_a_command_that_cannot_run_fails_at_once_naming_it(
    mosquitto: Mosquitto, prefix: str
) -> None:
    bridge = McpBridge(
        mosquitto.url, command=["argentic-no-such-mcp-server", "--flag"], topic_prefix=prefix
    )
    with anyio.fail_after(15), pytest.raises(ServerNotFoundError) as raised:
        await bridge.run()
    assert str(raised.value).startswith("cannot start the MCP server 'argentic-no-such-mcp-server'")
    assert bridge.restarts == 0


async def test_a_server_declaring_list_changed_is_listed_again_on_its_notification_only(
    mosquitto: Mosquitto,
    prefix: str,
    manager: ToolManager,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Were it polled, it would be listed again and again between the calls below.
    # (No raising=False: were the setting renamed, this would patch nothing and pass.)
    monkeypatch.setattr(bridge_module, "POLL_SECONDS", 0.001)
    starts, lists = tmp_path / "starts", tmp_path / "lists"
    async with bridged(mosquitto, prefix, starts, "--list-changed", "--lists", str(lists)):
        await assert_good_tools_answer(manager)
        grow = await manager.execute_tool("grow", {}, timeout=10)
        assert grow.result == "grown"
        await manager.wait_for_tool("grown", timeout=10)
        await assert_good_tools_answer(manager)
        # The first listing, and the one the notification asked for.
        assert starts_of(lists) == 2


async def test_a_server_without_list_changed_is_polled(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager, tmp_path: Path
) -> None:
    async with bridged(mosquitto, prefix, tmp_path / "starts", "--grow") as bridge:
        await manager.execute_tool("grow", {}, timeout=10)
        await manager.wait_for_tool("grown", timeout=10)
        assert bridge.restarts == 0


async def test_the_cli_fails_at_once_on_a_mistyped_server_command(
    mosquitto: Mosquitto, prefix: str
) -> None:
    bridge = cli_args(mosquitto, prefix, "--", "argentic-no-such-mcp-server", "--flag")
    completed = await run_cli(*bridge)
    assert completed.returncode == 2
    line = one_error_line(completed)
    assert line == "error: cannot start the MCP server 'argentic-no-such-mcp-server': " + (
        "No such file or directory"
    )


def cli_args(mosquitto: Mosquitto, prefix: str, *options: str) -> list[str]:
    return ["mcp", "bridge", *connection(mosquitto.url, prefix), *options]


async def test_the_cli_bridges_a_server_from_an_mcp_servers_config_with_env(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager, tmp_path: Path
) -> None:
    # The format of Claude Desktop's and the MCP Inspector's config files.
    config = tmp_path / "mcp.json"
    server = {
        "command": sys.executable,
        "args": [SERVER, "--require-env", "ARGENTIC_TEST_TOKEN"],
        "env": {"ARGENTIC_TEST_TOKEN": "?"},
    }
    other = {"command": "never-started"}
    config.write_text(json.dumps({"mcpServers": {"other": other, "test": server}}))
    options = ["--config", str(config), "--server", "test"]
    async with cli_process(*cli_args(mosquitto, prefix, *options)):
        first = await manager.wait_for_tool("shout", timeout=30)
        shout = await manager.execute_tool("shout", {"text": "hi"}, timeout=10)
        assert shout.result == "HI?"
    await manager.wait_for_tool_removed(first.id, timeout=15)
    # -e KEY=VALUE sets a variable too, over the file's.
    async with cli_process(*cli_args(mosquitto, prefix, *options, "-e", "ARGENTIC_TEST_TOKEN=!")):
        await manager.wait_for_tool("shout", timeout=30)
        shout = await manager.execute_tool("shout", {"text": "hi"}, timeout=10)
        assert shout.result == "HI!"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--server", "test"], "error: --config FILE is where --server NAME picks a server"),
        (["--config", "{config}"], "has several servers: choose one with --server NAME"),
        (["--config", "{config}", "--server", "nope"], "no server 'nope' (it has one, two)"),
        (["-e", "TOKEN", "--", "x"], "error: -e 'TOKEN': expected KEY=VALUE"),
        (
            ["--root", "https://example.com/a", "--", "x"],
            "error: --root 'https://example.com/a': a root is a path or a file:// URI",
        ),
    ],
)
async def test_the_cli_says_what_is_wrong_with_a_config_or_env_option(
    mosquitto: Mosquitto, prefix: str, tmp_path: Path, options: list[str], expected: str
) -> None:
    config = tmp_path / "mcp.json"
    servers = {"one": {"command": "a"}, "two": {"command": "b"}}
    config.write_text(json.dumps({"mcpServers": servers}))
    completed = await run_cli(
        *cli_args(mosquitto, prefix, *(o.format(config=config) for o in options))
    )
    assert completed.returncode == 2
    assert expected in one_error_line(completed)


async def test_a_2026_server_logs_during_a_call_to_that_calls_caller(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager, tmp_path: Path
) -> None:
    # A 2026-07-28 server over stdio, its tool list followed by a subscription that stays
    # open: the record its call sends still reaches the caller of that call.
    records: list[tuple[LogRecord, CallRef]] = []
    logged = anyio.Event()

    def on_log(record: LogRecord, call: CallRef) -> None:
        records.append((record, call))
        logged.set()

    async with bridged(mosquitto, prefix, tmp_path / "starts", "--chatty", "--list-changed"):
        await manager.wait_for_tool("chatty", timeout=30)
        result = await manager.execute_tool("chatty", {}, on_log=on_log, timeout=10)
        assert result.ok, result
        with anyio.fail_after(10):
            while not records:
                await anyio.sleep(0.01)
    ((record, call),) = records
    assert (record.level, record.message, record.logger) == ("info", "chatty says hi", "chatty")
    assert call.tool_name == "chatty"


async def test_a_2026_servers_input_required_question_reaches_the_caller_of_the_call(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager, tmp_path: Path
) -> None:
    asked: list[tuple[ElicitRequest, CallRef]] = []

    def on_elicit(request: ElicitRequest, call: CallRef) -> ElicitResult:
        asked.append((request, call))
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with bridged(mosquitto, prefix, tmp_path / "starts", "--asking"):
        await manager.wait_for_tool("ask_name", timeout=30)
        greeted = await manager.execute_tool("ask_name", {}, on_elicit=on_elicit, timeout=10)
        unanswered = await manager.execute_tool("ask_name", {}, timeout=10)
    assert greeted.ok, greeted
    assert greeted.result == "hello Ada"
    ((request, call),) = asked
    assert request.message == "Your name?"
    assert call.tool_name == "ask_name"
    assert not unanswered.ok
    assert "cannot answer elicitation requests" in str(unanswered.error)
