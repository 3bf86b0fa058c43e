"""What the dashboard makes of the messages it sees, without a browser or a broker."""

import json

from argentic_tools import CallContext, TaskErrorMessage, TaskMessage, TaskResultMessage, TaskStatus
from argentic_tools.dashboard.calls import CallLog


def test_results_match_their_tasks_in_either_order_and_each_call_counts_once() -> None:
    log = CallLog()
    task = TaskMessage(
        tool_id="t1",
        tool_name="echo",
        arguments={"message": "a"},
        context=CallContext(thread_id="thread-1"),
        traceparent=f"00-{'ab' * 16}-{'cd' * 8}-01",
    )
    assert log.task(task, 100) is not None
    assert log.task(task, 100) is None  # sent again: the first sighting counts
    done = TaskResultMessage(
        task_id=task.task_id, tool_id="t1", tool_name="echo", status=TaskStatus.SUCCESS, result="a"
    )
    record = log.result(done, 100)
    assert record is not None and record.status == "success" and record.duration_ms is not None
    assert record.trace_id == "ab" * 16 and record.thread_id == "thread-1"
    assert log.result(done, 100) is None  # a repeated reply

    # A result seen before its task (they travel on different topics).
    failed = TaskErrorMessage(
        task_id="late-task", tool_id="t1", tool_name="echo", error="boom", error_code="x"
    )
    assert log.result(failed, 100) is not None
    log.task(TaskMessage(task_id="late-task", tool_id="t1", tool_name="echo", arguments={}), 50)
    late = log.get("late-task")
    assert late is not None and late.status == "error" and late.arguments == {}
    counters = log.counters()
    assert (counters["succeeded"], counters["failed"], counters["in_flight"]) == (1, 1, 0)


def test_a_result_too_large_to_keep_is_kept_as_a_preview() -> None:
    log = CallLog()
    big = "x" * 100_000
    done = TaskResultMessage(
        task_id="big", tool_id="t1", tool_name="echo", status=TaskStatus.SUCCESS, result=big
    )
    record = log.result(done, len(big) + 200)
    assert record is not None
    assert record.result["preview"] == json.dumps(big)[:2_000]
    assert "not_kept" in record.result
