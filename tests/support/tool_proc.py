"""A tool process for tests: ``python -m tests.support.tool_proc --broker URL --topic-prefix P``.

Serves a handful of tools whose behaviour the tests rely on (echo, sleep,
fail, an unserialisable result, a context echo) through the public
``serve_main`` entry point, exactly as a user's tool process would.
"""

import os
import sys
from typing import Annotated, Any

import anyio
from pydantic import Field

from argentic_tools import ToolContext, ToolError, serve_main, tool


@tool
def echo(message: Annotated[str, Field(description="Text to send back")]) -> str:
    """Return the message unchanged."""
    return message


@tool
async def sleep(seconds: Annotated[float, Field(ge=0, le=3600)]) -> float:
    """Sleep for the given number of seconds, then return it."""
    await anyio.sleep(seconds)
    return seconds


@tool
def fail(reason: str = "boom") -> str:
    """Always fail with the given reason."""
    raise ToolError(f"failing on purpose: {reason}")


@tool
def crash() -> str:
    """Raise an unexpected exception."""
    raise ZeroDivisionError("division by zero")


@tool
def unserialisable() -> Any:
    """Return an object that JSON cannot represent."""
    return object()


@tool
def whoami(context: ToolContext) -> dict[str, Any]:
    """Return the call's context and this process id."""
    return {
        "pid": os.getpid(),
        "thread_id": context.thread_id,
        "trace_id": context.trace_id,
        "user_id": context.user_id,
        "call_id": context.call_id,
    }


_executions = 0


@tool
def count() -> int:
    """Return how many times this tool has executed in this process."""
    global _executions
    _executions += 1
    return _executions


TOOLS = [echo, sleep, fail, crash, unserialisable, whoami, count]


@tool(name="Email Sender")
def email_sender(to: str, copies: int = 1) -> str:
    """Pretend to send an email (a name with a space: exports spell it Email_Sender)."""
    return f"sent to {to} x{copies}"


@tool
def convert_currency_at_the_historical_rate(amount: float, currency: str) -> str:
    """Convert an amount of money into euros at the rate of the day it was spent.

    A long name and a description of paragraphs: what `argentic-tools list` has to fit
    into 80 columns without breaking the name.
    """
    return f"{amount} {currency}"


def main(argv: list[str] | None = None) -> None:
    """Serve the test tools until SIGTERM/SIGINT."""
    serve_main(TOOLS, argv, prog="tests.support.tool_proc")


if __name__ == "__main__":
    main(sys.argv[1:])
