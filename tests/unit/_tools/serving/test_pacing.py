"""The registration window of a connection (no broker)."""

import anyio
import anyio.lowlevel
import pytest

from argentic_tools import Messager
from argentic_tools._tools.serving.pacing import REGISTRATIONS_IN_FLIGHT, RegistrationWindow

pytestmark = pytest.mark.anyio


async def test_the_window_lets_no_more_registrations_out_at_once_than_its_size() -> None:
    window = RegistrationWindow(size=3)
    out = peak = done = 0

    async def register() -> None:
        nonlocal out, peak, done
        async with window.slot():
            out += 1
            peak = max(peak, out)
            for _ in range(3):
                await anyio.lowlevel.checkpoint()  # others run meanwhile
            out -= 1
            done += 1

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(register)
    assert (peak, done) == (3, 20)


def test_every_tool_on_a_connection_shares_its_one_window() -> None:
    messager = Messager(will_topic=None)
    window = RegistrationWindow.of(messager)
    assert RegistrationWindow.of(messager) is window
    assert window.size == REGISTRATIONS_IN_FLIGHT and not window.heard
    assert RegistrationWindow.of(Messager(will_topic=None)) is not window
