"""encode_fields: a message's JSON written from its field values, without building the model."""

import json
from typing import Any

import pytest
from pydantic import BaseModel

from argentic_tools import CallContext, TaskMessage, TaskResultMessage, TaskStatus
from argentic_tools._protocol.encoding import constructed, encode_fields
from argentic_tools._protocol.messages import encode

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


def test_constructed_equals_model_construct_with_fresh_ids() -> None:
    values: dict[str, Any] = {
        "task_id": "x",
        "tool_id": "t",
        "tool_name": "e",
        "arguments": {"a": 1},
    }
    built = constructed(TaskMessage, values)
    reference = TaskMessage.model_construct(**values)
    assert built.model_dump(exclude={"timestamp", "message_id"}) == reference.model_dump(
        exclude={"timestamp", "message_id"}
    )
    assert built.message_id != constructed(TaskMessage, values).message_id
    assert built.arguments is values["arguments"]


def test_constructed_refuses_a_model_with_a_mutable_default() -> None:
    class Listing(BaseModel):
        items: list[int] = []

    with pytest.raises(TypeError, match=r"Listing\.items"):
        constructed(Listing, {})
