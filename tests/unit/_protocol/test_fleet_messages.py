"""The fleet's wire messages: what a stats answer means, from newer and older peers."""

from argentic_tools import ToolStatsEntry


def test_a_stats_entry_counts_cancelled_calls_apart_from_errors() -> None:
    entry = ToolStatsEntry.model_validate(
        {
            "tool_id": "t1",
            "tool_name": "sleep",
            "calls": 6,
            "errors": 1,
            "cancelled": 2,
            "outcomes": {"success": 3, "cancelled": 2, "execution_error": 1},
        }
    )
    assert (entry.errors, entry.cancelled) == (1, 2)


def test_an_older_peers_cancelled_calls_are_moved_out_of_its_errors() -> None:
    # Before the ``cancelled`` count, a cancelled call was counted as an error.
    entry = ToolStatsEntry.model_validate(
        {
            "tool_id": "t1",
            "tool_name": "sleep",
            "calls": 6,
            "errors": 3,
            "outcomes": {"success": 3, "cancelled": 2, "execution_error": 1},
        }
    )
    assert (entry.errors, entry.cancelled) == (1, 2)
