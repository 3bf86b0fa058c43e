"""A call's questions, answers and log records as the dashboard keeps them, within bounds."""

from argentic_tools import LogRecord, TaskMessage, ToolAnswerMessage, ToolAskMessage, ToolLogMessage
from argentic_tools.dashboard.calls import CallLog
from argentic_tools.dashboard.exchanges import (
    EXCHANGES_PER_CALL,
    MESSAGE_BYTES,
    KeptExchanges,
)

QUESTION = {"message": "Pay 30 EUR?", "requestedSchema": {"type": "object", "properties": {}}}


def ask(task_id: str, ask_id: str, request: dict[str, object] | None = None) -> ToolAskMessage:
    return ToolAskMessage(
        task_id=task_id, tool_id="t1", ask_id=ask_id, kind="elicit", request=request or QUESTION
    )


def log(task_id: str, message: str) -> ToolLogMessage:
    return ToolLogMessage(
        task_id=task_id, tool_id="t1", record=LogRecord(level="info", message=message)
    )


def test_questions_answers_and_records_of_a_seen_call_are_kept_in_order() -> None:
    calls = CallLog()
    task = TaskMessage(tool_id="t1", tool_name="pay", arguments={})
    calls.task(task, 100)
    assert calls.exchange(ask(task.task_id, "a1"), 200) is not None
    assert calls.exchange(log(task.task_id, "working"), 100) is not None
    answer = ToolAnswerMessage(
        task_id=task.task_id, ask_id="a1", result={"action": "accept", "content": {"ok": True}}
    )
    record = calls.exchange(answer, 100)
    assert record is not None
    assert record.summary()["exchanges"] == 2
    shapes = record.detail()["exchanges"]
    assert [(shape["kind"], shape.get("ask_id")) for shape in shapes] == [
        ("elicit", "a1"),
        ("log", None),
    ]
    assert shapes[0]["request"] == QUESTION
    assert shapes[0]["answer"] == {"action": "accept", "content": {"ok": True}}
    assert shapes[1]["record"]["message"] == "working"
    assert all(isinstance(shape["at_ms"], float) for shape in shapes)
    # An answer to no question kept, and anything of a call never seen, is left alone.
    assert calls.exchange(answer, 100) is None
    assert calls.exchange(log("unknown-task", "x"), 100) is None


def test_an_unanswerable_question_keeps_the_callers_error() -> None:
    kept = KeptExchanges()
    kept.asked(ask("t", "a1"), 100, 1.0)
    kept.answered(ToolAnswerMessage(task_id="t", ask_id="a1", error="no handler"), 100)
    assert kept.shapes()[0]["error"] == "no handler"


def test_past_its_bounds_a_call_counts_exchanges_and_keeps_large_ones_as_their_size() -> None:
    kept = KeptExchanges()
    assert kept.asked(
        ask("t", "big", {"message": "Look", "x": "y" * MESSAGE_BYTES}), MESSAGE_BYTES + 1, 0.0
    )
    assert kept.shapes()[0]["request"] == {
        "__truncated__": True,
        "bytes": MESSAGE_BYTES + 1,
        "message": "Look",
    }
    for number in range(EXCHANGES_PER_CALL + 5):
        kept.logged(log("t", f"line {number}"), 100, 1.0)
    shapes = kept.shapes()
    assert len(kept) == EXCHANGES_PER_CALL + 6
    assert len(shapes) == EXCHANGES_PER_CALL + 1
    assert shapes[-1]["record"]["message"] == "6 more exchanges not kept by the dashboard"
