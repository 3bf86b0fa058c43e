"""The task executor's log records carry the call's fields: tool, task id, trace id, user."""

from argentic_tools import CallContext, TaskMessage
from argentic_tools._tools.serving.executor import call_fields


def test_call_fields_name_the_tool_the_task_and_the_callers_trace_and_user() -> None:
    task = TaskMessage(
        tool_id="t-1",
        tool_name="add",
        task_id="task-9",
        arguments={},
        context=CallContext(trace_id="trace-3", user_id="ann"),
    )
    assert call_fields("add", task) == {
        "tool": "add",
        "task_id": "task-9",
        "trace_id": "trace-3",
        "user": "ann",
    }


def test_call_fields_without_a_context_are_the_tool_and_the_task() -> None:
    task = TaskMessage(tool_id="t-1", tool_name="add", task_id="task-9", arguments={})
    assert call_fields("add", task) == {"tool": "add", "task_id": "task-9"}
