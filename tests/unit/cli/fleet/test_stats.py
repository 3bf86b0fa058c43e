"""The arithmetic of ``stats`` and ``top``, in-process: rates, sorting and short numbers."""

import pytest

from argentic_tools import ToolStatsEntry, ToolStatsMessage
from argentic_tools.cli.fleet.stats import (
    FleetView,
    duration,
    error_rate,
    load,
    milliseconds,
    percent,
)


def answer(source: str, at: float, *entries: ToolStatsEntry) -> ToolStatsMessage:
    return ToolStatsMessage(
        source=source, timestamp=at, host="h", pid=1, version="1", tools=list(entries)
    )


def test_calls_per_second_come_from_two_answers_of_the_same_instance() -> None:
    view = FleetView("rate")
    view.update(
        [
            answer("a", 100.0, ToolStatsEntry(tool_id="x1", tool_name="x", calls=10)),
            answer("b", 500.0, ToolStatsEntry(tool_id="x2", tool_name="x", calls=0)),
        ]
    )
    assert view.summaries()[0].rate is None  # one answer is not a rate
    view.update(
        [
            answer("a", 102.0, ToolStatsEntry(tool_id="x1", tool_name="x", calls=30, errors=4)),
            # Each process's own clock: b's answers are 4 s apart whatever a's clock says.
            answer(
                "b",
                504.0,
                ToolStatsEntry(tool_id="x2", tool_name="x", calls=8, max_concurrency=2),
                ToolStatsEntry(tool_id="y1", tool_name="y", calls=1, p99_ms=9.0),
            ),
        ]
    )
    x, y = view.summaries()
    assert (x.name, x.replicas, x.calls, x.errors) == ("x", 2, 38, 4)
    assert x.rate == 10.0 + 2.0
    assert x.limit is None  # a has no limit
    assert (y.name, y.rate, y.p99_ms) == ("y", None, 9.0)  # y1 is new: no rate yet
    view.update([answer("a", 103.0, ToolStatsEntry(tool_id="x1", tool_name="x", calls=5))])
    assert view.summaries()[0].rate is None  # fewer calls: another process behind the id


def test_top_sorts_by_each_key_the_largest_first_and_by_name_on_ties() -> None:
    view = FleetView("name")
    view.update(
        [
            answer(
                "a",
                1.0,
                ToolStatsEntry(tool_id="1", tool_name="b", calls=5, errors=1, p99_ms=1.0),
                ToolStatsEntry(tool_id="2", tool_name="a", calls=1, errors=1, p99_ms=7.0),
                ToolStatsEntry(tool_id="3", tool_name="c", calls=9),
            )
        ]
    )
    orders = {}
    for key in ("name", "calls", "p99", "errors", "rate"):
        view.sort = key
        orders[key] = [summary.name for summary in view.summaries()]
    assert orders == {
        "name": ["a", "b", "c"],
        "calls": ["c", "b", "a"],
        "p99": ["a", "b", "c"],
        "errors": ["a", "b", "c"],
        "rate": ["a", "b", "c"],
    }
    with pytest.raises(ValueError, match="sort by one of"):
        FleetView("speed")


def test_numbers_are_short_and_say_when_there_is_nothing_to_show() -> None:
    assert [milliseconds(v) for v in (None, 0.4321, 12.345, 1234.5)] == [
        "-",
        "0.43",
        "12.3",
        "1234",
    ]
    assert (percent(1, 3), percent(0, 0)) == ("33.3", "-")
    assert (load(2, 8), load(2, None)) == ("2/8", "2")
    assert [duration(s) for s in (5, 65, 3700, 90061)] == ["5s", "1m05s", "1h01m", "1d01h"]


def test_the_error_rate_leaves_cancelled_calls_out() -> None:
    assert error_rate(0, 5, 2) == "0.0"  # two cancelled, three succeeded: no error
    assert error_rate(1, 5, 1) == "25.0"  # one error among the four not cancelled
    assert error_rate(0, 2, 2) == "-"  # every call cancelled: no rate to show
    view = FleetView("errors")
    view.update(
        [
            answer(
                "a",
                1.0,
                ToolStatsEntry(tool_id="1", tool_name="x", calls=5, errors=1, cancelled=2),
                ToolStatsEntry(tool_id="2", tool_name="x", calls=3, cancelled=1),
            )
        ]
    )
    (summary,) = view.summaries()
    assert (summary.calls, summary.errors, summary.cancelled) == (8, 1, 3)
