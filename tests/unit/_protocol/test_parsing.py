"""Parsing wire messages: what is parsed, what is refused, and why."""

import json

import pytest

from argentic_tools import (
    ProtocolError,
    RegisterToolMessage,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    parse_message,
)
from argentic_tools._protocol.messages import encode


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
