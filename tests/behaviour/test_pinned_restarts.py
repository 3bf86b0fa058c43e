"""A tool process with a pinned id, restarted at once, takes its id over from its old process.

The old process may be SIGKILLed with its Last Will not counted yet, or frozen (SIGSTOP)
and leaving none: the manager asks it whether it still answers, and retires it when it is
silent. Another broker user's claim on the id is refused all the same.
"""

import asyncio
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from argentic_tools import (
    RegistrationError,
    TaskErrorMessage,
    ToolManager,
    ToolService,
    Topics,
    tool,
)
from tests.support.brokers import Mosquitto
from tests.support.clients import CONFIRM
from tests.support.observers import spy_on_calls
from tests.support.processes import ToolProcess
from tests.support.tool_proc import echo

pytestmark = pytest.mark.anyio


def as_user(url: str, user: str) -> str:
    """``url`` with a broker user (the tests' mosquitto lets anyone in, under any name)."""
    return url.replace("mqtt://", f"mqtt://{user}@", 1)


@contextmanager
def frozen(process: ToolProcess) -> Iterator[None]:
    """SIGSTOP the process for the block; it is killed on the way out, frozen or not."""
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        process.kill()


async def source_of(manager: ToolManager, tool_id: str) -> str | None:
    entry = manager.tools_by_id.get(tool_id)
    return None if entry is None else entry["source_client_id"]


async def wait_for_new_holder(
    manager: ToolManager, tool_id: str, old: str | None, newcomer: ToolProcess
) -> None:
    """Until another process than ``old`` holds ``tool_id``; fails if the newcomer exits."""
    with anyio.fail_after(30):
        while await source_of(manager, tool_id) in (None, old):
            assert newcomer.process is not None
            if newcomer.process.poll() is not None:
                pytest.fail(f"the newcomer exited:\n{newcomer.output()}")
            with anyio.move_on_after(0.2):  # also notice the newcomer exiting
                await manager.registry_changed()


async def test_a_tool_restarted_at_once_after_sigkill_takes_its_pinned_id_over(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    results: list[tuple[bool, Any]] = []  # (started after the restart?, result)
    restarted = anyio.Event()
    going = anyio.Event()
    enough = anyio.Event()

    async def stream() -> None:
        n = 0
        while not enough.is_set():
            after = restarted.is_set()
            result = await manager.execute_tool("pin-echo", {"message": f"m{n}"}, timeout=10)
            results.append((after, result))
            n += 1
            if n == 5:
                going.set()
            if sum(1 for a, r in results if a and r.ok) >= 20:
                enough.set()
            if not result.ok:
                # Between the old process's end and the new one's admission: wait for it.
                await manager.wait_for_tool("pin-echo", timeout=15)

    with ToolProcess(
        "tests.support.tool_proc", mosquitto.url, prefix, "--tool-id", "echo=pin-echo"
    ) as holder:
        await manager.wait_for_tool("pin-echo", timeout=15)
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(stream)
                await going.wait()
                holder.kill()
                # Restarted at once, as fast as a process can register: well within the
                # Last Will's grace, while the old process still holds the id.
                async with ToolService(
                    mosquitto.url, [echo], topics=topics, tool_ids={"echo": "pin-echo"}
                ):
                    restarted.set()
                    await enough.wait()
    before = [r for a, r in results if not a]
    after = [r for a, r in results if a]
    assert before[0].ok
    assert after, "no call was made after the restart"
    assert all(r.ok for r in after), [getattr(r, "error", None) for r in after]
    assert {r.error_code for r in before if not r.ok} <= {"tool_offline", "not_found"}


async def test_a_frozen_holder_of_a_pinned_id_is_retired_and_its_restart_serves(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    pins = ("--tool-id", "sleep=pin-sleep", "--tool-id", "whoami=pin-who")
    with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix, *pins) as holder:
        info = await manager.wait_for_tool("pin-sleep", timeout=15)
        await manager.wait_for_tool("pin-who", timeout=15)
        async with spy_on_calls(mosquitto.url, topics, "pin-sleep") as spy:
            doomed = [
                asyncio.ensure_future(
                    manager.execute_tool("pin-sleep", {"seconds": 60}, timeout=60)
                )
                for _ in range(3)
            ]
            await spy.wait_for_calls(3)
        with (
            frozen(holder),
            ToolProcess("tests.support.tool_proc", mosquitto.url, prefix, *pins) as newcomer,
        ):
            await wait_for_new_holder(manager, "pin-sleep", info.source, newcomer)
            await wait_for_new_holder(manager, "pin-who", info.source, newcomer)
            with anyio.fail_after(15):
                ended = await asyncio.gather(*doomed)
            codes = {r.error_code if isinstance(r, TaskErrorMessage) else "ok" for r in ended}
            assert codes == {"tool_offline"}, ended
            assert (await manager.execute_tool("pin-sleep", {"seconds": 0}, timeout=15)).ok
            # Resumed, the old process learns it was retired before it reads the tasks
            # now sent to the id: only the newcomer runs them.
            os.kill(holder.pid, signal.SIGCONT)
            served_by = set()
            for _ in range(10):
                result = await manager.execute_tool("pin-who", {}, timeout=15)
                assert result.ok, result
                served_by.add(result.result["pid"])
            assert served_by == {newcomer.pid}


async def test_another_broker_users_claim_on_a_frozen_holders_pinned_id_stays_refused(
    manager: ToolManager, mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    alice = as_user(mosquitto.url, "alice")
    with ToolProcess("tests.support.tool_proc", alice, prefix, "--tool-id", "echo=pin-echo") as (
        holder
    ):
        info = await manager.wait_for_tool("pin-echo", timeout=15)
        assert info.owner == "alice"
        with frozen(holder):
            for name in ("echo", "impostor"):

                @tool(name=name)
                def claim(message: str) -> str:
                    """Claims alice's id."""
                    return message

                with pytest.raises(RegistrationError, match=r"belongs to broker user|already used"):
                    async with ToolService(
                        as_user(mosquitto.url, "mallory"),
                        [claim],
                        topics=topics,
                        tool_ids={name: "pin-echo"},
                        confirm_timeout=CONFIRM,
                    ):
                        pass
            assert await source_of(manager, "pin-echo") == info.source
            # Alice's own restart takes the id over from her frozen process.
            async with ToolService(
                alice, [echo], topics=topics, tool_ids={"echo": "pin-echo"}
            ) as restart:
                assert await source_of(manager, "pin-echo") == restart.messager.client_id
                result = await manager.execute_tool("pin-echo", {"message": "hi"}, timeout=15)
                assert result.ok, result
