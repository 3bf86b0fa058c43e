"""Pure-logic tests of the sleep and echo test tools (called directly, no broker)."""

import math

import anyio
import pytest

from argentic_tools import ToolError
from tool_clients.slow import MAX_SLEEP_SECONDS, echo, sleep


def test_sleep_zero_returns_slept_seconds() -> None:
    assert anyio.run(sleep, 0) == {"slept": 0}


def test_sleep_is_still_waiting_at_a_much_shorter_deadline_and_done_before_a_longer_one() -> None:
    async def run() -> tuple[bool, dict[str, float]]:
        # Order of events, not a stopwatch: a 60 s sleep has not returned when a 0.01 s
        # deadline fires, and a 0.01 s sleep returns before a 60 s one does.
        with anyio.move_on_after(0.01) as short:
            await sleep(60)
        with anyio.fail_after(60):
            slept = await sleep(0.01)
        return short.cancelled_caught, slept

    assert anyio.run(run) == (True, {"slept": 0.01})


def test_sleep_is_cancelled_by_the_callers_deadline_and_returns_nothing() -> None:
    async def run() -> tuple[bool, object]:
        outcome: object = "never returned"
        with anyio.move_on_after(0.05) as scope:
            outcome = await sleep(MAX_SLEEP_SECONDS)
        return scope.cancelled_caught, outcome

    assert anyio.run(run) == (True, "never returned")


@pytest.mark.parametrize("seconds", [-1, MAX_SLEEP_SECONDS + 1, math.inf, math.nan])
def test_sleep_rejects_out_of_range_seconds(seconds: float) -> None:
    with pytest.raises(ToolError, match="seconds must be between 0 and 3600"):
        anyio.run(sleep, seconds)


@pytest.mark.parametrize("message", ["hello", "", "üñíçødé ✓", "line1\nline2"])
def test_echo_returns_message_unchanged(message: str) -> None:
    assert echo(message) == message
