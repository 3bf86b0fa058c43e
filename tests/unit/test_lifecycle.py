"""A task set's close: watchers are cancelled at once, other tasks get the grace (no broker)."""

import asyncio
import logging

import anyio
import pytest

from argentic_tools._lifecycle import TaskSet

pytestmark = pytest.mark.anyio


async def test_closing_cancels_watchers_at_once_and_gives_other_tasks_the_grace() -> None:
    tasks = TaskSet(logging.getLogger("test"), "test")
    gate = asyncio.Event()
    sent: list[str] = []

    async def send_last_message() -> None:
        await gate.wait()
        sent.append("cancel")

    watcher = tasks.spawn(asyncio.Event().wait(), "presence", watcher=True)
    sender = tasks.spawn(send_last_message(), "cancel")
    closing = asyncio.ensure_future(tasks.aclose(grace=3600))
    with anyio.fail_after(10):
        await asyncio.wait([watcher])
    # The watcher ended by cancellation while the sender still has its grace.
    assert watcher.cancelled()
    assert not sender.done()
    assert not closing.done()
    gate.set()
    with anyio.fail_after(10):
        await closing
    assert sent == ["cancel"]
    assert not sender.cancelled()
    assert len(tasks) == 0


async def test_closing_with_only_watchers_left_waits_for_no_grace() -> None:
    tasks = TaskSet(logging.getLogger("test"), "test")
    watchers = [tasks.spawn(asyncio.Event().wait(), f"w{i}", watcher=True) for i in range(3)]
    # An hour of grace: the close would hang here if it waited for the watchers.
    with anyio.fail_after(10):
        await tasks.aclose(grace=3600)
    assert all(task.cancelled() for task in watchers)
    assert len(tasks) == 0


async def test_closing_after_the_grace_cancels_what_is_still_running() -> None:
    tasks = TaskSet(logging.getLogger("test"), "test")
    stuck = tasks.spawn(asyncio.Event().wait(), "cancel")
    with anyio.fail_after(10):
        await tasks.aclose(grace=0.01)
    assert stuck.cancelled()
