"""The README's code runs as written.

Python blocks run against a private mosquitto: the only change is the broker address
(``localhost:1883`` becomes the test broker's). The first block is saved as
``my_tools.py`` and served as its own process, as the README says. Every
``argentic-tools`` command the README shows must exist.
"""

import json
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.support.brokers import Mosquitto, child_env, uncovered_env
from tests.support.processes import ROOT

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


SERVED = [block for block in BLOCKS if re.match(r"# \w+\.py\n", block)]
"""Blocks that are tool processes (``# my_tools.py`` ...): saved and served as such."""
SCRIPTS = [block for block in BLOCKS if block not in SERVED]
"""Blocks that are agents: run as scripts, in order."""
FRAMEWORK_SCRIPTS = {
    match.group(1): block
    for block in SCRIPTS
    if (match := re.search(r"from argentic_tools\.integrations\.(\w+) import", block))
}
"""The agents in an agent framework (``## Native tools in agent frameworks``), by the
integration they import: their outputs are checked by name, the others' by position."""


def test_readme_has_the_examples_this_test_runs() -> None:
    assert len(SCRIPTS) >= 3
    assert BLOCKS[0].startswith("# my_tools.py")
    assert [block.split("\n", 1)[0] for block in SERVED] == [
        "# my_tools.py",
        "# class_tools.py",
        "# long_tools.py",
        "# media_tools.py",
        "# pay_tools.py",
    ]


def test_readme_python_blocks_run_against_a_real_broker(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{mosquitto.port}"
    env = child_env()
    env["PYTHONPATH"] = str(tmp_path)
    # The tool processes run library code the other tests measure; without coverage
    # each starts ~0.5 s of CPU sooner (the agents' scripts keep it).
    served_env = uncovered_env()
    served_env["PYTHONPATH"] = str(tmp_path)
    processes = []
    for block in SERVED:
        name = block.split("\n", 1)[0].removeprefix("# ")
        (tmp_path / name).write_text(block.replace("localhost:1883", address))
        processes.append(
            subprocess.Popen(
                [sys.executable, name, "--broker", f"mqtt://{address}"],
                cwd=tmp_path,
                env=served_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    try:
        outputs = []
        framework_outputs = {}
        for block in SCRIPTS:
            done = subprocess.run(
                [sys.executable, "-c", block.replace("localhost:1883", address)],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            if block in FRAMEWORK_SCRIPTS.values():
                (name,) = (n for n, b in FRAMEWORK_SCRIPTS.items() if b == block)
                framework_outputs[name] = done.stdout
            else:
                outputs.append(done.stdout)
    finally:
        for process in processes:
            process.terminate()
        errors = [process.communicate(timeout=20)[1] for process in processes]
    assert [process.returncode for process in processes] == [0] * len(SERVED), errors
    assert outputs[0].splitlines() == [
        "5",
        "Tool 'add': invalid arguments: $.a: 'two' is not of type 'integer'",
    ]
    assert outputs[1].splitlines() == ["Hello, Ada!"]
    lines = outputs[2].splitlines()
    assert lines[0] == "c1 success 2"
    assert lines[1].startswith("c2 failed Tool 'web_search' not found.")
    assert lines[2] == "['add']"
    assert lines[3] == "[('c1', 'success'), ('c2', 'failed')]"
    assert outputs[3].splitlines() == [
        "1/3 page 1",
        "2/3 page 2",
        "3/3 page 3",
        "3",
        "line 0",
        "line 1",
        "cancelled at the tool",
        "cancelled",
    ]
    assert outputs[4].splitlines() == ["success 15"]  # picked up from the journal
    assert outputs[5].splitlines() == [
        "{'count': 3, 'max': 3.0}",
        "image/svg+xml text",
        "[resource link q3.pdf: file:///reports/q3.pdf]",
    ]
    assert outputs[6].splitlines() == [
        "pay asks: Pay 30.00 EUR to ACME?",
        "paid 30.00 EUR to ACME",
        "pay asks: Pay 30.00 EUR to ACME?",
        "Tool 'pay' failed: not paid: the payment was not approved",
    ]
    stats, traced = outputs[7].splitlines()
    # Every README tool process answered for itself; the call is one span here.
    assert {"add", "crawl", "lines", "chart", "pay"} <= set(json.loads(stats.replace("'", '"')))
    assert traced == "['execute_tool add']"
    # The null the model sent for b became its default (1).
    assert framework_outputs["openai_agents"].splitlines() == ["['3']", "2 + 1 = 3"]
    assert framework_outputs["pydantic_ai"].splitlines() == [
        "crawl 1.0 3.0 page 1",
        "crawl 2.0 3.0 page 2",
        "crawl 3.0 3.0 page 3",
        '{"crawl":3}',
    ]
    assert framework_outputs["langchain"].splitlines() == [
        "['add']",
        "success 5",
        "error Tool 'add': invalid arguments: $.a: 'two' is not of type 'integer'",
    ]
    assert framework_outputs["llamaindex"].splitlines() == [
        "['add']",
        "False 5",
        "True Tool 'add': invalid arguments: $.a: 'two' is not of type 'integer'",
    ]


MCP_CONFIGS = [
    json.loads(block)
    for block in re.findall(r"```json\n(.*?)```", README.read_text(), flags=re.S)
    if "mcpServers" in block
]
BRIDGE = re.findall(r"^(argentic-tools mcp bridge .*)$", README.read_text(), flags=re.M)


def as_run_here(command: list[str], broker: str) -> list[str]:
    """A README command as this interpreter runs it, against the test broker."""
    if command[0] == "argentic-tools":
        command = [sys.executable, "-m", "argentic_tools", *command[1:]]
    replaced = {"mqtt://localhost:1883": broker, "python": sys.executable}
    return [replaced.get(part, part) for part in command]


@pytest.mark.anyio
async def test_readme_mcp_config_and_bridge_work_together(mosquitto: Mosquitto) -> None:
    """The full loop: MCP client -> gateway (the README's config) -> MQTT -> bridge (the
    README's command) -> the real mcp-server-time."""
    pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    (config,) = MCP_CONFIGS
    (bridge_line,) = BRIDGE
    server = config["mcpServers"]["fleet"]
    gateway = as_run_here([server["command"], *server["args"]], mosquitto.url)
    bridge = await anyio.open_process(
        as_run_here(shlex.split(bridge_line), mosquitto.url),
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        parameters = StdioServerParameters(
            command=gateway[0], args=gateway[1:], env=child_env(), cwd=ROOT
        )
        async with Client(parameters) as client:
            with anyio.fail_after(30):
                while "get_current_time" not in {
                    t.name for t in (await client.list_tools(cache_mode="refresh")).tools
                }:
                    await anyio.sleep(0.05)
            result = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
            assert not result.is_error, result
            assert result.structured_content is not None
            assert result.structured_content["timezone"] == "Asia/Tokyo"
    finally:
        bridge.send_signal(signal.SIGTERM)
        with anyio.fail_after(15):
            assert await bridge.wait() == 0
        await bridge.aclose()


@pytest.mark.parametrize(
    "command", sorted(set(re.findall(r"^argentic-tools (\w+)", README.read_text(), re.M)))
)
def test_every_cli_command_in_the_readme_exists(command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "argentic_tools", command, "--help"],
        env=uncovered_env(),  # the parser is measured by the CLI tests
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
