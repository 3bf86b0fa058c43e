"""``argentic-tools stats`` and ``top`` against three real tool processes on a real broker.

The tool processes count the calls they serve; the test's own manager makes a known
number of calls first and notes which instance served each, so every number the
commands print is known exactly. ``top`` runs on a real terminal under tmux.
"""

import contextlib
import json
import signal
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import anyio
import pytest

from argentic_tools import (
    Messager,
    TaskErrorMessage,
    TaskResultMessage,
    ToolManager,
    ToolStatsMessage,
    Topics,
)
from tests.support.brokers import Mosquitto, child_env
from tests.support.cli import cli, connection, one_error_line, run_cli
from tests.support.processes import ROOT, TEST_TOOLS, ToolProcess
from tests.support.terminal import Tmux, needs_tmux, on_a_terminal

pytestmark = pytest.mark.anyio

REPLICAS = 3
ECHO_CALLS = 5
FAIL_CALLS = 2


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """One event loop for the module, so that one fleet serves every test."""
    return "asyncio"


@dataclass
class Fleet:
    """Three ``tests.support.tool_proc`` processes and what the test made them serve."""

    prefix: str
    processes: list[ToolProcess]
    served: Counter[str] = field(default_factory=Counter)
    """Calls per tool id."""
    failed: Counter[str] = field(default_factory=Counter)
    """Failed calls per tool id."""
    echo_ids: list[str] = field(default_factory=list)
    """One tool id per process: ``--expect`` them all and every process is waited for."""

    @property
    def pids(self) -> set[int]:
        return {process.pid for process in self.processes}

    def expect_all(self) -> list[str]:
        """Options that make a command wait (bounded) until every process is registered."""
        options = ["--wait", "20"]
        for tool_id in self.echo_ids:
            options += ["--expect", tool_id]
        return options


async def every_replica_registered(manager: ToolManager) -> None:
    """Wait until each process has registered every test tool."""
    wanted = REPLICAS * len(TEST_TOOLS)
    with anyio.fail_after(30):
        while len(manager.tools_by_id) < wanted:
            await manager.registry_changed()


@pytest.fixture(scope="module")
async def fleet(mosquitto: Mosquitto) -> AsyncIterator[Fleet]:
    """The fleet after ECHO_CALLS calls of ``echo`` and FAIL_CALLS of ``fail``.

    No test calls a tool afterwards (stats requests are not calls), so the counts
    stay as they are here for the whole module.
    """
    prefix = f"st{uuid.uuid4().hex[:10]}"
    topics = Topics.with_prefix(prefix)
    async with contextlib.AsyncExitStack() as stack:
        processes = [
            await stack.enter_async_context(
                ToolProcess("tests.support.tool_proc", mosquitto.url, prefix)
            )
            for _ in range(REPLICAS)
        ]
        fleet = Fleet(prefix, processes)
        async with (
            Messager(mosquitto.url) as messager,
            ToolManager(messager, topics=topics, default_timeout=10) as manager,
        ):
            await every_replica_registered(manager)
            fleet.echo_ids = [
                tool_id for tool_id, entry in manager.tools_by_id.items() if entry["name"] == "echo"
            ]
            for number in range(ECHO_CALLS):
                result = await manager.execute_tool("echo", {"message": f"m{number}"})
                assert isinstance(result, TaskResultMessage), result
                fleet.served[result.tool_id] += 1
            for _ in range(FAIL_CALLS):
                failure = await manager.execute_tool("fail", {"reason": "on purpose"})
                assert isinstance(failure, TaskErrorMessage), failure
                assert failure.error_code == "execution_error"
                fleet.served[failure.tool_id] += 1
                fleet.failed[failure.tool_id] += 1
        yield fleet


# -- stats ------------------------------------------------------------------------------


async def test_stats_json_counts_each_process_calls_and_errors_exactly(
    fleet: Fleet, mosquitto: Mosquitto
) -> None:
    completed = await run_cli(
        "stats", "--json", *fleet.expect_all(), *connection(mosquitto.url, fleet.prefix)
    )
    assert completed.returncode == 0, completed.stderr
    answers = [ToolStatsMessage.model_validate(item) for item in json.loads(completed.stdout)]
    assert {answer.pid for answer in answers} == fleet.pids
    assert len(answers) == REPLICAS
    totals: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for answer in answers:
        assert answer.version and answer.host and answer.source
        assert sorted(entry.tool_name for entry in answer.tools) == sorted(TEST_TOOLS)
        for entry in answer.tools:
            assert entry.calls == fleet.served[entry.tool_id], (answer.pid, entry)
            assert entry.errors == fleet.failed[entry.tool_id], (answer.pid, entry)
            assert entry.in_flight == 0
            if entry.tool_name == "echo" and entry.calls:
                assert entry.outcomes == {"success": entry.calls}
                assert entry.p50_ms is not None and entry.p99_ms is not None
            if entry.tool_name == "fail" and entry.calls:
                assert entry.outcomes == {"execution_error": entry.calls}
            totals[entry.tool_name] += entry.calls
            errors[entry.tool_name] += entry.errors
    assert totals == Counter(echo=ECHO_CALLS, fail=FAIL_CALLS)  # zeros count as missing
    assert errors == Counter(fail=FAIL_CALLS)


