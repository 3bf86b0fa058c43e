"""``argentic-tools list`` and ``call`` against an MCP server directly, as subprocesses.

Two real servers: ``tests/support/mcp_server.py`` (the official SDK over stdio, given
with ``--mcp-command`` or ``--config``) and the project's own gateway serving a fleet
over streamable HTTP (given with ``--mcp URL``), on a real mosquitto and tool process.
"""

import json
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from tests.support.brokers import Mosquitto
from tests.support.cli import lines, one_error_line, run_cli
from tests.support.gateways import http_gateway
from tests.support.processes import ROOT, ToolProcess

pytestmark = pytest.mark.anyio

SERVER = shlex.join([sys.executable, str(ROOT / "tests" / "support" / "mcp_server.py")])


async def test_list_shows_a_stdio_servers_tools_as_a_table_and_as_json() -> None:
    completed = await run_cli("list", "--json", "--mcp-command", SERVER)
    assert completed.returncode == 0, completed.stderr
    rows = json.loads(completed.stdout)
    assert [row["name"] for row in rows] == ["add", "shout"]
    assert rows[1] == {
        "name": "shout",
        "description": "Return the text in capitals.",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }
    table = await run_cli("list", "--mcp-command", SERVER)
    assert table.returncode == 0, table.stderr
    text = table.stdout.decode()
    assert "2 tool(s) on the MCP server" in text
    assert "a: integer, b: integer" in text
    assert "Return the text in capitals." in text


async def test_call_types_pairs_by_the_servers_schema_and_prints_text_as_text() -> None:
    added = await run_cli("call", "add", "a=2", "b=40", "--mcp-command", SERVER)
    assert added.returncode == 0, added.stderr
    assert added.stdout == b"42\n"  # integers by the schema: the server adds, not concatenates
    shouted = await run_cli("call", "shout", '{"text": "hi"}', "--mcp-command", SERVER)
    assert (shouted.returncode, shouted.stdout) == (0, b"HI\n")
    as_json = await run_cli("call", "shout", "text=42", "--json", "--mcp-command", SERVER)
    assert json.loads(as_json.stdout) == {"result": "42"}  # a string by the schema


async def test_call_of_an_error_result_exits_1_with_one_line() -> None:
    completed = await run_cli("call", "fail", "--mcp-command", f"{SERVER} --failing")
    assert completed.returncode == 1
    assert one_error_line(completed) == "error: tool 'fail' failed: it failed on purpose"
    assert completed.stdout == b""


async def test_call_of_an_unknown_tool_exits_1_naming_the_closest() -> None:
    completed = await run_cli("call", "shuot", "text=hi", "--mcp-command", SERVER)
    assert completed.returncode == 1
    assert "Did you mean 'shout'?" in one_error_line(completed)


async def test_call_with_plain_words_suggests_them_from_the_servers_schema() -> None:
    completed = await run_cli("call", "shout", "hello", "--mcp-command", SERVER)
    assert completed.returncode == 2
    assert "try: argentic-tools call shout text=hello" in one_error_line(completed)


async def test_args_that_are_not_an_object_fail_before_the_server_is_started() -> None:
    completed = await run_cli("call", "add", "[1]", "--mcp-command", "argentic-no-such-server")
    assert completed.returncode == 2
    assert "must be a JSON object of arguments" in one_error_line(completed)


async def test_the_server_gets_env_from_e_or_a_config_file_and_says_when_it_lacks_it(
    tmp_path: Path,
) -> None:
    command = f"{SERVER} --require-env ARGENTIC_TEST_TOKEN"
    given = await run_cli(
        "call", "shout", "text=hi", "--mcp-command", command, "-e", "ARGENTIC_TEST_TOKEN=!"
    )
    assert (given.returncode, given.stdout) == (0, b"HI!\n"), given.stderr
    missing = await run_cli("list", "--mcp-command", command)
    assert missing.returncode == 2
    error = lines(missing.stderr)[-1]
    assert "exited with status 3" in error
    assert "ARGENTIC_TEST_TOKEN is not set" in error
    assert "-e KEY=VALUE" in error
    config = tmp_path / "mcp.json"
    server = {
        "command": sys.executable,
        "args": [
            str(ROOT / "tests" / "support" / "mcp_server.py"),
            "--require-env",
            "ARGENTIC_TEST_TOKEN",
        ],
        "env": {"ARGENTIC_TEST_TOKEN": "?"},
    }
    config.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}, "test": server}}))
    from_file = await run_cli(
        "call", "shout", "text=hi", "--config", str(config), "--server", "test"
    )
    assert (from_file.returncode, from_file.stdout) == (0, b"HI?\n"), from_file.stderr


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--mcp-command", "argentic-no-such-server"], "cannot start the MCP server"),
        (["--mcp", "http://127.0.0.1:9/mcp"], "cannot reach the MCP server"),
        (["--mcp", "127.0.0.1:8000"], "expected an http:// or https:// URL"),
        (["--mcp", "http://x/mcp", "--mcp-command", "x"], "give the MCP server as --mcp URL"),
        (["--mcp", "http://x/mcp", "-e", "A=1"], "-e KEY=VALUE is for a server started"),
        (["-e", "A=1"], "-e KEY=VALUE is for an MCP server given with --mcp-command"),
    ],
)
async def test_a_server_that_cannot_be_reached_or_is_given_wrong_exits_2_with_one_line(
    options: list[str], expected: str
) -> None:
    completed = await run_cli("list", *options)
    assert completed.returncode == 2
    assert expected in one_error_line(completed)


@pytest.fixture
def long_tools(mosquitto: Mosquitto, prefix: str) -> Iterator[ToolProcess]:
    with ToolProcess("tests.support.long_proc", mosquitto.url, prefix) as process:
        process.wait_registered(mosquitto.url, prefix, ("steps",))
        yield process


async def test_list_and_call_reach_a_streamable_http_server(
    mosquitto: Mosquitto, prefix: str, long_tools: ToolProcess
) -> None:
    # The project's gateway is a real streamable HTTP MCP server.
    async with http_gateway(mosquitto.url, prefix) as (url, _):
        listed = await run_cli("list", "--json", "--mcp", url)
        assert listed.returncode == 0, listed.stderr
        steps = next(row for row in json.loads(listed.stdout) if row["name"] == "steps")
        assert steps["input_schema"]["required"] == ["count", "interval"]
        called = await run_cli("call", "steps", "count=2", "interval=0", "--mcp", url)
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout) == {"result": 2}  # structured content, as JSON


async def test_the_readmes_call_of_an_mcp_server_runs_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    (line,) = re.findall(r"^argentic-tools (call .* --mcp-command .*)$", readme, flags=re.M)
    argv = shlex.split(line)
    server = argv.index("--mcp-command") + 1
    argv[server] = re.sub(r"^python ", f"{shlex.quote(sys.executable)} ", argv[server])
    completed = await run_cli(*argv)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["timezone"] == "UTC"  # structured content, as JSON
