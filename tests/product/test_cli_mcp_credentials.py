"""``list --mcp``, ``call --mcp`` and ``mcp bridge --url`` with credentials, as subprocesses.

A real gateway (``mcp serve --http --auth keys FILE``) on a real mosquitto serves a tool
process's ``steps``; the CLI reaches it with ``--token``, with the token in
``ARGENTIC_TOOLS_MCP_TOKEN``, with ``--header`` or with a config file's ``headers``, and
is refused without them. The key never shows in what the CLI prints.
"""

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

from tests.support.brokers import Mosquitto, free_port
from tests.support.cli import cli_process, connection, one_error_line, run_cli
from tests.support.gateways import http_gateway
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio

TOKEN_ENV = "ARGENTIC_TOOLS_MCP_TOKEN"


@pytest.fixture
def long_tools(mosquitto: Mosquitto, prefix: str) -> Iterator[ToolProcess]:
    with ToolProcess("tests.support.long_proc", mosquitto.url, prefix) as process:
        process.wait_registered(mosquitto.url, prefix, ("steps",))
        yield process


@pytest.fixture
async def keyed_gateway(
    mosquitto: Mosquitto, prefix: str, long_tools: ToolProcess, tmp_path: Path
) -> AsyncIterator[tuple[str, str]]:
    """A gateway that wants an API key; yields its URL and a key it accepts."""
    keys = tmp_path / "keys.toml"
    made = await run_cli("mcp", "keys", "--file", str(keys), "--subject", "ci", "--scope", "mcp")
    assert made.returncode == 0, made.stderr
    key = made.stdout.decode().strip()
    # A port of its own: a gateway with --auth names its URL (port 0 would need --resource).
    options = ("--http", f"127.0.0.1:{free_port()}", "--auth", "keys", str(keys), "--scope", "mcp")
    async with http_gateway(mosquitto.url, prefix, *options) as (url, _):
        yield url, key


async def test_list_and_call_reach_an_auth_keys_gateway_with_token_or_the_variable(
    keyed_gateway: tuple[str, str],
) -> None:
    url, key = keyed_gateway
    listed = await run_cli("list", "--json", "--mcp", url, "--token", key)
    assert listed.returncode == 0, listed.stderr
    assert "steps" in [row["name"] for row in json.loads(listed.stdout)]
    called = await run_cli(
        "call", "steps", "count=2", "interval=0", "--mcp", url, env={TOKEN_ENV: key}
    )
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == {"result": 2}
    listed = await run_cli("list", "--mcp", url, env={TOKEN_ENV: key})
    assert listed.returncode == 0, listed.stderr
    assert "steps" in listed.stdout.decode()


async def test_list_and_call_without_or_with_a_wrong_key_are_refused_in_one_line(
    keyed_gateway: tuple[str, str],
) -> None:
    url, key = keyed_gateway
    for args in (
        ("list", "--mcp", url),
        ("call", "steps", "count=1", "interval=0", "--mcp", url),
        ("list", "--mcp", url, "--token", "atk_made-up"),
    ):
        completed = await run_cli(*args, env={TOKEN_ENV: ""})
        assert completed.returncode == 2
        error = one_error_line(completed)
        assert "HTTP 401 Unauthorized" in error
        assert "atk_made-up" not in error and key not in error


async def test_a_header_option_or_a_config_files_headers_carry_the_key(
    keyed_gateway: tuple[str, str], tmp_path: Path
) -> None:
    url, key = keyed_gateway
    listed = await run_cli(
        "list", "--json", "--mcp", url, "--header", f"Authorization: Bearer {key}"
    )
    assert listed.returncode == 0, listed.stderr
    config = tmp_path / "servers.json"
    entry = {"url": url, "headers": {"Authorization": f"Bearer {key}"}}
    config.write_text(json.dumps({"mcpServers": {"fleet": entry}}), encoding="utf-8")
    called = await run_cli("call", "steps", "count=3", "interval=0", "--config", str(config))
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == {"result": 3}


async def test_mcp_bridge_url_with_a_header_bridges_the_gateways_tools_onto_another_prefix(
    mosquitto: Mosquitto, keyed_gateway: tuple[str, str], prefix: str
) -> None:
    url, key = keyed_gateway
    other = f"{prefix}-bridged"
    bridge = ("mcp", "bridge", *connection(mosquitto.url, other))
    async with cli_process(*bridge, "--url", url, "--header", f"Authorization: Bearer {key}"):
        listed = await run_cli(
            "list", "--json", *connection(mosquitto.url, other), "--wait", "20", "--expect", "steps"
        )
        assert listed.returncode == 0, listed.stderr
        assert "steps" in [row["name"] for row in json.loads(listed.stdout)]
        called = await run_cli(
            "call", "steps", "count=2", "interval=0", *connection(mosquitto.url, other)
        )
        assert called.returncode == 0, called.stderr
        assert '"result": 2' in called.stdout.decode()  # the gateway's structured result


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            ["--mcp", "http://127.0.0.1:9/mcp", "--header", "Authorization Bearer s3cret"],
            "--header 'Authorization ...': expected NAME: VALUE",
        ),
        (["--mcp", "http://127.0.0.1:9/mcp", "--header", ": s3cret"], "expected NAME: VALUE"),
        (
            ["--mcp-command", "x", "--header", "X-Key: s3cret"],
            "--header and --token are for a server reached by URL",
        ),
        (
            ["--mcp-command", "x", "--token", "s3cret"],
            "--header and --token are for a server reached by URL",
        ),
        (["--token", "s3cret"], "--header and --token are for an MCP server given with --mcp URL"),
        (
            [
                "--mcp",
                "http://127.0.0.1:9/mcp",
                "--token",
                "s3cret",
                "--header",
                "authorization: x",
            ],
            "give the credentials once",
        ),
    ],
)
async def test_a_malformed_header_or_one_for_a_command_exits_2_without_the_secret(
    options: list[str], expected: str
) -> None:
    completed = await run_cli("list", *options)
    assert completed.returncode == 2
    error = one_error_line(completed)
    assert expected in error and "s3cret" not in error


async def test_mcp_bridge_refuses_a_header_for_a_command() -> None:
    completed = await run_cli("mcp", "bridge", "--header", "X-Key: s3cret", "--", "true")
    assert completed.returncode == 2
    error = one_error_line(completed)
    assert "--header and --token are for a server reached by URL" in error
    assert "s3cret" not in error
