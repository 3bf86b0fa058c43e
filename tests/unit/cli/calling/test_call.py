"""Arguments on the command line: one JSON object, or NAME=VALUE pairs typed by the schema."""

import argparse
import io

import pytest

from argentic_tools.cli.calling.call import (
    ArgumentsError,
    can_ask,
    parse_arguments,
    suggested_arguments,
    typed_pairs,
)
from argentic_tools.cli.common import CliError


def test_arguments_are_one_json_object_or_typed_pairs() -> None:
    assert parse_arguments([]) == {}
    assert parse_arguments(['{"a": 1}']) == {"a": 1}
    assert parse_arguments(["a=1", "b=x"]) is None
    with pytest.raises(CliError, match="neither"):
        parse_arguments(["a=1", "oops"])
    with pytest.raises(CliError, match="JSON object"):
        parse_arguments(["[1]"])
    schema = {
        "properties": {"a": {"type": "integer"}, "s": {"type": "string"}, "t": {"type": "array"}}
    }
    assert typed_pairs(["a=2", "s=42", 't=["x"]', "u=not json"], schema) == {
        "a": 2,
        "s": "42",
        "t": ["x"],
        "u": "not json",
    }


def test_arguments_that_are_neither_say_so_by_the_name_the_help_gives_them() -> None:
    with pytest.raises(ArgumentsError) as error:
        parse_arguments(["hello"])
    assert str(error.value).startswith(
        "ARGS 'hello' are neither KEY=VALUE pairs nor a JSON object (not JSON: "
    )
    assert error.value.text == "hello"  # for the tool's schema to suggest a form
    with pytest.raises(ArgumentsError, match=r"^ARGS are KEY=VALUE pairs or one JSON object"):
        parse_arguments(["hello", "world"])


@pytest.mark.parametrize(
    ("parts", "hint"),
    [
        (["text: hello"], """write text=hello or '{"text": "hello"}'"""),
        (["--n=2"], """write n=2 or '{"n": 2}'"""),
        (["text", "=", "hi"], """write text=hi or '{"text": "hi"}'"""),
        (
            ["text=hello", "big", "world", "n=2"],
            "quote a value with spaces: text='hello big world'",
        ),
    ],
)
def test_pairs_written_another_way_get_the_way_to_write_them(parts: list[str], hint: str) -> None:
    with pytest.raises(ArgumentsError) as error:
        parse_arguments(parts)
    assert str(error.value).endswith(f"; {hint}")
    assert error.value.text is None  # the hint is all: no other form to suggest


def test_the_tools_schema_suggests_how_to_give_it_plain_words() -> None:
    one_string = {
        "properties": {"text": {"type": "string"}, "loud": {"type": "boolean"}},
        "required": ["text"],
    }
    assert suggested_arguments("shout", "hello world", one_string) == (
        """; try: argentic-tools call shout text='hello world' (or '{"text": "hello world"}')"""
    )
    numbers = {"properties": {"a": {"type": "number"}}, "required": ["a"]}
    assert suggested_arguments("half", "hello", numbers) == "; 'half' takes a: number"
    assert suggested_arguments("now", "hello", {"type": "object"}) == "; 'now' takes no arguments"


def test_call_asks_the_person_only_on_a_terminal_and_without_no_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def options(*arguments: str, no_ask: bool = False) -> argparse.Namespace:
        return argparse.Namespace(arguments=list(arguments), no_ask=no_ask)

    monkeypatch.setattr("sys.stdin", Terminal())
    assert can_ask(options("a=1"))
    assert not can_ask(options("a=1", no_ask=True))
    assert not can_ask(options("-"))  # ARGS read from stdin: it is no person's any more
    monkeypatch.setattr("sys.stdin", io.StringIO())
    assert not can_ask(options("a=1"))
