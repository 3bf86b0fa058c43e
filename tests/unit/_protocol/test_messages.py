"""Wire messages: error results turn into typed exceptions; a call request's defaults."""

import pytest

from argentic_tools import (
    TaskErrorMessage,
    TaskStatus,
    ToolCallRequest,
    ToolExecutionError,
    ToolNotFoundError,
    ToolTimeoutError,
)


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