async def sleep_served_three_and_two_cancelled(manager: ToolManager) -> str:
    """Three calls of ``sleep`` that end, two that their caller gives up on; the tool id."""
    sleep = await manager.wait_for_tool("sleep", timeout=15)
    for _ in range(3):
        assert isinstance(await manager.execute_tool(sleep.id, {"seconds": 0}), TaskResultMessage)
    for _ in range(2):  # the caller times out and tells the tool to stop: "cancelled"
        late = await manager.execute_tool(sleep.id, {"seconds": 30}, timeout=0.5)
        assert isinstance(late, TaskErrorMessage) and late.error_code == "timeout"
    # The tool counts a call once it has stopped it: wait until it has counted all five.
    with anyio.fail_after(30):
        while True:
            answers = await manager.fleet_stats(wait=5)
            entries = [e for a in answers for e in a.tools if e.tool_id == sleep.id]
            if entries and entries[0].calls == 5:
                return sleep.id


async def test_stats_and_top_count_cancelled_calls_apart_from_errors(
    manager: ToolManager, tool_process: ToolProcess, mosquitto: Mosquitto, prefix: str
) -> None:
    sleep_id = await sleep_served_three_and_two_cancelled(manager)
    where = [*connection(mosquitto.url, prefix), "--wait", "20", "--expect", sleep_id]
    completed = await run_cli("stats", "--json", *where)
    assert completed.returncode == 0, completed.stderr
    (answer,) = [ToolStatsMessage.model_validate(item) for item in json.loads(completed.stdout)]
    (entry,) = [entry for entry in answer.tools if entry.tool_id == sleep_id]
    assert (entry.calls, entry.errors, entry.cancelled) == (5, 0, 2)
    assert entry.outcomes == {"success": 3, "cancelled": 2}

    # Calls, Errors, Err %, Cancelled: no error at all, not 40 %.
    completed = await run_cli("stats", *where)
    assert completed.returncode == 0, completed.stderr
    header = next(line.split() for line in completed.stdout.decode().splitlines() if "Err" in line)
    assert header[:8] == ["Tool", "Process", "Calls", "Errors", "Err", "%", "Cancelled", "p50"]
    (row,) = top_rows(completed.stdout.decode(), ("sleep",)).values()
    assert row[2:6] == ["5", "0", "0.0", "2"]

    completed = await run_cli("top", "--once", "--interval", "0.2", *where)
    assert completed.returncode == 0, completed.stderr
    # Tool, Replicas, Calls/s, Calls, Errors, Err %, Cancelled.
    assert top_rows(completed.stdout.decode(), ("sleep",))["sleep"][3:7] == ["5", "0", "0.0", "2"]


async def test_stats_json_leaves_out_what_is_not_known(fleet: Fleet, mosquitto: Mosquitto) -> None:
    completed = await run_cli(
        "stats", "--json", *fleet.expect_all(), *connection(mosquitto.url, fleet.prefix)
    )
    assert completed.returncode == 0, completed.stderr
    for answer in json.loads(completed.stdout):
        assert "data" not in answer  # exclude_none
        for entry in answer["tools"]:
            assert ("p50_ms" in entry) == (entry["calls"] > 0), entry


async def test_stats_prints_one_row_per_tool_instance_by_tool_name(
    fleet: Fleet, mosquitto: Mosquitto
) -> None:
    completed = await run_cli(
        "stats", *fleet.expect_all(), *connection(mosquitto.url, fleet.prefix)
    )
    assert completed.returncode == 0, completed.stderr
    table = completed.stdout.decode()
    assert f"{REPLICAS * len(TEST_TOOLS)} tool instance(s) in {REPLICAS} process(es)" in table
    rows = [line.split() for line in table.splitlines() if line.split()[:1] == ["echo"]]
    assert len(rows) == REPLICAS
    assert {row[1].rsplit(":", 1)[1] for row in rows} == {str(pid) for pid in fleet.pids}
    assert sum(int(row[2]) for row in rows) == ECHO_CALLS
    names = [
        cells[0]
        for cells in (line.split() for line in table.splitlines())
        if cells[:1] and cells[0] in TEST_TOOLS
    ]
    assert names == sorted(names)
    failing = [line.split() for line in table.splitlines() if line.split()[:1] == ["fail"]]
    assert sum(int(row[3]) for row in failing) == FAIL_CALLS


async def test_stats_returns_once_the_fleet_has_answered_not_after_its_wait(
    fleet: Fleet, mosquitto: Mosquitto
) -> None:
    # No --expect: registrations stop, every process registered is asked and answers,
    # and the command ends then; it would take 300 s (twice) if it spent its --wait.
    completed = await run_cli(
        "stats", "--json", "--wait", "300", *connection(mosquitto.url, fleet.prefix)
    )
    assert completed.returncode == 0, completed.stderr
    answers = [ToolStatsMessage.model_validate(item) for item in json.loads(completed.stdout)]
    assert answers
    assert {answer.pid for answer in answers} <= fleet.pids
    assert "No answer" not in completed.stderr.decode()


