"""The command line's pure parts, in-process: parameter summaries and watch filters."""

from argentic_tools import RegisterToolMessage, TaskMessage, ToolRegisteredMessage
from argentic_tools.cli.commands import WatchFilter, parameters


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
