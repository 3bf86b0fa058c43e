"""The tool side's at-most-once record: a finished reply kept for a caller that comes back."""

from argentic_tools._tools.records import task_record
from argentic_tools._tools.records.task_record import RECENT_TASKS, TaskRecord


def test_a_finished_reply_outlives_newer_tasks_for_its_retention() -> None:
    record = TaskRecord(retention=300)
    record.remember("first", task_record.RUNNING, 0.0)  # no deadline of its own
    record.finished("first", b"reply")
    for i in range(RECENT_TASKS + 10):
        record.remember(f"t{i}", task_record.RUNNING, 0.0)
    assert record.get("first") == b"reply"  # kept: its retention has not passed

    forgetful = TaskRecord(retention=0)
    forgetful.remember("first", task_record.RUNNING, 0.0)
    forgetful.finished("first", b"reply")
    for i in range(RECENT_TASKS + 10):
        forgetful.remember(f"t{i}", task_record.RUNNING, 0.0)
    assert forgetful.get("first") is None  # the oldest beyond the bound, nothing holds it
