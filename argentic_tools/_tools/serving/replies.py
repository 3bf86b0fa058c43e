"""Error replies: one per failed task, naming the tool and the cause, and always sendable."""

import json
from typing import Any

from ..._protocol.messages import TaskErrorMessage, TaskMessage, TaskStatus, encode

ERROR_TEXT_LIMIT = 4096
"""Characters of an error text kept when the whole reply would exceed the payload limit."""


def error_reply(
    task: TaskMessage,
    *,
    tool_id: str,
    tool_name: str,
    source: str,
    max_bytes: int,
    text: str,
    code: str,
    details: Any = None,
    trace: str | None = None,
) -> bytes:
    """The encoded error reply to ``task``: ``Tool '<name>' failed: <text>``, code ``code``.

    ``cancelled`` and ``timeout`` get their own statuses, every other code ``failed``.
    A reply over ``max_bytes`` (an error quoting a huge input) keeps the start of the
    text, says that it was cut, and drops the echoed arguments and details, so it
    still reaches its caller.
    """
    status = {"cancelled": TaskStatus.CANCELLED, "timeout": TaskStatus.TIMEOUT}.get(
        code, TaskStatus.FAILED
    )
    message = TaskErrorMessage(
        task_id=task.task_id,
        tool_id=tool_id,
        tool_name=tool_name,
        arguments=task.arguments,
        call_id=task.call_id,
        status=status,
        error=f"Tool '{tool_name}' failed: {text}",
        error_code=code,
        details=_jsonable(details),
        traceback=trace,
        source=source,
    )
    data = encode(message)
    if len(data) <= max_bytes:
        return data
    shown = message.error[:ERROR_TEXT_LIMIT]
    message.error = (
        f"{shown}... (truncated: the error was {len(message.error):,} characters and "
        f"the reply {len(data):,} bytes, over the {max_bytes:,}-byte limit)"
    )
    message.arguments = None
    message.details = None
    message.traceback = None if trace is None else trace[-ERROR_TEXT_LIMIT:]
    return encode(message)


def _jsonable(value: Any) -> Any:
    if value is None:
        return None
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
