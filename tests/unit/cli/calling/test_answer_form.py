"""The questions ``call`` asks from a tool's requested schema, and how answers are read."""

from typing import Any

import pytest

from argentic_tools.cli.calling.answer_form import (
    SKIP,
    InvalidAnswerError,
    Question,
    UnsupportedSchemaError,
    form_questions,
    parse_action,
)


def one(spec: dict[str, Any], *, required: bool = False) -> Question:
    schema = {"type": "object", "properties": {"f": spec}, "required": ["f"] if required else []}
    (question,) = form_questions(schema)
    return question


def test_questions_follow_the_schemas_properties_in_order_with_titles_and_required() -> None:
    questions = form_questions(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "description": "as on the card"},
                "age": {"type": "integer"},
            },
            "required": ["age"],
        }
    )
    assert [(q.key, q.title, q.kind, q.required) for q in questions] == [
        ("name", "Your name", "string", False),
        ("age", "age", "integer", True),
    ]
    assert questions[0].description == "as on the card"


def test_a_schema_without_properties_asks_nothing() -> None:
    assert form_questions({"type": "object"}) == []


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "object", "properties": {}},
        {"type": "array", "items": {"type": "string"}},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "not a schema",
    ],
)
def test_a_field_that_is_not_mcps_restricted_kind_is_refused_by_name(spec: Any) -> None:
    with pytest.raises(UnsupportedSchemaError, match="'f'"):
        form_questions({"type": "object", "properties": {"f": spec}})


def test_a_string_checks_its_length_and_keeps_the_text() -> None:
    question = one({"type": "string", "minLength": 2, "maxLength": 4}, required=True)
    assert question.hint() == "text, 2 to 4 characters"
    assert question.parse("  abc ") == "abc"
    with pytest.raises(InvalidAnswerError, match="too short"):
        question.parse("a")
    with pytest.raises(InvalidAnswerError, match="too long"):
        question.parse("abcde")


@pytest.mark.parametrize(
    ("string_format", "good", "bad"),
    [
        ("email", "ada@example.org", "ada@example"),
        ("uri", "https://example.org/x", "example.org"),
        ("date", "2026-11-25", "25/11/2026"),
        ("date-time", "2026-11-25T21:10:00", "tomorrow"),
    ],
)
def test_a_string_with_a_format_takes_only_that_format(
    string_format: str, good: str, bad: str
) -> None:
    question = one({"type": "string", "format": string_format})
    assert question.parse(good) == good
    with pytest.raises(InvalidAnswerError, match="is not"):
        question.parse(bad)


def test_numbers_and_integers_check_their_type_and_bounds() -> None:
    number = one({"type": "number", "minimum": 0, "maximum": 10})
    assert number.hint() == "number from 0 to 10"
    assert number.parse("2.5") == 2.5
    assert number.parse("3") == 3
    for text in ("eleven", "11", "-1", "nan", "inf"):
        with pytest.raises(InvalidAnswerError):
            number.parse(text)
    integer = one({"type": "integer", "minimum": 1})
    assert integer.hint() == "whole number, at least 1"
    assert integer.parse("7") == 7
    with pytest.raises(InvalidAnswerError, match="whole number"):
        integer.parse("7.5")
    with pytest.raises(InvalidAnswerError, match="out of range"):
        integer.parse("0")


def test_a_boolean_takes_yes_or_no_in_several_words() -> None:
    question = one({"type": "boolean"}, required=True)
    assert [question.parse(text) for text in ("y", "YES", "true", "n", "No", "false")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    with pytest.raises(InvalidAnswerError, match="yes or no"):
        question.parse("maybe")


def test_an_untitled_single_select_enum_takes_a_number_or_the_value() -> None:
    question = one({"type": "string", "enum": ["red", "green", "blue"]})
    assert question.kind == "choice"
    assert [choice.title for choice in question.choices] == ["red", "green", "blue"]
    assert question.parse("2") == "green"
    assert question.parse("Blue") == "blue"
    with pytest.raises(InvalidAnswerError, match="not one of the choices"):
        question.parse("4")


def test_a_titled_single_select_enum_shows_titles_and_sends_the_const() -> None:
    question = one(
        {
            "type": "string",
            "oneOf": [{"const": "eu", "title": "Europe"}, {"const": "us", "title": "America"}],
            "default": "us",
        }
    )
    assert [(choice.value, choice.title) for choice in question.choices] == [
        ("eu", "Europe"),
        ("us", "America"),
    ]
    assert question.parse("europe") == "eu"
    assert question.parse("1") == "eu"
    assert question.prompt() == "f [America]: "
    assert question.parse("") == "us"


def test_a_legacy_enum_with_enum_names_shows_the_names() -> None:
    question = one({"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]})
    assert [choice.title for choice in question.choices] == ["Alpha", "Beta"]
    assert question.parse("beta") == "b"


def test_multi_select_enums_take_several_choices_within_their_counts() -> None:
    untitled = one(
        {
            "type": "array",
            "items": {"type": "string", "enum": ["x", "y", "z"]},
            "minItems": 1,
            "maxItems": 2,
        },
        required=True,
    )
    assert untitled.kind == "choices"
    assert untitled.hint() == "numbers from 1 to 3, comma-separated, 1 to 2 choices"
    assert untitled.parse("1, z") == ["x", "z"]
    assert untitled.parse("1,1") == ["x"]
    with pytest.raises(InvalidAnswerError, match="at most 2"):
        untitled.parse("1,2,3")
    titled = one(
        {
            "type": "array",
            "items": {
                "anyOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]
            },
            "default": ["s", "l"],
        }
    )
    assert titled.default_text() == "Small, Large"
    assert titled.parse("") == ["s", "l"]
    assert titled.parse("large") == ["l"]


def test_an_empty_answer_takes_the_default_skips_an_optional_field_and_refuses_a_required_one() -> (
    None
):
    assert one({"type": "integer", "default": 3}).parse("") == 3
    assert one({"type": "boolean", "default": False}).default_text() == "no"
    optional = one({"type": "string"})
    assert optional.parse(" ") is SKIP
    assert "optional" in optional.prompt()
    with pytest.raises(InvalidAnswerError, match="required"):
        one({"type": "string"}, required=True).parse("")


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("", "accept"),
        ("a", "accept"),
        ("Answer", "accept"),
        ("d", "decline"),
        ("decline", "decline"),
        ("C", "cancel"),
        ("x", None),
    ],
)
def test_the_first_choice_is_answer_decline_or_cancel(text: str, action: str | None) -> None:
    assert parse_action(text) == action