async def test_stats_without_tool_processes_says_so_and_exits_0(
    mosquitto: Mosquitto, prefix: str
) -> None:
    completed = await run_cli("stats", "--wait", "0.2", *connection(mosquitto.url, prefix))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == b""
    assert "No tool process answered" in completed.stderr.decode()
    as_json = await run_cli("stats", "--json", "--wait", "0.2", *connection(mosquitto.url, prefix))
    assert json.loads(as_json.stdout) == []


async def test_stats_against_an_unreachable_broker_exits_2_with_one_line(prefix: str) -> None:
    completed = await run_cli("stats", "--broker", "mqtt://127.0.0.1:9", "--topic-prefix", prefix)
    assert completed.returncode == 2
    assert "127.0.0.1:9" in one_error_line(completed)


# -- top --once and without a terminal -------------------------------------------------


def top_rows(screen: str, tools: Sequence[str] = TEST_TOOLS) -> dict[str, list[str]]:
    """The table rows of ``top`` (or ``stats``) by tool name, cells split on blanks."""
    return {
        cells[0]: cells
        for cells in (line.split() for line in screen.splitlines())
        if cells and cells[0] in tools
    }


async def test_top_once_prints_each_tool_summed_over_its_replicas(
    fleet: Fleet, mosquitto: Mosquitto
) -> None:
    completed = await run_cli(
        "top",
        "--once",
        "--interval",
        "0.2",
        "--sort",
        "calls",
        *fleet.expect_all(),
        *connection(mosquitto.url, fleet.prefix),
    )
    assert completed.returncode == 0, completed.stderr
    screen = completed.stdout.decode()
    assert f"{REPLICAS} process(es), {len(TEST_TOOLS)} tool(s)" in screen
    rows = top_rows(screen)
    assert set(rows) == set(TEST_TOOLS)
    # Tool, Replicas, Calls/s, Calls, Errors, Err %, p50, p99, In flight.
    assert rows["echo"][1:2] + rows["echo"][3:6] == ["3", str(ECHO_CALLS), "0", "0.0"]
    assert rows["fail"][3:6] == [str(FAIL_CALLS), str(FAIL_CALLS), "100.0"]
    assert float(rows["echo"][2]) == 0.0  # nothing was called between the two samples
    assert rows["echo"][6] == "0"  # Cancelled
    assert rows["echo"][9] == "0/192"  # 64 at once per replica
    order = [
        line.split()[0]
        for line in screen.splitlines()
        if line.split()[:1] in (["echo"], ["fail"], ["sleep"])
    ]
    assert order[:2] == ["echo", "fail"]  # --sort calls: the most called first
    assert "sorted by calls" in screen


async def test_top_without_a_terminal_prints_frame_after_frame_until_ctrl_c(
    fleet: Fleet, mosquitto: Mosquitto
) -> None:
    process = await anyio.open_process(
        cli(
            "top",
            "--interval",
            "0.2",
            *fleet.expect_all(),
            *connection(mosquitto.url, fleet.prefix),
        ),
        cwd=ROOT,
        env=child_env(),
    )
    try:
        assert process.stdout is not None
        seen = b""
        with anyio.fail_after(30):
            while seen.count(b"argentic-tools top") < 2:
                seen += await process.stdout.receive()
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()
    assert "echo" in seen.decode()


# -- top on a terminal (tmux) ----------------------------------------------------------


@contextlib.asynccontextmanager
async def top_on_a_terminal(fleet: Fleet, mosquitto: Mosquitto) -> AsyncIterator[Tmux]:
    command = cli(
        "top", "--interval", "0.3", *fleet.expect_all(), *connection(mosquitto.url, fleet.prefix)
    )
    async with on_a_terminal(command) as session:
        yield session


@needs_tmux
async def test_top_on_a_terminal_shows_the_tools_and_sorts_and_quits_on_keys(
    fleet: Fleet, mosquitto: Mosquitto
) -> None:
    async with top_on_a_terminal(fleet, mosquitto) as session:
        screen = await session.wait_for(*TEST_TOOLS, f"{REPLICAS} process(es)", "keys:")
        assert f"{len(TEST_TOOLS)} tool(s), {REPLICAS * len(TEST_TOOLS)} instance(s)" in screen
        assert top_rows(screen)["echo"][3] == str(ECHO_CALLS)
        await session.keys("e")
        screen = await session.wait_for("sorted by errors")
        assert next(iter(top_rows(screen))) == "fail"  # the only tool with errors comes first
        await session.keys("q")
        assert await session.exit_status() == 0


@needs_tmux
async def test_ctrl_c_ends_top_with_status_0(fleet: Fleet, mosquitto: Mosquitto) -> None:
    async with top_on_a_terminal(fleet, mosquitto) as session:
        await session.wait_for("echo", "sorted by")
        await session.keys("C-c")
        assert await session.exit_status() == 0
        assert "interrupted" not in await session.screen()
