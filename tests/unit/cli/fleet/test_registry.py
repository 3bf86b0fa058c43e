"""The command line's pure parts, in-process: parameter summaries and watch filters."""

from argentic_tools import RegisterToolMessage, TaskMessage, ToolRegisteredMessage
from argentic_tools.cli.fleet.registry import (
    WatchFilter,
    fit_widths,
    parameters,
    prompt_text,
    summary,
)


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


def test_a_description_in_the_table_is_its_first_sentence_on_one_line() -> None:
    assert summary("Add two numbers.\n\nArgs:\n    a: one") == "Add two numbers."
    assert (
        summary("Convert an amount\n  of money. Rates are daily.") == "Convert an amount of money."
    )
    assert summary("  no full stop  ") == "no full stop"
    assert summary("") == ""


def test_columns_give_way_widest_first_and_never_below_their_minimum() -> None:
    assert fit_widths([10, 20, 30], [10, 5, 5], 60) == [10, 20, 30]
    assert fit_widths([10, 20, 30], [10, 5, 5], 40) == [10, 15, 15]
    # The minimums do not fit: every column but the names goes down to 4.
    assert fit_widths([10, 20, 30], [10, 12, 12], 20) == [10, 5, 5]
    assert fit_widths([10, 20, 30], [10, 12, 12], 10) == [10, 4, 4]


def test_the_prompt_format_reads_as_one_block_per_tool_by_name() -> None:
    entries = [
        {
            "tool_id": "2",
            "name": "shout",
            "description": "Shout.\n\nLoudly.",
            "parameters": {"type": "object"},
        },
        {"tool_id": "1", "name": "add", "description": "Add.", "parameters": {}},
    ]
    assert prompt_text(entries) == (
        "## add\nAdd.\nParameters (JSON Schema): {}\n\n"
        '## shout\nShout.\n\nLoudly.\n\nParameters (JSON Schema): {"type": "object"}'
    )
