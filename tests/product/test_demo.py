"""``argentic-tools demo`` end to end: real tool processes, a real or embedded broker."""

import shlex
import signal

import anyio
import pytest

from tests.support.brokers import Mosquitto, child_env, free_port
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
from tests.support.processes import ROOT

pytestmark = pytest.mark.anyio


async def test_demo_against_a_running_broker_exits_0_and_shows_tool_offline(
    mosquitto: Mosquitto, prefix: str
) -> None:
    completed = await run_cli(
        "demo", "--exit", *connection(mosquitto.url, prefix), timeout=DEMO_TIMEOUT
    )
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
    completed = await run_cli(
        "demo", "--exit", *connection(nothing_there, prefix), timeout=DEMO_TIMEOUT
    )
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


async def test_demo_stays_up_until_ctrl_c_and_prints_how_to_reach_its_tools(prefix: str) -> None:
    # Its stdout a pipe and no dashboard: it used to exit after the scripted agent. The
    # broker is the embedded one, on a port the newcomer cannot guess.
    async with cli_process("demo", "--no-dashboard", "--topic-prefix", prefix) as demo:
        assert demo.stdout is not None
        marker = b"From another terminal:\n"
        seen = await read_until(demo.stdout, marker, timeout=DEMO_TIMEOUT)
        while not seen.partition(marker)[2].endswith(b"\n"):  # and the line after it
            seen += await read_until(demo.stdout, b"\n")
        stays, command = lines(seen)[-2:]
        assert stays == "The tools stay up until Ctrl-C. From another terminal:"
        words = shlex.split(command)
        assert words[1:3] == ["list", "--broker"]
        assert words[3].startswith("mqtt://127.0.0.1:")
        assert words[4:] == ["--topic-prefix", prefix]
        broker = words[3]

        # The line as printed, from another terminal: the tools the demo still serves.
        with anyio.fail_after(TIMEOUT):
            listed = await anyio.run_process(words, check=False, cwd=ROOT, env=child_env())
        assert listed.returncode == 0, listed.stderr
        assert "calculate" in listed.stdout.decode()
        # Without the prefix nothing shows, and the commands say where else tools may be.
        hint = "Tools under another topic prefix or on another broker do not show here"
        wrong = ("--broker", broker, "--wait", "0.5")
        empty = await run_cli("list", *wrong)
        assert empty.returncode == 0
        assert hint in empty.stderr.decode()
        described = await run_cli("describe", *wrong)
        assert hint in described.stderr.decode()
        missing = await run_cli("call", "calculate", *wrong)
        assert missing.returncode == 1
        assert hint in missing.stderr.decode()

        demo.send_signal(signal.SIGINT)
        with anyio.fail_after(TIMEOUT):
            status = await demo.wait()
        rest = (seen + await read_rest(demo.stdout)).decode()
        errors = await read_rest(demo.stderr)
    # Ctrl-C is how the demo is left once it stays up: a normal end.
    assert status == 0, errors
    assert errors == b""
    assert "Demo finished" in rest
    assert processes_mentioning(prefix) == []
