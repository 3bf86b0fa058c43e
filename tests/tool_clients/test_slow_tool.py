"""Pure-logic tests of the sleep and echo test tools (called directly, no broker)."""

import math
import time

import anyio
import pytest

from argentic_tools import ToolError
from tool_clients.slow import MAX_SLEEP_SECONDS, echo, sleep


def test_sleep_zero_returns_slept_seconds() -> None:
    assert anyio.run(sleep, 0) == {"slept": 0}


def test_sleep_waits_roughly_the_requested_time() -> None:
    start = time.monotonic()
    assert anyio.run(sleep, 0.05) == {"slept": 0.05}
    assert time.monotonic() - start >= 0.04


def test_sleep_is_cancellable() -> None:
    async def run() -> bool:
        with anyio.move_on_after(0.05) as scope:
            await sleep(MAX_SLEEP_SECONDS)
        return scope.cancelled_caught

    start = time.monotonic()
    assert anyio.run(run) is True
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("seconds", [-1, MAX_SLEEP_SECONDS + 1, math.inf, math.nan])
def test_sleep_rejects_out_of_range_seconds(seconds: float) -> None:
    with pytest.raises(ToolError, match="seconds must be between 0 and 3600"):
        anyio.run(sleep, seconds)


@pytest.mark.parametrize("message", ["hello", "", "üñíçødé ✓", "line1\nline2"])
def test_echo_returns_message_unchanged(message: str) -> None:
    assert echo(message) == message
