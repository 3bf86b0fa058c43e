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
