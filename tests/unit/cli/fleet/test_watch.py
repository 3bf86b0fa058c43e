"""``watch``'s filter, in-process."""

from argentic_tools import RegisterToolMessage, TaskMessage, ToolRegisteredMessage
from argentic_tools.cli.fleet.watch import WatchFilter


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
