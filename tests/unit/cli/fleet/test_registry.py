"""``list`` and ``describe``'s pure parts, in-process: parameter summaries, widths, prompt text."""

from argentic_tools.cli.fleet.registry import (
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
