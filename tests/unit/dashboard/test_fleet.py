"""The fleet as the dashboard shows it, from a registry and stats answers, without a broker."""

from datetime import UTC, datetime

from argentic_tools import ToolStatsEntry, ToolStatsMessage
from argentic_tools.dashboard.fleet import FleetView


def registry(registered_at: float) -> dict[str, dict[str, object]]:
    when = datetime.fromtimestamp(registered_at, UTC).isoformat()
    return {
        "t1": {"name": "sleep", "source_client_id": "p1", "registered_at": when},
        "t2": {"name": "sleep", "source_client_id": "p2", "registered_at": when},
    }


def test_an_instance_whose_process_gives_no_stats_counts_its_uptime_from_its_registration() -> None:
    fleet = FleetView()
    fleet.sync(registry(1000.0), now=1010.0)
    fleet.answered(
        [ToolStatsMessage(source="p1", timestamp=1010.0, host="h", pid=1, uptime_seconds=300.0)],
        now=1010.0,
    )
    (tool,) = fleet.view(now=1010.0)
    by_source = {replica["source"]: replica for replica in tool["replicas"]}
    assert (by_source["p1"]["started_at"], by_source["p1"]["uptime_from"]) == (710.0, "stats")
    assert (by_source["p2"]["started_at"], by_source["p2"]["uptime_from"]) == (
        1000.0,
        "registration",
    )
    assert tool["started_at"] == 710.0  # the longest-serving replica's


def test_cancelled_calls_are_shown_apart_and_left_out_of_the_error_rate() -> None:
    fleet = FleetView()
    fleet.sync(registry(1000.0), now=1010.0)
    entries = {
        "p1": ToolStatsEntry(tool_id="t1", tool_name="sleep", calls=5, errors=1, cancelled=3),
        "p2": ToolStatsEntry(tool_id="t2", tool_name="sleep", calls=2, cancelled=2),
    }
    fleet.answered(
        [
            ToolStatsMessage(source=source, timestamp=1010.0, host="h", pid=1, tools=[entry])
            for source, entry in entries.items()
        ],
        now=1010.0,
    )
    (tool,) = fleet.view(now=1010.0)
    assert (tool["calls"], tool["errors"], tool["cancelled"]) == (7, 1, 5)
    assert tool["error_rate"] == 0.5  # one error among the two calls not cancelled
    rates = {replica["source"]: replica["error_rate"] for replica in tool["replicas"]}
    assert rates == {"p1": 0.5, "p2": None}  # every call of p2 was cancelled: no rate
