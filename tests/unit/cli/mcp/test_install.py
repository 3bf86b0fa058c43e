"""What ``mcp install`` writes: the merge into a client's file and Claude Code's command."""

from pathlib import Path

import pytest

from argentic_tools.cli.common import CliError
from argentic_tools.cli.mcp.install import StdioServer, claude_code_command, merged

SERVER = StdioServer("/venv/bin/python", ["-m", "argentic_tools", "mcp", "serve"], {"A": "1"})


def test_merging_keeps_other_servers_and_keys_and_says_when_it_replaced_one() -> None:
    config = {"mcpServers": {"other": {"command": "npx"}}, "theme": "dark"}
    entry = SERVER.mcp_servers_entry()
    assert merged(config, "mcpServers", "fleet", entry, Path("c.json")) is False
    assert merged(config, "mcpServers", "fleet", entry, Path("c.json")) is True
    assert config == {"mcpServers": {"other": {"command": "npx"}, "fleet": entry}, "theme": "dark"}
    empty: dict[str, object] = {}
    merged(empty, "servers", "fleet", SERVER.vscode_entry(), Path("mcp.json"))
    assert empty == {"servers": {"fleet": {"type": "stdio", **entry}}}


def test_a_config_of_another_shape_is_refused_naming_the_file() -> None:
    with pytest.raises(CliError, match=r"c\.json: expected a JSON object at the top, found list"):
        merged([], "mcpServers", "fleet", {}, Path("c.json"))
    with pytest.raises(CliError, match=r'c\.json: expected "mcpServers" to be an object'):
        merged({"mcpServers": []}, "mcpServers", "fleet", {}, Path("c.json"))


def test_claude_code_gets_the_env_after_the_name_and_the_command_after_dashes() -> None:
    # Claude Code's --env takes several values: before the name it would swallow it.
    assert claude_code_command("fleet", SERVER) == [
        "claude", "mcp", "add", "fleet", "-e", "A=1", "--",
        "/venv/bin/python", "-m", "argentic_tools", "mcp", "serve",
    ]  # fmt: skip
