"""``argentic-tools mcp install``: the gateway written into each MCP client's configuration,
run as a subprocess with HOME (and APPDATA, XDG_CONFIG_HOME) in a temporary directory; and
the command it writes, started by the official MCP client, lists a real tool process's
tools from a real mosquitto."""

import json
import os
import pathlib
import shlex
import stat
import subprocess
import sys
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from argentic_tools import ToolManager  # noqa: E402
from tests.support.brokers import Mosquitto, child_env  # noqa: E402
from tests.support.cli import connection, one_error_line, run_cli  # noqa: E402
from tests.support.processes import ToolProcess, ready  # noqa: E402

pytestmark = pytest.mark.anyio

OTHER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}
"""A server the user configured before: it must survive an install."""


def home_env(home: pathlib.Path, path: str | None = None) -> dict[str, str]:
    """Every place a client's user configuration is looked up, inside ``home``."""
    env = {
        "HOME": str(home),
        "APPDATA": str(home / "AppData" / "Roaming"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    if path is not None:
        env["PATH"] = path
    return env


async def install(
    home: pathlib.Path, *args: str, path: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    return await run_cli("mcp", "install", *args, env=home_env(home, path))


def claude_desktop_file(home: pathlib.Path) -> pathlib.Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    return home / ".config" / "Claude" / "claude_desktop_config.json"


def gateway_args(url: str, prefix: str | None = None) -> list[str]:
    serve = ["-m", "argentic_tools", "mcp", "serve", "--broker", url]
    return [*serve, "--topic-prefix", prefix] if prefix else serve


def read(path: pathlib.Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


async def test_claude_desktop_gets_the_gateway_and_keeps_its_other_servers_and_keys(
    tmp_path: pathlib.Path,
) -> None:
    config = claude_desktop_file(tmp_path)
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": {"other": OTHER}, "globalShortcut": "Ctrl+K"}))
    done = await install(
        tmp_path, "claude-desktop", "-e", "TOKEN=s3cret", *connection("mqtt://h:1884", "team1")
    )
    assert done.returncode == 0, done.stderr
    assert str(config) in done.stdout.decode()
    written = read(config)
    assert written["globalShortcut"] == "Ctrl+K"
    assert written["mcpServers"]["other"] == OTHER
    assert written["mcpServers"]["argentic-tools"] == {
        "command": sys.executable,
        "args": gateway_args("mqtt://h:1884", "team1"),
        "env": {"TOKEN": "s3cret"},
    }
    # Again, under the same name: replaced (and said so), not added twice.
    again = await install(tmp_path, "claude-desktop", "--broker", "mqtt://h:1885")
    assert again.returncode == 0, again.stderr
    assert "replaced" in again.stdout.decode()
    servers = read(config)["mcpServers"]
    assert set(servers) == {"other", "argentic-tools"}
    assert servers["argentic-tools"]["args"][-1] == "mqtt://h:1885"


async def test_cursor_writes_the_users_mcp_json_or_a_projects(tmp_path: pathlib.Path) -> None:
    done = await install(tmp_path, "cursor", "--name", "fleet")
    assert done.returncode == 0, done.stderr
    users = read(tmp_path / ".cursor" / "mcp.json")
    assert list(users["mcpServers"]) == ["fleet"]
    assert users["mcpServers"]["fleet"]["command"] == sys.executable
    project = tmp_path / "project"
    (project / ".cursor").mkdir(parents=True)
    (project / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"other": OTHER}}))
    done = await install(tmp_path, "cursor", "--project", str(project))
    assert done.returncode == 0, done.stderr
    servers = read(project / ".cursor" / "mcp.json")["mcpServers"]
    assert servers["other"] == OTHER
    assert servers["argentic-tools"]["args"] == gateway_args("mqtt://127.0.0.1:1883")


async def test_vscode_writes_servers_with_the_stdio_type(tmp_path: pathlib.Path) -> None:
    project = tmp_path / "project"
    (project / ".vscode").mkdir(parents=True)
    other = {"type": "stdio", **OTHER}
    existing: dict[str, Any] = {"inputs": [], "servers": {"other": other}}
    (project / ".vscode" / "mcp.json").write_text(json.dumps(existing))
    done = await install(tmp_path, "vscode", "--project", str(project), "--topic-prefix", "p1")
    assert done.returncode == 0, done.stderr
    written = read(project / ".vscode" / "mcp.json")
    assert written["inputs"] == []
    assert written["servers"]["other"] == other
    assert written["servers"]["argentic-tools"] == {
        "type": "stdio",
        "command": sys.executable,
        "args": gateway_args("mqtt://127.0.0.1:1883", "p1"),
        "env": {},
    }
    user = await install(tmp_path, "vscode", "--user")
    assert user.returncode == 0, user.stderr
    expected = (
        tmp_path / "Library" / "Application Support"
        if sys.platform == "darwin"
        else tmp_path / ".config"
    )
    assert "argentic-tools" in read(expected / "Code" / "User" / "mcp.json")["servers"]


async def test_a_config_that_is_not_plain_json_is_left_alone_with_a_clear_error(
    tmp_path: pathlib.Path,
) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {} // mine\n}')
    failed = await install(tmp_path, "cursor")
    assert failed.returncode == 2
    assert str(config) in one_error_line(failed)
    assert config.read_text() == '{"mcpServers": {} // mine\n}'


async def test_mcp_json_prints_a_config_that_mcp_clients_read(tmp_path: pathlib.Path) -> None:
    done = await install(tmp_path, "mcp-json", "-e", "A=1", *connection("mqtt://h:1", "p"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "mcpServers": {
            "argentic-tools": {
                "command": sys.executable,
                "args": gateway_args("mqtt://h:1", "p"),
                "env": {"A": "1"},
            }
        }
    }
    assert os.listdir(tmp_path) == []  # printed, nothing written


async def test_claude_code_without_claude_on_path_fails_with_the_command_to_run(
    tmp_path: pathlib.Path,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    failed = await install(tmp_path, "claude-code", "--name", "fleet", "-e", "A=1", path=str(empty))
    assert failed.returncode == 2
    line = one_error_line(failed)
    assert "claude" in line and "not on PATH" in line
    command = shlex.split(line.partition("run this where it is: ")[2])
    assert command == [
        "claude", "mcp", "add", "fleet", "-e", "A=1", "--",
        sys.executable, *gateway_args("mqtt://127.0.0.1:1883"),
    ]  # fmt: skip


async def test_claude_code_runs_claude_mcp_add_with_the_gateway(tmp_path: pathlib.Path) -> None:
    # Claude Code itself is not installed here: a `claude` that records its arguments.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorded = tmp_path / "argv.json"
    claude = bin_dir / "claude"
    claude.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(recorded)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
    done = await install(tmp_path, "claude-code", "--topic-prefix", "p", path=str(bin_dir))
    assert done.returncode == 0, done.stderr
    assert json.loads(recorded.read_text()) == [
        "mcp", "add", "argentic-tools", "--",
        sys.executable, *gateway_args("mqtt://127.0.0.1:1883", "p"),
    ]  # fmt: skip


async def test_the_installed_command_serves_the_fleet_to_an_mcp_client(
    mosquitto: Mosquitto,
    prefix: str,
    tool_process: ToolProcess,
    manager: ToolManager,
    tmp_path: pathlib.Path,
) -> None:
    await ready(manager)
    done = await install(tmp_path, "cursor", *connection(mosquitto.url, prefix))
    assert done.returncode == 0, done.stderr
    entry = read(tmp_path / ".cursor" / "mcp.json")["mcpServers"]["argentic-tools"]
    # As a client starts it: from its own directory, with the entry's environment.
    server = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=child_env() | entry["env"], cwd=tmp_path
    )
    with anyio.fail_after(60):
        async with Client(server) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"echo", "sleep"} <= names
            result = await client.call_tool("echo", {"message": "hi"})
            assert not result.is_error, result
