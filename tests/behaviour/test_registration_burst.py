"""A process registering thousands of tools at once costs no other call its result.

On a mosquitto with its default queue bounds (1,000 queued and 20 in-flight messages
per client, which drop what does not fit), a process registers 10,000 tools and then
unregisters them, while another process's tool is called without pause. The registering
side paces itself by the manager's answers (``argentic_tools/_tools/serving/pacing.py``).
"""

import anyio
import pytest

from argentic_tools import ToolManager, Topics
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio

TOOLS = 10_000

OTHERS = 20
"""More than the tools of ``tests.support.tool_proc``: fewer names means the many are gone."""


def registered_many(manager: ToolManager) -> int:
    names = manager.get_tool_names()  # a copy of a dict's keys: cheap at every change
    if len(names) < TOOLS:
        return 0
    return sum(1 for name in names if name.startswith("many-"))


async def test_ten_thousand_registrations_and_unregistrations_cost_no_other_call_its_result(
    default_limits_mosquitto: Mosquitto, prefix: str, topics: Topics
) -> None:
    url = default_limits_mosquitto.url
    failures: list[str] = []
    calls = 0
    async with (
        messager_for(url, topics) as messager,
        manager_for(
            messager, topics, max_tools=TOOLS + 100, max_tools_per_client=TOOLS + 100
        ) as manager,
        ToolProcess("tests.support.tool_proc", url, prefix),
    ):
        await manager.wait_for_tool("echo", timeout=15)

        async def call_meanwhile(done: anyio.Event) -> None:
            nonlocal calls
            while not done.is_set():
                result = await manager.execute_tool("echo", {"message": str(calls)}, timeout=5)
                calls += 1
                if not result.ok:
                    failures.append(str(result))

        done = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(call_meanwhile, done)
            many = ToolProcess("tests.support.many_tools", url, prefix, "--count", str(TOOLS))
            async with many:
                with anyio.fail_after(120):
                    while registered_many(manager) < TOOLS:
                        await manager.registry_changed()
                await many.stop(timeout=120)
            with anyio.fail_after(60):
                while len(manager.get_tool_names()) > OTHERS:
                    await manager.registry_changed()
            done.set()
    assert not any(name.startswith("many-") for name in manager.get_tool_names())
    assert calls > 0
    assert failures == []
