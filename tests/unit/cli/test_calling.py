"""Arguments on the command line: one JSON object, or NAME=VALUE pairs typed by the schema."""

import pytest

from argentic_tools.cli.calling import parse_arguments, typed_pairs
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
