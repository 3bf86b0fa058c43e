"""Wire messages: what is parsed, what is refused, and the public namespace."""

import json
from typing import Any

import pytest
from pydantic import BaseModel

import argentic_tools
from argentic_tools import (
    CallContext,
    ProtocolError,
    RegisterToolMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ToolCallRequest,
    ToolExecutionError,
    ToolNotFoundError,
    ToolTimeoutError,
    parse_message,
)
from argentic_tools._protocol.encoding import encode_fields
from argentic_tools._protocol.messages import encode


def test_public_namespace_is_pinned() -> None:
    assert len(argentic_tools.__all__) == len(set(argentic_tools.__all__))
    for name in argentic_tools.__all__:
        assert hasattr(argentic_tools, name), name
    assert set(argentic_tools.__all__) >= {
        "ToolManager",
        "Messager",
        "BaseTool",
        "tool",
        "ToolService",
        "TaskStatus",
        "RegisterToolMessage",
        "ToolRegisteredMessage",
        "UnregisterToolMessage",
        "TaskMessage",
        "TaskResultMessage",
        "TaskErrorMessage",
        "ToolCallRequest",
        "ToolsError",
    }


def test_error_result_parses_as_task_error_message_even_with_upper_case_status() -> None:
    payload = {
        "type": "TASK",
        "task_id": "t",
        "tool_id": "i",
        "tool_name": "n",
        "status": "FAILED",
        "error": "SMTP connection failed",
    }
    parsed = parse_message(json.dumps(payload))
    assert isinstance(parsed, TaskErrorMessage)
    assert parsed.status == TaskStatus.FAILED


def test_success_parses_as_result_and_unknown_fields_are_ignored() -> None:
    payload = {
        "type": "TASK",
        "task_id": "t",
        "tool_id": "i",
        "tool_name": "n",
        "status": "SUCCESS",
        "result": {"x": 1},
        "from_the_future": [1, 2],
    }
    parsed = parse_message(json.dumps(payload).encode())
    assert isinstance(parsed, TaskResultMessage)
    assert parsed.ok
    assert parsed.result == {"x": 1}
    assert parsed.raise_for_status() is parsed


def test_task_without_status_is_a_task() -> None:
    parsed = parse_message(encode(TaskMessage(tool_id="i", tool_name="n", arguments={"a": 1})))
    assert type(parsed) is TaskMessage


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"{", "not valid JSON"),
        (b"[1, 2]", "message type"),
        (b'{"type": "NOPE"}', "message type"),
        (b'{"type": "TASK", "tool_name": "x"}', "tool_id"),
        (b'{"type": "REGISTER_TOOL"}', "tool_name is required"),
        (b"\xff\xfe\xfa", "not valid JSON"),
        (b'{"type": "TASK", "tool_id": 5, "tool_name": "x"}', "tool_id"),
    ],
)
def test_malformed_payloads_are_refused_with_a_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        parse_message(payload)


def test_oversized_payload_is_refused_before_parsing() -> None:
    with pytest.raises(ProtocolError, match="exceeds"):
        parse_message(b" " * 101, max_bytes=100)


def test_registration_takes_its_name_from_the_spec() -> None:
    reg = parse_message(
        b'{"type": "REGISTER_TOOL", "tool_spec": {"name": "n", "description": "d"}}'
    )
    assert isinstance(reg, RegisterToolMessage)
    assert (reg.tool_name, reg.tool_manual) == ("n", "d")


def test_error_results_turn_into_typed_exceptions() -> None:
    def error(code: str | None, status: TaskStatus = TaskStatus.FAILED) -> TaskErrorMessage:
        return TaskErrorMessage(
            tool_id="i", tool_name="n", error="why", error_code=code, status=status
        )

    with pytest.raises(ToolNotFoundError) as caught:
        error("not_found").raise_for_status()
    assert caught.value.tool_name == "n"
    assert isinstance(caught.value, LookupError)
    with pytest.raises(TimeoutError):
        error(None, TaskStatus.TIMEOUT).raise_for_status()
    assert isinstance(error(None).to_exception(), ToolTimeoutError) is False
    assert isinstance(error("something new").to_exception(), ToolExecutionError)


def test_tool_call_request_defaults() -> None:
    request = ToolCallRequest(tool_id="x")
    assert request.arguments == {}
    assert request.timeout is None


# -- encode_fields: the task's JSON without building the model ---------------------------------

TASK_VALUES: list[dict[str, Any]] = [
    {"tool_id": "t", "tool_name": "e", "task_id": "x", "message_id": "x", "timestamp": 2.0},
    {
        "tool_id": "t",
        "tool_name": "echo",
        "task_id": "x",
        "message_id": "x",
        "source": "s",
        "timestamp": 1.5,
        "arguments": {"text": "é", "none": None, "deep": {"a": [1, None, float("nan")]}},
        "call_id": "c",
        "timeout_seconds": 30.0,
        "deadline": 31.5,
        "context": CallContext(thread_id="t1"),
        "report_progress": True,
        "stream": True,
        "reply_to": "agent/tools/response/t/me",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "tracestate": "k=v",
    },
]


@pytest.mark.parametrize("values", TASK_VALUES)
def test_encode_fields_writes_the_bytes_encode_writes(values: dict[str, Any]) -> None:
    assert encode_fields(TaskMessage, values) == encode(TaskMessage.model_construct(**values))


def test_encode_fields_fills_defaults_and_refuses_unknown_fields() -> None:
    written = json.loads(encode_fields(TaskMessage, {"tool_id": "t", "tool_name": "n"}))
    assert written["type"] == "TASK" and written["dry_run"] is False
    assert len(written["task_id"]) >= 16 and isinstance(written["timestamp"], float)
    with pytest.raises(KeyError, match="no field nonsense"):
        encode_fields(TaskMessage, {"tool_id": "t", "tool_name": "n", "nonsense": 1})
    with pytest.raises(ValueError, match="Unable to serialize"):
        encode_fields(TaskMessage, {"tool_id": "t", "tool_name": "n", "arguments": {"o": object()}})


class _Point(BaseModel):
    x: int
    label: str | None = None


RESULT_VALUES: list[dict[str, Any]] = [
    {"result": {"a": [1, 2.5, None], "b": "é"}},
    {"result": None},
    {"result": _Point(x=1)},
    {"result": [TaskStatus.SUCCESS, float("inf")], "chunks": 2, "result_in_chunks": True},
]


@pytest.mark.parametrize("extra", RESULT_VALUES)
def test_encode_fields_writes_a_result_as_encode_does(extra: dict[str, Any]) -> None:
    values = {
        "source": "s",
        "timestamp": 2.0,
        "message_id": "m",
        "task_id": "x",
        "tool_id": "t",
        "tool_name": "e",
        "arguments": {"q": 1},
        "dry_run": False,
        "status": TaskStatus.SUCCESS,
        "duration_ms": 0.5,
        **extra,
    }
    expected = encode(TaskResultMessage.model_construct(**values))
    assert encode_fields(TaskResultMessage, values) == expected
