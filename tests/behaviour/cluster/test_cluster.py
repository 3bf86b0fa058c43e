"""A broker node killed under load: the 3-node RabbitMQ cluster of ``scripts/cluster.sh``.

Run by ``make test-cluster`` (which starts and stops the cluster); skipped otherwise.
Two tool processes (replicas of ``work``) prefer node 1; two managers prefer nodes 2
and 3 and call at about 50 calls/s in all. Node 1 (the tools') is SIGKILLed (its
clients' Last Wills are never published) and started again; then node 2 (the first
manager's). Every call is classified by when it was
issued and how it ended; the assertions are counts.
"""

import collections
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from argentic_tools import Messager, ToolManager, ToolResult, Topics

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
CLUSTER_DIR = os.environ.get("ARGENTIC_TOOLS_CLUSTER_DIR")
CALL_TIMEOUT = 5.0
"""Each call's deadline, in seconds."""
INTERVAL = 0.04
"""Each of the two managers issues one call every INTERVAL seconds (~50 calls/s in all)."""
RECOVERY = 5.0
"""Calls issued this long after the kill, or after the node's return, must all succeed."""


if CLUSTER_DIR is None:
    pytest.skip(
        "the cluster test runs with `make test-cluster` (it needs scripts/cluster.sh up)",
        allow_module_level=True,
    )


def cluster(*args: str) -> None:
    assert CLUSTER_DIR is not None
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "cluster.sh"), *args],
        check=True,
        cwd=ROOT,
        env={**os.environ, "CLUSTER_DIR": CLUSTER_DIR},
    )


def node_urls() -> list[str]:
    assert CLUSTER_DIR is not None
    return (Path(CLUSTER_DIR) / "urls").read_text().split()


@pytest.fixture
def executions() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="argentic-tools-cluster-") as tmp:
        yield Path(tmp) / "executions.log"


@pytest.fixture
def prefix() -> str:
    return f"c{uuid.uuid4().hex[:8]}"


@pytest.fixture
def replicas(executions: Path, prefix: str) -> Iterator[None]:
    """Two processes serving ``work``, preferring node 1."""
    n1, n2, n3 = node_urls()
    command = [
        sys.executable,
        "-m",
        "tests.behaviour.cluster.cluster_tool",
        str(executions),
        "--broker",
        f"{n1},{n2},{n3}",
        "--topic-prefix",
        prefix,
        "--log-level",
        "WARNING",
        # Sessions in quorum queues, which RabbitMQ replicates: a client that fails over
        # resumes its session on another node. (A clean session's queue is a classic one
        # on the node that died, and re-subscribing elsewhere waits for that node.)
        "--session",
        "persistent-keep",
    ]
    tools = [subprocess.Popen(command, cwd=ROOT) for _ in range(2)]
    try:
        yield
    finally:
        for process in tools:
            process.send_signal(signal.SIGTERM)
        for process in tools:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def connection(brokers: str) -> Messager:
    """A manager's connection, its session kept across fail-overs like the tools'."""
    return Messager(
        brokers, will_topic=None, persistent_session=True, fresh_session_on_failover=False
    )


def outcome_of(result: ToolResult, token: str) -> str:
    if result.ok:
        return "ok" if result.result["token"] == token else "wrong result"
    return str(getattr(result, "error_code", None))


async def test_a_node_killed_under_load_loses_no_call_and_runs_none_twice(
    executions: Path, prefix: str, replicas: None
) -> None:
    n1, n2, n3 = node_urls()
    topics = Topics.with_prefix(prefix)
    issued: list[tuple[float, str, str]] = []  # (loop time issued, outcome, manager)
    async with (
        connection(f"{n2},{n3},{n1}") as near,
        ToolManager(near, topics=topics) as first,
        connection(f"{n3},{n2},{n1}") as far,
        ToolManager(far, topics=topics) as second,
    ):
        with anyio.fail_after(60):
            for manager in (first, second):
                while len([t for t in manager.tools_by_id.values() if t["name"] == "work"]) < 2:
                    await manager._registry.changed()
        loop_time = anyio.current_time
        stop = anyio.Event()
        events: list[tuple[str, float, float]] = []  # (node, killed at, back at)

        async def one_call(manager: ToolManager, label: str) -> None:
            token = uuid.uuid4().hex
            at = loop_time()
            outcome = "hung"
            with anyio.move_on_after(CALL_TIMEOUT + 1):
                arguments = {"token": token}
                result = await manager.execute_tool("work", arguments, timeout=CALL_TIMEOUT)
                outcome = outcome_of(result, token)
            issued.append((at, outcome, label))

        async def load(manager: ToolManager, label: str) -> None:
            async with anyio.create_task_group() as calls:
                while not stop.is_set():
                    calls.start_soon(one_call, manager, label)
                    await anyio.sleep(INTERVAL)

        async with anyio.create_task_group() as group:
            group.start_soon(load, first, "manager on node 2")
            group.start_soon(load, second, "manager on node 3")
            await anyio.sleep(5)  # load before the failures
            # The tools' node, then the node of the first manager.
            for node in ("1", "2"):
                killed_at = loop_time()
                await anyio.to_thread.run_sync(cluster, "kill", node)
                await anyio.sleep(15)  # load while the node is down
                await anyio.to_thread.run_sync(cluster, "start", node)
                events.append((node, killed_at, loop_time()))
                await anyio.sleep(10)  # load after its return
            stop.set()

    def phase(at: float) -> str:
        for node, killed_at, back_at in reversed(events):
            if at >= back_at + RECOVERY:
                return f"node {node}: back for 5 s"
            if at >= back_at:
                return f"node {node}: first 5 s back"
            if at >= killed_at + RECOVERY:
                return f"node {node}: down for 5 s"
            if at >= killed_at:
                return f"node {node}: first 5 s down"
        return "before the kills"

    table = collections.Counter((phase(at), outcome) for at, outcome, _ in issued)
    runs = collections.Counter((await anyio.Path(executions).read_text()).split())
    print("\ncalls by phase (when issued) and outcome:")
    for (when, outcome), count in sorted(table.items()):
        print(f"  {when:28} {outcome:16} {count}")
    print(f"calls: {len(issued)}, executions: {sum(runs.values())}, tokens run: {len(runs)}")
    twice = {token: n for token, n in runs.items() if n > 1}
    assert twice == {}, f"{len(twice)} calls ran more than once"
    # No call outlived its deadline by more than a second.
    assert not [key for key in table if key[1] == "hung"], table
    # With a live replica reachable, calls succeed again within 5 s of a kill, and
    # everything works within 5 s of the node's return.
    for when in (
        "before the kills",
        *(f"node {n}: {w}" for n in "12" for w in ("down for 5 s", "back for 5 s")),
    ):
        failed = {k: n for k, n in table.items() if k[0] == when and k[1] != "ok"}
        assert failed == {}, failed
        assert table[(when, "ok")] > 0, when
    # Every call that ran ran once, and every call that succeeded ran.
    assert sum(n for (_, outcome), n in table.items() if outcome == "ok") <= len(runs)
