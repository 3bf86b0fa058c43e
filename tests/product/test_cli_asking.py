"""``argentic-tools call`` takes part in the call: the person at the terminal answers the tool.

A real tool process (``tests.support.asking_tools``) asks questions, asks for a
completion and logs; ``call`` runs on a real terminal (a tmux pane), where the test types
as a person would. Without a terminal, the tool learns at once that nobody can answer.
"""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from argentic_tools import ToolManager
from tests.support.brokers import Mosquitto, child_env
from tests.support.cli import TIMEOUT, cli, connection, lines, one_error_line, run_cli
from tests.support.processes import ROOT, ToolProcess
from tests.support.terminal import Tmux, needs_tmux, on_a_terminal

pytestmark = pytest.mark.anyio

ACTION = "Answer (a), decline (d) or cancel (c)? [a]:"


@pytest.fixture
async def asking_tools(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager
) -> AsyncIterator[ToolProcess]:
    async with ToolProcess("tests.support.asking_tools", mosquitto.url, prefix) as process:
        for name in ("register", "summarise", "chatty", "pay", "where"):
            await manager.wait_for_tool(name, timeout=30)
        yield process


def calling(mosquitto: Mosquitto, prefix: str, *args: str) -> list[str]:
    return cli("call", *args, "--timeout", "60", *connection(mosquitto.url, prefix))


def printed_result(screen: str) -> object:
    """The JSON ``call`` printed last: from the line that opens it to the end."""
    rows = screen.rstrip().splitlines()
    start = max(i for i, row in enumerate(rows) if row.startswith(("{", "[", '"')))
    return json.loads("\n".join(rows[start:]))


@needs_tmux
async def test_the_person_answers_a_question_field_by_field_and_is_asked_again_when_wrong(
    asking_tools: ToolProcess, mosquitto: Mosquitto, prefix: str
) -> None:
    async with on_a_terminal(calling(mosquitto, prefix, "register"), scrollback=True) as terminal:
        await terminal.wait_for("register asks: Who is registering?", ACTION)
        await terminal.line("a")
        await answer(terminal, "Name (text, at least 2 characters)", "A", "too short", "Ada")
        await answer(terminal, "Age (whole number from 0 to 150)", "200", "out of range", "36")
        await terminal.wait_for("1. Red", "2. Green", "3. Blue", "Colour [Green]:")
        await terminal.line("")  # the default
        await answer(terminal, "Toppings (numbers from 1 to 3", "4", "not one of", "1, basil")
        await terminal.wait_for("Newsletter [no]:")
        await terminal.line("y")
        assert await terminal.exit_status() == 0
        screen = await terminal.screen()
    assert printed_result(screen) == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "age": 36,
            "colour": "g",
            "toppings": ["cheese", "basil"],
            "newsletter": True,
        },
    }


async def answer(terminal: Tmux, field: str, wrong: str, problem: str, right: str) -> None:
    """Type a wrong answer to ``field``, see ``problem``, then type the right one."""
    await terminal.wait_for(field)
    await terminal.line(wrong)
    await terminal.wait_for(problem)
    await terminal.line(right)


@needs_tmux
@pytest.mark.parametrize(("keys", "action"), [("d", "decline"), ("C-c", "cancel")])
async def test_declining_or_ctrl_c_answers_the_tool_and_the_call_goes_on(
    asking_tools: ToolProcess, mosquitto: Mosquitto, prefix: str, keys: str, action: str
) -> None:
    async with on_a_terminal(calling(mosquitto, prefix, "register"), scrollback=True) as terminal:
        await terminal.wait_for(ACTION)
        if keys == "C-c":
            await terminal.keys("C-c")
        else:
            await terminal.line(keys)
        assert await terminal.exit_status() == 0
        screen = await terminal.screen()
    assert printed_result(screen) == {"action": action, "content": None}
    assert "interrupted" not in screen


@needs_tmux
async def test_the_person_replies_as_the_model_or_declines_and_the_tool_gets_an_error(
    asking_tools: ToolProcess, mosquitto: Mosquitto, prefix: str
) -> None:
    command = calling(mosquitto, prefix, "summarise", "text=the sky is blue")
    async with on_a_terminal(command, scrollback=True) as terminal:
        await terminal.wait_for(
            "summarise asks for a completion",
            "system: Answer in one sentence.",
            "user: Summarise: the sky is blue",
            "Reply (empty: decline):",
        )
        await terminal.line("Blue sky.")
        assert await terminal.exit_status() == 0
        assert printed_result(await terminal.screen()) == "Blue sky."
    async with on_a_terminal(command, scrollback=True) as terminal:
        await terminal.wait_for("Reply (empty: decline):")
        await terminal.line("")
        assert await terminal.exit_status() == 1
        screen = await terminal.screen()
    assert "declined" in screen
    assert "the person at the terminal declined to reply" in screen


async def test_log_records_are_printed_as_they_come_from_the_level_asked(
    asking_tools: ToolProcess, mosquitto: Mosquitto, prefix: str
) -> None:
    shown = await run_cli("call", "chatty", "lines=2", *connection(mosquitto.url, prefix))
    everything = await run_cli(
        "call", "chatty", "lines=2", "--tool-log", "debug", *connection(mosquitto.url, prefix)
    )
    silent = await run_cli(
        "call", "chatty", "lines=2", "--tool-log", "off", *connection(mosquitto.url, prefix)
    )
    as_json = await run_cli(
        "call", "chatty", "lines=1", "--json", *connection(mosquitto.url, prefix)
    )

    assert shown.returncode == 0, shown.stderr
    assert lines(shown.stdout) == ["2"]
    assert lines(shown.stderr) == [
        'info     chatty (chatty): halfway there {"lines": 2}',
        "warning  chatty: almost done",
    ]
    assert lines(everything.stderr)[:2] == [
        "debug    chatty: detail 0",
        "debug    chatty: detail 1",
    ]
    assert lines(silent.stderr) == []
    records = [json.loads(line) for line in lines(as_json.stdout)]
    assert records[0]["log"] == {
        "tool": "chatty",
        "level": "info",
        "message": "halfway there",
        "data": {"lines": 1},
        "logger": "chatty",
    }
    assert records[-1] == {"result": 1}


async def test_without_a_terminal_the_tool_learns_at_once_that_nobody_can_answer(
    asking_tools: ToolProcess, mosquitto: Mosquitto, prefix: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        completed = await anyio.run_process(
            calling(mosquitto, prefix, "pay", "amount=30", "to=ACME"),
            input=b"",  # not a terminal
            check=False,
            cwd=ROOT,
            env=child_env(),
        )
    assert completed.returncode == 1
    error = one_error_line(completed)
    assert "its caller cannot answer questions" in error, error
    assert "only when stdin is a terminal" in error


async def test_roots_are_the_root_directories_given_and_none_without(
    asking_tools: ToolProcess, mosquitto: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    given = await run_cli(
        "call", "where", "--root", str(tmp_path), *connection(mosquitto.url, prefix)
    )
    none = await run_cli("call", "where", *connection(mosquitto.url, prefix))

    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout) == [tmp_path.as_uri()]  # tmp_path is resolved already
    assert none.returncode == 1
    assert "name its roots" in one_error_line(none)
