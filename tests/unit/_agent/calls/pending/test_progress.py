"""Chunks put back in order, and a missing chunk that is not waited for forever (no broker)."""

import asyncio
from typing import Any

import pytest

from argentic_tools._agent.calls.pending.progress import (
    STREAM_HELD_CHUNKS,
    BrokenStreamError,
    CallWatch,
)
from argentic_tools._protocol.messages import (
    TaskResultMessage,
    TaskStatus,
    ToolPartialMessage,
    ToolResult,
)

pytestmark = pytest.mark.anyio


def chunk(seq: int) -> ToolPartialMessage:
    return ToolPartialMessage(source="t", task_id="task", tool_id="tool", seq=seq, chunk=seq)


async def test_chunks_come_out_in_order_and_once() -> None:
    seen: list[Any] = []
    watch = CallWatch(None, seen.append, None, None)
    for seq in (1, 0, 0, 2, 1):
        watch.arrived(chunk(seq))
    future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
    done = TaskResultMessage(
        source="t", task_id="task", tool_id="tool", tool_name="t", status=TaskStatus.SUCCESS
    )
    future.set_result(done)
    await watch.result(future)
    assert seen == [0, 1, 2]
    assert watch.missing == []


async def test_too_many_chunks_behind_a_missing_one_end_the_call_at_once() -> None:
    seen: list[Any] = []
    watch = CallWatch(None, seen.append, None, None)
    watch.arrived(chunk(0))
    for seq in range(2, STREAM_HELD_CHUNKS + 3):
        watch.arrived(chunk(seq))
    future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
    with pytest.raises(BrokenStreamError) as broken:
        await watch.result(future)
    assert seen == [0]
    assert broken.value.details == {"missing": 1, "held": STREAM_HELD_CHUNKS + 1}
    assert "chunk 1 never came" in broken.value.why


async def test_the_reader_grants_credit_every_half_window_and_the_stream_pauses_at_its_end() -> (
    None
):
    grants: list[int] = []
    watch = CallWatch(None, lambda _: None, None, None)
    watch.window = 8
    watch.credit = grants.append
    for seq in range(8):
        watch.arrived(chunk(seq))
    assert watch.paused  # the tool has sent all its credit allows
    for _ in range(9):
        watch.taken()
    assert grants == [4, 8]  # cumulative, one grant per half window read
    assert not watch.paused
    for seq in range(8, 16):
        watch.arrived(chunk(seq))
    assert watch.paused  # 16 delivered = the last grant (8) + the window


async def test_an_unpaced_stream_grants_nothing_and_never_pauses() -> None:
    grants: list[int] = []
    watch = CallWatch(None, lambda _: None, None, None)
    watch.credit = grants.append
    for seq in range(3000):
        watch.arrived(chunk(seq))
        watch.taken()
    assert grants == []
    assert not watch.paused
    assert watch.read == 3000
