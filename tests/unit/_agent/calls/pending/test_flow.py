"""Flow control: never more tasks outstanding at a tool instance than it advertises."""

import asyncio

import anyio
import pytest

from argentic_tools._agent.calls.pending.flow import Window

pytestmark = pytest.mark.anyio


async def test_a_full_window_queues_callers_first_come_first_served() -> None:
    window = Window(1)
    await window.acquire()
    order: list[int] = []

    async def take(n: int) -> None:
        await window.acquire()
        order.append(n)

    first = asyncio.create_task(take(1))
    await asyncio.sleep(0)  # let the first caller queue before the second
    second = asyncio.create_task(take(2))
    await asyncio.sleep(0)
    assert window.waiting == 2 and order == []
    window.release()
    with anyio.fail_after(5):
        await first
    assert order == [1] and window.in_use == 1
    window.release()
    with anyio.fail_after(5):
        await second
    assert order == [1, 2]


async def test_a_cancelled_waiter_passes_its_slot_on() -> None:
    window = Window(1)
    await window.acquire()
    waiter = asyncio.create_task(window.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    window.release()
    assert window.in_use == 0
    with anyio.fail_after(5):
        await window.acquire()  # free at once


async def test_a_larger_limit_wakes_waiters_and_no_limit_wakes_all() -> None:
    window = Window(1)
    await window.acquire()
    waiters = [asyncio.create_task(window.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    window.resize(2)
    await asyncio.sleep(0)
    assert sum(w.done() for w in waiters) == 1 and window.in_use == 2
    window.resize(None)
    with anyio.fail_after(5):
        await asyncio.gather(*waiters)
    assert window.in_use == 4


async def test_a_waiter_cancelled_just_as_its_slot_was_handed_over_passes_it_on() -> None:
    window = Window(1)
    await window.acquire()
    waiter = asyncio.create_task(window.acquire())
    await asyncio.sleep(0)
    window.release()  # handed over to the waiter: still in use
    assert window.in_use == 1
    waiter.cancel()  # before the waiter ran again
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert window.in_use == 0  # the slot was given back, not lost
    with anyio.fail_after(5):
        await window.acquire()
