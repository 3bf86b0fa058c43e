"""A call's exchange with its caller as ``history`` prints it."""

from typing import Any

from argentic_tools.cli.calling.exchange_text import exchange_lines, exchange_summary


def test_every_outcome_of_a_question_reads_as_what_happened() -> None:
    exchanges: list[dict[str, Any]] = [
        {
            "kind": "elicit",
            "at_ms": 1.0,
            "request": {"message": "Go?"},
            "answer": {"action": "cancel"},
        },
        {"kind": "roots", "at_ms": 2.0, "request": {}, "answer": {"roots": [{"uri": "file:///w"}]}},
        {"kind": "sample", "at_ms": 3.0, "request": {"messages": []}},
        {"kind": "log", "record": {"level": "nonsense"}},
    ]
    assert [line.plain.rstrip() for line in exchange_lines(exchanges, "t")] == [
        "   0.001 s  asked Go?",
        "            cancelled",
        "   0.002 s  asked for the caller's roots",
        "            roots: file:///w",
        "   0.003 s  asked for a completion:",
        "            no answer",
        '            {"level": "nonsense"}',
    ]
    assert exchange_summary(exchanges) == "3 questions, 1 log record"
    assert exchange_summary(None) == exchange_summary([]) == ""
