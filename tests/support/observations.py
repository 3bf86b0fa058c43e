"""Observations as a manager records them, made up for tests of what reads and stores them."""

import time
from typing import Any

from argentic_tools import Observation


def observation(
    number: int, *, ended: float | None = None, arguments: Any = None, **fields: Any
) -> Observation:
    values: dict[str, Any] = {
        "call_id": f"call-{number}",
        "task_id": f"task-{number}",
        "tool_name": "a",
        "tool_id": "a-1",
        "thread_id": "thread-1",
        "trace_id": None,
        "status": "success",
        "error_code": None,
        "duration_ms": 2.0,
        "arguments": {"n": number} if arguments is None else arguments,
        "result": number,
        "timestamp": time.time() if ended is None else ended,
    }
    values.update(fields)
    return Observation(**values)


EXCHANGES: list[dict[str, Any]] = [
    {
        "kind": "elicit",
        "at_ms": 12.5,
        "ask_id": "a1",
        "request": {
            "message": "Pay 30 EUR to <b>ACME</b>?",
            "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}},
        },
        "answer": {"action": "accept", "content": {"confirm": True}},
    },
    {
        "kind": "sample",
        "at_ms": 20.0,
        "ask_id": "a2",
        "request": {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarise the invoice"}},
                {
                    "role": "user",
                    "content": {
                        "type": "image",
                        "mimeType": "image/png",
                        "__truncated__": True,
                        "bytes": 3000,
                    },
                },
            ],
            "maxTokens": 20,
        },
        "answer": {
            "role": "assistant",
            "content": {"type": "text", "text": "An invoice."},
            "model": "m1",
        },
    },
    {
        "kind": "elicit",
        "at_ms": 25.0,
        "ask_id": "a3",
        "request": {"message": "Sure?"},
        "answer": {"action": "decline"},
    },
    {
        "kind": "elicit",
        "at_ms": 30.0,
        "ask_id": "a4",
        "request": {"message": "Again?"},
        "error": "no person",
    },
    {
        "kind": "log",
        "at_ms": 40.0,
        "record": {
            "level": "warning",
            "message": "paid late",
            "data": {"days": 2},
            "logger": "bank",
        },
    },
]
"""A call's exchange with its caller, as an observation carries it: a question answered, a
completion with an image a history kept without its data, a question declined, one the
caller could not answer, and a log record."""
