"""run_all: many calls at once, started and cancelled a slice per turn of the event loop."""

import asyncio
import contextlib
import itertools
from collections.abc import Iterator

import anyio
import pytest

from argentic_tools._agent.calls.batches import batch
from argentic_tools._agent.calls.batches.batch import read_all, run_all

pytestmark = pytest.mark.anyio


async def test_results_come_in_the_order_of_the_items() -> None:
    async def double(n: int) -> int:
        await asyncio.sleep(0.001 * (n % 3))
        return 2 * n

    assert await run_all(double, range(1000)) == [2 * n for n in range(1000)]


async def test_an_empty_batch_returns_no_results() -> None:
    async def never(n: int) -> int:
        raise AssertionError

    assert await run_all(never, []) == []


async def test_each_turn_of_the_loop_starts_at_most_a_slice() -> None:
    started: list[int] = []
    turns: list[int] = []

    async def call(n: int) -> None:
        started.append(n)
        await asyncio.sleep(3600)

    async def count_turns() -> None:
        while len(started) < 1000:
            turns.append(len(started))
            await asyncio.sleep(0)

    counting = asyncio.ensure_future(count_turns())
    running = asyncio.ensure_future(run_all(call, range(1000)))
    with anyio.fail_after(10):
        await counting
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    steps = [after - before for before, after in itertools.pairwise(turns)]
    assert max(steps) <= batch.SLICE


async def test_a_failing_call_raises_once_every_call_has_ended() -> None:
    ended: list[int] = []

    async def call(n: int) -> int:
        if n == 0:
            raise ValueError("boom")
        await asyncio.sleep(0.01)
        ended.append(n)
        return n

    with pytest.raises(ValueError, match="boom"):
        await run_all(call, range(300))
    assert sorted(ended) == list(range(1, 300))


async def test_cancelling_ends_every_call_started_and_starts_no_more() -> None:
    started: list[int] = []
    cancelled: list[int] = []

    async def call(n: int) -> None:
        started.append(n)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(n)
            await asyncio.sleep(0.001)  # ending takes a while: it is awaited all the same
            raise

    running = asyncio.ensure_future(run_all(call, range(10 * batch.SLICE)))
    with anyio.fail_after(10):
        while len(started) < 2 * batch.SLICE:
            await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert sorted(cancelled) == sorted(started)
    assert len(started) < 10 * batch.SLICE
    # Newest slice first: calls still waiting end before the ones started earliest.
    assert cancelled[0] >= len(started) - batch.SLICE


async def test_cancelled_calls_end_inside_while_cancelling_which_is_left_once_all_ended() -> None:
    inside = False
    ended_inside: list[bool] = []
    left_after: list[int] = []

    @contextlib.contextmanager
    def while_cancelling() -> Iterator[None]:
        nonlocal inside
        inside = True
        yield
        inside = False
        left_after.append(len(ended_inside))

    async def call(n: int) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0)  # ending takes a turn
            ended_inside.append(inside)

    running = asyncio.ensure_future(run_all(call, range(3 * batch.SLICE), while_cancelling))
    await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert ended_inside == [True] * (3 * batch.SLICE)
    assert left_after == [3 * batch.SLICE]


async def test_a_batch_that_is_not_cancelled_never_enters_while_cancelling() -> None:
    entered: list[bool] = []

    @contextlib.contextmanager
    def while_cancelling() -> Iterator[None]:
        entered.append(True)
        yield

    async def call(n: int) -> int:
        return n

    assert await run_all(call, range(300), while_cancelling) == list(range(300))
    assert entered == []


async def test_cancelling_ends_more_calls_per_turn_while_the_turns_stay_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every turn counts as short: each next turn ends four times as many calls.
    monkeypatch.setattr(batch, "TURN_SECONDS", 3600.0)
    calls = 21 * batch.SLICE
    turn = 0
    ended_in: list[int] = []

    async def call(n: int) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            ended_in.append(turn)

    async def count_turns() -> None:
        nonlocal turn
        while len(ended_in) < calls:
            turn += 1
            await asyncio.sleep(0)

    running = asyncio.ensure_future(run_all(call, range(calls)))
    with anyio.fail_after(10):
        while len(asyncio.all_tasks()) < calls:
            await asyncio.sleep(0)
    counting = asyncio.ensure_future(count_turns())
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await counting
    per_turn = [ended_in.count(t) for t in sorted(set(ended_in))]
    # SLICE, then 4 and 16 times as many: 3 turns, where slices of SLICE took 21.
    assert per_turn == [batch.SLICE, 4 * batch.SLICE, 16 * batch.SLICE]


async def test_each_slice_is_called_once_a_slice_has_started_or_ended_and_once_all_started() -> (
    None
):
    started: list[int] = []
    ended: list[int] = []
    at_each_slice: list[tuple[int, int]] = []
    go = asyncio.Event()

    async def call(n: int) -> int:
        started.append(n)
        await go.wait()
        ended.append(n)
        return n

    def each_slice() -> None:
        at_each_slice.append((len(started), len(ended)))

    items = range(2 * batch.SLICE + 1)
    running = asyncio.ensure_future(run_all(call, items, each_slice=each_slice))
    with anyio.fail_after(10):
        while len(at_each_slice) < 3:
            await asyncio.sleep(0)
    go.set()
    assert await running == list(items)
    everything = len(items)
    # Started: after each slice and once all have; ended: after every SLICE endings (the
    # endings of one turn are counted together, once all of that turn's have run).
    assert at_each_slice == [
        (batch.SLICE, 0),
        (2 * batch.SLICE, 0),
        (everything, 0),
        (everything, everything),
        (everything, everything),
    ]


async def test_reading_a_batch_takes_a_turn_of_the_loop_per_read_slice() -> None:
    turn = 0
    read_in: list[int] = []

    def items() -> Iterator[int]:
        for n in range(3 * batch.READ_SLICE + 1):
            read_in.append(turn)
            yield n

    async def count_turns() -> None:
        nonlocal turn
        while len(read_in) < 3 * batch.READ_SLICE + 1:
            turn += 1
            await asyncio.sleep(0)

    counting = asyncio.ensure_future(count_turns())
    assert await read_all(items()) == list(range(3 * batch.READ_SLICE + 1))
    await counting
    per_turn = [read_in.count(t) for t in sorted(set(read_in))]
    assert per_turn == [batch.READ_SLICE, batch.READ_SLICE, batch.READ_SLICE, 1]
