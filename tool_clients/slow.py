"""Test-helper tools microservice: ``sleep`` (async, slow on purpose) and ``echo``.

These tools exist to exercise the framework itself: timeouts, cancellation and
concurrency limits (``sleep``) and plain request/response round trips (``echo``). Both
are served by the same process.

Run it with::

    python -m tool_clients.slow --broker mqtt://127.0.0.1:1883
"""

import math
from typing import Annotated

import anyio
from pydantic import Field

from argentic_tools import ToolError, serve_main, tool

__all__ = ["MAX_SLEEP_SECONDS", "echo", "main", "sleep"]

MAX_SLEEP_SECONDS = 3600.0


@tool(
    tags=["testing"],
    examples=[{"input": {"seconds": 0.5}, "output": {"slept": 0.5}}],
)
async def sleep(
    seconds: Annotated[
        float,
        Field(ge=0, le=MAX_SLEEP_SECONDS, description="How long to wait, in seconds (0-3600)."),
    ],
) -> dict[str, float]:
    """Wait for the given number of seconds, then report how long was waited.

    Useful to test timeouts and cancellation. The wait does not block other calls.

    Args:
        seconds: Duration of the wait, from 0 to 3600 seconds.

    Returns:
        A dict {"slept": seconds}.

    """
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_SLEEP_SECONDS:
        raise ToolError(f"seconds must be between 0 and {MAX_SLEEP_SECONDS:g}, got {seconds!r}")
    await anyio.sleep(seconds)
    return {"slept": seconds}


@tool(
    tags=["testing"],
    examples=[{"input": {"message": "hello"}, "output": "hello"}],
)
def echo(
    message: Annotated[str, Field(description="Text to send back unchanged.")],
) -> str:
    """Return the given message unchanged.

    Useful to check that the tool service is reachable and round trips work.

    Args:
        message: The text to echo.

    Returns:
        The same text.

    """
    return message


def main(argv: list[str] | None = None) -> None:
    """Serve the ``sleep`` and ``echo`` tools until SIGTERM or SIGINT."""
    serve_main(
        [sleep, echo],
        argv,
        prog="python -m tool_clients.slow",
        description="Serve the 'sleep' and 'echo' test tools over MQTT.",
    )


if __name__ == "__main__":
    main()
