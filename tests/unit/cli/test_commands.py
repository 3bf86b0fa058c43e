"""The command line's pure parts, in-process: arguments, parameter summaries, watch filters."""

import argparse

import pytest

from argentic_tools import RegisterToolMessage, TaskMessage, ToolRegisteredMessage
from argentic_tools.cli.calling import parse_arguments, typed_pairs
from argentic_tools.cli.commands import WatchFilter, parameters
from argentic_tools.cli.common import CliError
from argentic_tools.cli.main import positive_seconds
from argentic_tools.cli.mcp_commands import host_and_port


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


def test_parameters_are_summed_up_in_one_short_line() -> None:
    schema = {
        "properties": {
            "a": {"type": "integer"},
            "b": {"enum": ["x", "y"]},
            "c": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "d": {"type": "array", "items": {"type": "number"}},
            "e": {},
            "f": {"$ref": "#/$defs/Place"},
            "g": {"type": ["string", "null"]},
        },
        "required": ["a"],
    }
    assert parameters(schema) == (
        'a: integer, b?: "x"|"y", c?: string|null, d?: number[], e?: any, f?: Place, '
        "g?: string|null"
    )
    assert parameters({"type": "object"}) == ""


def test_watch_shows_a_registration_once_and_filters_by_kind_and_tool() -> None:
    register = RegisterToolMessage(tool_name="adder", tool_id="t1", source="p")
    shown = WatchFilter([], [], everything=False)
    assert shown.shows(register, "register")
    assert not shown.shows(register, "register")
    confirmed = ToolRegisteredMessage(tool_id="t1", tool_name="adder", source="m")
    assert shown.shows(confirmed, "registered")
    assert WatchFilter([], [], everything=True).shows(register, "register")
    only_calls = WatchFilter(["call"], ["adder"], everything=False)
    assert only_calls.shows(TaskMessage(tool_id="t1", tool_name="adder"), "call")
    assert not only_calls.shows(TaskMessage(tool_id="t2", tool_name="other"), "call")
    assert not only_calls.shows(register, "register")


def test_seconds_and_addresses_are_checked() -> None:
    assert positive_seconds("1.5") == 1.5
    for bad in ("0", "-1", "inf", "soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="seconds"):
            positive_seconds(bad)
    assert host_and_port("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert host_and_port(":0") == ("127.0.0.1", 0)
    with pytest.raises(CliError, match="HOST:PORT"):
        host_and_port("localhost")
