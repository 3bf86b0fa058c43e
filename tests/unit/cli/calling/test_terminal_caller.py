"""``call``'s handlers, driven through a pipe instead of a terminal (the lines a person types)."""

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from argentic_tools import ElicitRequest, LogRecord, SampleRequest
from argentic_tools._agent.calls.participation.handlers import CallRef
from argentic_tools.cli.calling.answer_form import DONE
from argentic_tools.cli.calling.terminal_caller import (
    PERSON,
    SampleDeclinedError,
    TerminalCaller,
    conversation_lines,
    log_text,
    shown_level,
)

pytestmark = pytest.mark.anyio

CALL = CallRef("pay", "pay-1", "task-1", None, None)
SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "integer", "minimum": 1, "title": "Amount"},
        "currency": {
            "type": "string",
            "oneOf": [{"const": "EUR", "title": "Euro"}, {"const": "USD", "title": "Dollar"}],
            "default": "EUR",
        },
        "note": {"type": "string"},
    },
    "required": ["amount"],
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Person:
    """Lines typed at a "terminal" (a pipe), and what the caller printed."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        self.output = io.StringIO()
        self.console = Console(file=self.output, width=200, highlight=False, markup=False)

    def types(self, *lines: str) -> None:
        os.write(self.write_end, "".join(f"{line}\n" for line in lines).encode())

    def hangs_up(self) -> None:
        os.close(self.write_end)
        self.write_end = -1

    def caller(self, **options: Any) -> TerminalCaller:
        options.setdefault("ask", True)
        options.setdefault("log_level", "info")
        return TerminalCaller(self.console, fd=self.read_end, **options)

    def close(self) -> None:
        for fd in (self.read_end, self.write_end):
            if fd >= 0:
                os.close(fd)


@pytest.fixture
def person() -> Iterator[Person]:
    typed = Person()
    yield typed
    typed.close()


async def test_the_person_answers_field_by_field_and_a_wrong_value_is_asked_again(
    person: Person,
) -> None:
    person.types("", "zero", "0", "12", "", "")
    with anyio.fail_after(10):
        result = await person.caller().on_elicit(
            ElicitRequest(message="Pay?", requested_schema=SCHEMA), CALL
        )
    assert result.action == "accept"
    assert result.content == {"amount": 12, "currency": "EUR"}
    shown = person.output.getvalue()
    assert "pay asks: Pay?" in shown
    assert "1. Euro" in shown
    assert "! 'zero' is not a whole number, at least 1" in shown
    assert "! 0 is out of range" in shown
    assert 'answered {"amount": 12, "currency": "EUR"}' in shown


async def test_declining_and_cancelling_send_no_content(person: Person) -> None:
    request = ElicitRequest(message="Pay?", requested_schema=SCHEMA)
    person.types("d", "nonsense", "c")
    with anyio.fail_after(10):
        declined = await person.caller().on_elicit(request, CALL)
        cancelled = await person.caller().on_elicit(request, CALL)
    assert (declined.action, declined.content) == ("decline", None)
    assert (cancelled.action, cancelled.content) == ("cancel", None)
    shown = person.output.getvalue()
    assert "! type a, d or c" in shown
    # The pipe does not echo what was typed: each outcome ends its prompt's line.
    assert [line.rsplit(" ", 1)[-1] for line in shown.splitlines() if line.endswith("ed")] == [
        DONE["decline"],
        DONE["cancel"],
    ]


async def test_the_end_of_input_cancels_the_question(person: Person) -> None:
    person.types("a", "5")
    person.hangs_up()
    with anyio.fail_after(10):
        result = await person.caller().on_elicit(
            ElicitRequest(message="Pay?", requested_schema=SCHEMA), CALL
        )
    assert result.action == "cancel"


async def test_ctrl_c_while_asked_cancels_the_question_not_the_command(person: Person) -> None:
    def pressed_at_once(interrupt: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        interrupt()  # the person presses Ctrl-C as soon as the question shows
        return contextlib.nullcontext()

    with anyio.fail_after(10):
        result = await person.caller(interrupting=pressed_at_once).on_elicit(
            ElicitRequest(message="Pay?", requested_schema=SCHEMA), CALL
        )
    assert result.action == "cancel"


async def test_a_schema_the_terminal_cannot_ask_fails_the_handler_with_the_fields_name(
    person: Person,
) -> None:
    schema = {"type": "object", "properties": {"where": {"type": "object"}}}
    with pytest.raises(ValueError, match="'where'"):
        await person.caller().on_elicit(ElicitRequest(message="?", requested_schema=schema), CALL)


async def test_the_person_replies_as_the_model_or_declines(person: Person) -> None:
    request = SampleRequest.model_validate(
        {
            "messages": [
                {"role": "user", "content": "Summarise: the sky is blue."},
                {
                    "role": "user",
                    "content": {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
                },
            ],
            "maxTokens": 50,
            "systemPrompt": "Be brief.",
        }
    )
    assert conversation_lines(request) == [
        "system: Be brief.",
        "user: Summarise: the sky is blue.",
        "user: [image/png, 4 B]",
    ]
    person.types("Blue sky.", "")
    with anyio.fail_after(10):
        result = await person.caller().on_sample(request, CALL)
        assert (result.text, result.model, result.stop_reason) == ("Blue sky.", PERSON, "endTurn")
        with pytest.raises(SampleDeclinedError, match="declined"):
            await person.caller().on_sample(request, CALL)


async def test_log_records_are_printed_from_the_level_up_and_held_while_a_question_is_open(
    person: Person,
) -> None:
    caller = person.caller(log_level="notice")
    caller.on_log(LogRecord(level="info", message="quiet"), CALL)
    caller.on_log(LogRecord(level="warning", message="card expires", logger="bank"), CALL)
    lines = person.output.getvalue().splitlines()
    assert lines == ["warning  pay (bank): card expires"]

    held: list[str] = []

    @contextlib.contextmanager
    def logs_while_asked(interrupt: Callable[[], None]) -> Iterator[None]:
        caller.on_log(LogRecord(level="error", message="during", data={"n": 1}), CALL)
        held.append(person.output.getvalue())
        person.types("d")
        yield

    caller.interrupting = logs_while_asked
    with anyio.fail_after(10):
        await caller.on_elicit(ElicitRequest(message="Pay?", requested_schema=SCHEMA), CALL)
    assert "during" not in held[0]
    assert person.output.getvalue().splitlines()[-1] == 'error    pay: during {"n": 1}'


def test_log_records_as_json_lines_name_the_tool(capsys: pytest.CaptureFixture[str]) -> None:
    caller = TerminalCaller(
        Console(file=io.StringIO()), ask=False, log_level="debug", json_lines=True
    )
    caller.on_log(LogRecord(level="debug", message="", data={"step": 2}), CALL)
    assert (
        capsys.readouterr().out
        == '{"log": {"tool": "pay", "level": "debug", "message": "", "data": {"step": 2}}}\n'
    )


def test_handlers_are_offered_only_for_what_the_terminal_can_do(tmp_path: Path) -> None:
    console = Console(file=io.StringIO())
    quiet = TerminalCaller(console, ask=False, log_level=None).handlers()
    assert quiet == {"on_elicit": None, "on_sample": None, "on_roots": None, "on_log": None}
    full = TerminalCaller(console, ask=True, log_level="info", roots=[tmp_path], fd=0)
    assert all(handler is not None for handler in full.handlers().values())
    (root,) = full.on_roots(CALL)
    assert (root.uri, root.name) == (tmp_path.resolve().as_uri(), tmp_path.name)


def test_log_levels_are_mcps_or_off() -> None:
    assert shown_level("WARNING") == "warning"
    assert shown_level("off") is None
    with pytest.raises(ValueError, match="not a log level"):
        shown_level("verbose")
    text = log_text(LogRecord(level="info", message="", data=[1]), "t")
    assert text.plain == "info     t: [1]"
