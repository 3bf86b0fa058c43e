"""What the dashboard makes of the messages it sees, without a browser or a broker."""

import json
import time

from argentic_tools import (
    CallContext,
    EmbeddedResource,
    Image,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    Text,
)
from argentic_tools.dashboard.calls import CONTENT_BYTES, PREVIEW_CHARS, CallLog, kept_content


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


def overdue(log: CallLog, task_id: str, timeout: float = 5.0) -> None:
    """A task seen long enough ago that its caller has surely given up."""
    task = TaskMessage(
        task_id=task_id, tool_id="t1", tool_name="echo", arguments={}, timeout_seconds=timeout
    )
    record = log.task(task, 10)
    assert record is not None and record.started is not None
    record.started -= timeout + 2


def test_a_call_without_a_result_while_no_message_was_lost_timed_out() -> None:
    log = CallLog()
    overdue(log, "quiet")
    assert [(r.task_id, r.status) for r in log.sweep()] == [("quiet", "timeout")]
    counters = log.counters()
    assert (counters["timed_out"], counters["not_seen"], counters["lost"]) == (1, 0, 0)


def test_while_messages_are_lost_a_call_without_a_result_is_unknown_not_timed_out() -> None:
    log = CallLog()
    log.observing(since=time.monotonic() - 60)
    # A result whose task never arrives, though it was sent while the dashboard watched.
    orphan = TaskResultMessage(
        task_id="lost-task",
        tool_id="t1",
        tool_name="echo",
        status=TaskStatus.SUCCESS,
        result="a",
        duration_ms=3.0,
    )
    assert log.result(orphan, 10) is not None
    assert log.sweep() == []  # its task may still come: not yet a loss
    assert log.counters()["lost"] == 0
    log._orphans[0] = (time.monotonic() - 10, log._orphans[0][1])  # time passes
    assert log.sweep() == []
    assert log.counters()["lost"] == 1
    overdue(log, "lost-result")
    ended = log.sweep()
    assert [(r.task_id, r.status, r.error_code) for r in ended] == [
        ("lost-result", "unknown", "result_not_seen")
    ]
    assert "missed messages from the broker (1 so far)" in (ended[0].error or "")
    counters = log.counters()
    assert (counters["timed_out"], counters["not_seen"], counters["lost"]) == (0, 1, 1)
    # Its result after all: it counts, once.
    late = TaskResultMessage(
        task_id="lost-result", tool_id="t1", tool_name="echo", status=TaskStatus.SUCCESS, result=1
    )
    record = log.result(late, 10)
    assert record is not None and record.status == "success"
    assert log.result(late, 10) is None
    counters = log.counters()
    assert (counters["succeeded"], counters["not_seen"]) == (2, 0)
    assert [r.task_id for r in log.recent(10)].count("lost-result") == 1


def test_a_result_whose_task_comes_later_or_was_sent_before_the_dashboard_is_no_loss() -> None:
    log = CallLog()
    log.observing(since=time.monotonic() - 60)
    early = TaskResultMessage(
        task_id="early", tool_id="t1", tool_name="echo", status=TaskStatus.SUCCESS, duration_ms=1.0
    )
    log.result(early, 10)
    log.task(TaskMessage(task_id="early", tool_id="t1", tool_name="echo", arguments={}), 10)
    log.observing()  # subscribed just now: a result of a task sent a minute ago
    before = TaskResultMessage(
        task_id="before",
        tool_id="t1",
        tool_name="echo",
        status=TaskStatus.SUCCESS,
        duration_ms=60_000.0,
    )
    log.result(before, 10)
    log._orphans = type(log._orphans)(  # time passes
        (seen - 10, record) for seen, record in log._orphans
    )
    log.sweep()
    assert log.counters()["lost"] == 0


def test_a_cancelled_call_is_no_failure_in_the_latency_chart() -> None:
    log = CallLog()
    for task_id, status in (("c1", TaskStatus.CANCELLED), ("e1", TaskStatus.ERROR)):
        log.task(TaskMessage(task_id=task_id, tool_id="t1", tool_name="sleep", arguments={}), 10)
        log.result(
            TaskErrorMessage(
                task_id=task_id, tool_id="t1", tool_name="sleep", status=status, error="stop"
            ),
            10,
        )
    buckets = log.latency()["sleep"]  # one, or two when the calls straddle a bucket's end
    assert (sum(b[1] or 0 for b in buckets), sum(b[4] or 0 for b in buckets)) == (2, 1)
    counters = log.counters()
    assert (counters["cancelled"], counters["failed"]) == (1, 1)


def test_content_blocks_are_kept_for_the_details_within_the_cap() -> None:
    small = Image(b"GIF89a", mime_type="image/gif")
    large = Image(b"\x89PNG\r\n\x1a\n" + bytes(CONTENT_BYTES))
    blob = EmbeddedResource("file:///a.bin", blob=bytes(10), mime_type="application/zip")
    long_text = Text("x" * (CONTENT_BYTES + 1))
    done = TaskResultMessage(
        tool_id="t1",
        tool_name="media",
        status=TaskStatus.SUCCESS,
        result="...",
        content=[small, large, blob, long_text],
    )
    record = CallLog().result(done, 100)
    assert record is not None
    assert record.detail()["content"] == [
        small.wire(),
        {
            "type": "image",
            "mimeType": "image/png",
            "__truncated__": True,
            "bytes": CONTENT_BYTES + 8,
        },
        blob.wire(),  # small enough, after the one that was not
        {
            "type": "text",
            "text": "x" * PREVIEW_CHARS,
            "__truncated__": True,
            "bytes": CONTENT_BYTES + 1,
        },
    ]
    assert kept_content(None) is None
