"""``argentic-tools demo`` end to end: real tool processes, a real or embedded broker."""

import signal

import anyio
import pytest

from tests.support.brokers import Mosquitto, free_port
from tests.support.cli import (
    DEMO_TIMEOUT,
    TIMEOUT,
    cli_process,
    connection,
    lines,
    processes_mentioning,
    read_rest,
    read_until,
    run_cli,
)

pytestmark = pytest.mark.anyio


async def test_demo_against_a_running_broker_exits_0_and_shows_tool_offline(
    mosquitto: Mosquitto, prefix: str
) -> None:
    completed = await run_cli("demo", *connection(mosquitto.url, prefix), timeout=DEMO_TIMEOUT)
    output = completed.stdout.decode()
    assert completed.returncode == 0, completed.stderr
    assert f"{mosquitto.url} (it answered)" in output
    assert "invalid_arguments" in output
    assert "timeout: Tool 'sleep' timed out after 1 s" in output
    assert "tool_offline" in output
    assert completed.stderr == b""
    assert processes_mentioning(prefix) == []


async def test_demo_falls_back_to_the_embedded_broker_when_none_answers(prefix: str) -> None:
    nothing_there = f"mqtt://127.0.0.1:{free_port()}"
    completed = await run_cli("demo", *connection(nothing_there, prefix), timeout=DEMO_TIMEOUT)
    output = completed.stdout.decode()
    assert completed.returncode == 0, completed.stderr
    assert "embedded" in output
    assert "tool_offline" in output
    # Nothing on stderr: no amqtt warnings or tracebacks.
    assert completed.stderr == b""
    assert processes_mentioning(prefix) == []


async def test_ctrl_c_during_the_demo_exits_130_and_leaves_no_process(
    mosquitto: Mosquitto, prefix: str
) -> None:
    async with cli_process("demo", *connection(mosquitto.url, prefix)) as demo:
        assert demo.stdout is not None
        # The tool processes are up once their table is printed.
        await read_until(demo.stdout, b"Registered tools", timeout=DEMO_TIMEOUT)
        assert len(processes_mentioning(prefix)) == 1 + 6  # the demo and its tool processes
        demo.send_signal(signal.SIGINT)
        with anyio.fail_after(TIMEOUT):
            status = await demo.wait()
        errors = lines(await read_rest(demo.stderr))
    assert status == 130
    assert errors == ["interrupted"]
    assert processes_mentioning(prefix) == []
