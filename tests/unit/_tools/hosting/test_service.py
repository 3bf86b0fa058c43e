"""What a ToolService refuses to build: nothing connects before the refusal."""

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from argentic_tools import BaseTool, ToolDefinitionError, ToolService, tool


@tool
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def test_tool_with_a_name_a_manager_would_refuse_cannot_even_be_constructed() -> None:
    def fine() -> None:
        """Fine."""

    class Named(BaseTool):
        def __init__(self, name: str = "bad/name") -> None:
            super().__init__(name, "Bad.", "", NoArguments)

        async def _execute(self, **kwargs: Any) -> Any:
            return None

    with pytest.raises(ToolDefinitionError, match=r"forbidden character '#'"):
        tool(name="bad#name")(fine)
    with pytest.raises(ToolDefinitionError, match=r"forbidden character '/'"):
        Named()
    # A class handed to a service is instantiated there, and refused there: nothing connects.
    with pytest.raises(ToolDefinitionError, match=r"tool 'bad/name'"):
        ToolService("mqtt://127.0.0.1:9", [Named])


def test_two_tools_with_the_same_name_in_one_service_raise_value_error() -> None:
    @tool(name="echo")
    def another_echo(message: str) -> str:
        """Also echo."""
        return message

    with pytest.raises(ValueError, match=r"tool names must be unique within a service: \['echo'\]"):
        ToolService("mqtt://127.0.0.1:9", [echo, another_echo])
    with pytest.raises(ValueError, match=r"unique"):
        ToolService("mqtt://127.0.0.1:9", [echo, echo])


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan")])
def test_a_confirm_timeout_that_is_not_positive_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match=r"confirm_timeout must be > 0 seconds"):
        ToolService("mqtt://127.0.0.1:9", [echo], confirm_timeout=seconds)
