"""The dashboard in a real headless Chromium: three tool processes, a real broker, the live page.

The page is read through its DOM as a visitor would see it; every wait is bounded and
returns as soon as the page shows what is expected (a MutationObserver in the page).
Without Chromium the browser tests are skipped, except in CI, which installs it
(``scripts/ensure-chromium.sh``).
"""

import asyncio
import contextlib
import http.client
import json
import re
import signal
import socket
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import pytest

from argentic_tools import (
    CallContext,
    CallRef,
    ElicitRequest,
    ElicitResult,
    Messager,
    SqliteRecorder,
    TaskErrorMessage,
    TaskMessage,
    TaskResultMessage,
    TaskStatus,
    ToolCancelMessage,
    ToolManager,
    Topics,
    parse_message,
)
from argentic_tools.dashboard import Dashboard
from argentic_tools.dashboard.server import MAX_BODY_BYTES
from tests.support.brokers import Mosquitto, child_env, free_port
from tests.support.browser import Browser, Page, find_chromium
from tests.support.cli import (
    DEMO_TIMEOUT,
    TIMEOUT,
    cli,
    cli_process,
    connection,
    one_error_line,
    read_until,
    run_cli,
)
from tests.support.clients import manager_for, messager_for
from tests.support.media_tools import HTML
from tests.support.observations import EXCHANGES, observation
from tests.support.oidc import OidcClient, client_token, oidc_provider
from tests.support.processes import ROOT, TEST_TOOLS, ToolProcess
from tests.support.requirements import require

pytestmark = pytest.mark.anyio

PAGE_TIMEOUT = 10.0
"""Bound on the page showing a change (it takes milliseconds; CI machines are slow)."""

FINAL = "['success', 'error', 'timeout', 'cancelled'].includes(row.dataset.status)"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """One event loop for the module, so that one Chromium serves every test."""
    return "asyncio"


@pytest.fixture(scope="module")
async def browser(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Browser]:
    binary = find_chromium()
    require("chromium", binary is not None, "`make test` installs it when it can")
    assert binary is not None
    async with Browser(binary, tmp_path_factory.mktemp("chromium")).running() as running:
        yield running


@pytest.fixture
async def three_processes(mosquitto: Mosquitto, prefix: str) -> AsyncIterator[list[ToolProcess]]:
    """Three processes of ``tests.support.tool_proc``: each tool has three replicas."""
    async with contextlib.AsyncExitStack() as stack:
        processes = [
            await stack.enter_async_context(
                ToolProcess("tests.support.tool_proc", mosquitto.url, prefix)
            )
            for _ in range(3)
        ]
        yield processes


@pytest.fixture
async def dashboard(mosquitto: Mosquitto, topics: Topics) -> AsyncIterator[str]:
    """A dashboard in this process on a free loopback port; yields its address."""
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as manager,
        Messager(mosquitto.url, will_topic=None) as observer,
        Dashboard(manager, observer).serving("127.0.0.1", 0) as port,
    ):
        yield f"http://127.0.0.1:{port}/"


async def every_replica(manager: ToolManager, processes: int) -> None:
    """Wait (bounded) until each test tool is registered by ``processes`` processes."""
    with anyio.fail_after(30):
        while len(manager.tools_by_id) < processes * len(TEST_TOOLS):
            await manager.registry_changed()


async def open_page(browser: Browser, url: str) -> Page:
    page = await browser.new_page()
    await page.goto(url)
    await page.wait_for("document.getElementById('link').dataset.state === 'live'")
    return page


def js(value: Any) -> str:
    """``value`` as a JavaScript literal."""
    return json.dumps(value)


async def test_the_page_shows_three_processes_tools_and_a_call_as_it_happens(
    browser: Browser,
    manager: ToolManager,
    three_processes: list[ToolProcess],
    dashboard: str,
    tmp_path: Path,
) -> None:
    await every_replica(manager, 3)
    page = await open_page(browser, dashboard)
    # Each tool, each with a replica in each process (host:pid from the processes' stats).
    pids = await page.wait_for(
        """(() => {
            const rows = [...document.querySelectorAll('tr.replica[data-state="online"]')];
            if (rows.length !== 21) return null;
            return [...new Set(rows.map((row) => Number(row.dataset.pid)))].sort((a, b) => a - b);
        })()""",
        timeout=20,
    )
    assert pids == sorted(process.pid for process in three_processes)
    tools = await page.evaluate(
        "[...document.querySelectorAll('tr.tool-row')].map((row) => row.dataset.tool)"
    )
    assert tools == sorted(TEST_TOOLS)

    result = await manager.execute_tool(
        "echo",
        {"message": "hello, dashboard"},
        context=CallContext(thread_id="thread-7", trace_id="trace-42"),
    )
    assert result.status == TaskStatus.SUCCESS
    row = f"document.querySelector('tr[data-task-id={js(result.task_id)}]')"
    cells = await page.wait_for(
        f"(() => {{ const row = {row}; return row && {FINAL} && "
        "[...row.cells].map((cell) => cell.textContent); })()",
        timeout=PAGE_TIMEOUT,
    )
    assert cells[1:4] == ["success", "echo", "thread-7"]

    # Its details: arguments, result, trace id.
    await page.evaluate(f"{row}.click()")
    await page.wait_for(
        "document.getElementById('detail-outcome').textContent.includes('hello, dashboard')"
    )
    fields = await page.evaluate(
        """Object.fromEntries([...document.querySelectorAll('#detail-fields dt')]
            .map((term) => [term.textContent, term.nextElementSibling.textContent]))"""
    )
    assert fields["Task id"] == result.task_id
    assert fields["Thread"] == "thread-7"
    # The caller's own trace id, or the OpenTelemetry trace's when an SDK is installed.
    assert fields["Trace id"] == "trace-42" or re.fullmatch(r"[0-9a-f]{32}", fields["Trace id"])
    arguments = await page.evaluate("document.getElementById('detail-arguments').textContent")
    assert json.loads(arguments) == {"message": "hello, dashboard"}

    # A failure and a timeout (the caller cancels the call: the tool answers "cancelled").
    failed = await manager.execute_tool("fail", {"reason": "on purpose"})
    late = await manager.execute_tool("sleep", {"seconds": 30}, timeout=0.5)
    assert isinstance(late, TaskErrorMessage) and late.error_code == "timeout"
    for call, status in ((failed, "error"), (late, "timeout")):
        row = f"document.querySelector('tr[data-task-id={js(call.task_id)}]')"
        await page.wait_for(f"{row} && {row}.dataset.status === {js(status)}")
    counters = await page.wait_for(
        """(() => {
            const value = (id) => Number(document.getElementById(id).textContent);
            const counts = [value('c-succeeded'), value('c-failed'), value('c-timed_out')];
            return counts.every((count) => count === 1) && counts;
        })()"""
    )
    assert counters == [1, 1, 1]
    # Each tool called has its latency chart (counters and charts move every second).
    charts = await page.wait_for(
        """(() => {
            const tools = [...document.querySelectorAll('.chart-box')].map((b) => b.dataset.tool);
            return tools.length === 3 && tools;
        })()""",
        timeout=PAGE_TIMEOUT,
    )
    assert charts == ["echo", "fail", "sleep"]
    shot = await page.screenshot(tmp_path / "dashboard.png")
    print(f"\nscreenshot: {shot}")


async def test_the_page_says_it_is_loading_until_its_first_snapshot_and_leaves_no_blanks(
    browser: Browser, manager: ToolManager, tool_process: ToolProcess, dashboard: str
) -> None:
    await manager.wait_for_tool("sleep", timeout=15)
    page = await browser.new_page()
    # The event stream is held back: the page is what a visitor sees before its first event.
    await page.send("Fetch.enable", patterns=[{"urlPattern": "*/api/events*"}])
    paused = page.expect("Fetch.requestPaused")
    await page.goto(dashboard)
    with anyio.fail_after(PAGE_TIMEOUT):
        held = await paused
    before = await page.evaluate(
        """({link: document.getElementById('link').textContent,
             state: document.getElementById('link').dataset.state,
             text: document.body.innerText})"""
    )
    assert before["state"] == "connecting" and before["link"] == "connecting…"
    assert "No tool registered yet" not in before["text"]  # not known yet
    assert "No call seen yet" not in before["text"]
    assert "Waiting for the dashboard's first update" in before["text"]
    assert not re.search(r"per\s+s\b|up to\s+min", before["text"]), before["text"]

    await page.send("Fetch.continueRequest", requestId=held["requestId"])
    await page.send("Fetch.disable")
    await page.wait_for("document.getElementById('link').dataset.state === 'live'")
    legend = await page.wait_for(
        "!document.getElementById('latency-legend').hidden && "
        "document.getElementById('latency-legend').textContent"
    )
    assert re.search(r"per \d+ s: .* up to \d+ min back", legend), legend
    # Calls refused before they are sent never reach the bus: the page says so.
    note = await page.evaluate("document.getElementById('calls-note').textContent")
    assert "refuses before sending" in " ".join(note.split())

    # One call that ends, one its caller gives up on: the tool was cancelled, it did not fail.
    assert (await manager.execute_tool("sleep", {"seconds": 0})).status == TaskStatus.SUCCESS
    late = await manager.execute_tool("sleep", {"seconds": 30}, timeout=0.5)
    assert isinstance(late, TaskErrorMessage) and late.error_code == "timeout"
    # Tool / process, State, Uptime, Calls, Err %, Cancelled.
    cells = await page.wait_for(
        """(() => {
            const row = document.querySelector('tr.tool-row[data-tool="sleep"]');
            const cells = row && [...row.cells].map((cell) => cell.textContent);
            return cells && cells[3] === '2' && cells;
        })()""",
        timeout=20,
    )
    assert re.fullmatch(r"\d+s|\d+m \d+s", cells[2]), cells  # the tool's uptime is shown
    assert cells[4:6] == ["0.0", "1"], cells
    replica = await page.evaluate(
        "[...document.querySelector('tr.replica[data-tool=\"sleep\"]').cells]"
        ".map((cell) => cell.textContent)"
    )
    assert re.fullmatch(r"\d+s|\d+m \d+s", replica[2]) and replica[4:6] == ["0.0", "1"]


async def test_a_killed_tool_process_turns_offline_and_its_pending_call_fails(
    browser: Browser,
    manager: ToolManager,
    three_processes: list[ToolProcess],
    dashboard: str,
    tmp_path: Path,
) -> None:
    await every_replica(manager, 3)
    page = await open_page(browser, dashboard)
    victim = three_processes[0]
    await page.wait_for(
        f"document.querySelectorAll('tr.replica[data-pid=\"{victim.pid}\"]').length === 7",
        timeout=20,
    )
    # A call pending at the process that dies: the page shows it running, then failed.
    answers = await manager.fleet_stats(wait=10)
    source = next(answer.source for answer in answers if answer.pid == victim.pid)
    sleep_id = next(
        entry["id"]
        for entry in manager.tools_by_id.values()
        if entry["name"] == "sleep" and entry["source_client_id"] == source
    )
    async with anyio.create_task_group() as group:
        pending: list[Any] = []

        async def call() -> None:
            pending.append(await manager.execute_tool(sleep_id, {"seconds": 60}, timeout=60))

        group.start_soon(call)
        await page.wait_for(
            "[...document.querySelectorAll('#calls-body tr')].some((row) => "
            "row.dataset.tool === 'sleep' && row.dataset.status === 'running')"
        )
        victim.kill()
    assert pending[0].error_code == "tool_offline"

    offline = await page.wait_for(
        f"""(() => {{
            const gone = document.querySelectorAll(
                'tr.replica[data-pid="{victim.pid}"][data-state="offline"]');
            const live = document.querySelectorAll('tr.replica[data-state="online"]');
            return gone.length === 7 && live.length === 14 && gone.length;
        }})()"""
    )
    assert offline == 7
    row = f"document.querySelector('tr[data-task-id={js(pending[0].task_id)}]')"
    failed = await page.wait_for(f"{row} && {row}.dataset.status === 'error' && {row}.textContent")
    assert "tool_offline" in failed
    health = await page.evaluate(
        "document.querySelector('tr.tool-row[data-tool=\"sleep\"]').dataset.state"
    )
    assert health == "degraded"
    shot = await page.screenshot(tmp_path / "dashboard-offline.png")
    print(f"\nscreenshot: {shot}")


async def test_a_call_whose_caller_gives_up_without_a_word_turns_timed_out_after_its_timeout(
    browser: Browser,
    manager: ToolManager,
    tool_process: ToolProcess,
    dashboard: str,
    mosquitto: Mosquitto,
    topics: Topics,
) -> None:
    sleep = await manager.wait_for_tool("sleep", timeout=15)
    page = await open_page(browser, dashboard)
    task = TaskMessage(
        tool_id=sleep.id, tool_name="sleep", arguments={"seconds": 30}, timeout_seconds=2
    )  # 2 s: long enough for a slow page to see the call running first
    async with Messager(mosquitto.url, will_topic=None) as caller:
        await caller.publish(topics.call(sleep.id), task)
        row = f"document.querySelector('tr[data-task-id={js(task.task_id)}]')"
        await page.wait_for(f"{row} && {row}.dataset.status === 'running'")
        # No result and no cancellation: timed out one second after its timeout, at the latest.
        text = await page.wait_for(
            f"{row}.dataset.status === 'timeout' && {row}.textContent", timeout=PAGE_TIMEOUT
        )
        assert "No result within the call's timeout of 2 s" in text
        # Stop the sleep at the tool: its process would otherwise give it its whole
        # shutdown grace period (10 s) when the test ends.
        stop = ToolCancelMessage(source=task.source, task_id=task.task_id, tool_id=sleep.id)
        await caller.publish(topics.call(sleep.id), stop)


async def test_the_call_form_calls_a_tool_with_its_schema_fields_and_shows_the_result(
    browser: Browser,
    manager: ToolManager,
    three_processes: list[ToolProcess],
    dashboard: str,
) -> None:
    await every_replica(manager, 3)
    page = await open_page(browser, dashboard)
    await page.wait_for("document.querySelector('#form-tool option[value=\"fail\"]')")

    async def call(tool: str, fields: dict[str, str]) -> dict[str, str]:
        await page.evaluate(
            f"""(() => {{
                const select = document.getElementById('form-tool');
                select.value = {js(tool)};
                select.dispatchEvent(new Event('change'));
                document.getElementById('form-result').dataset.status = '';
            }})()"""
        )
        for name, value in fields.items():
            field = f"document.querySelector('[data-field={js(name)}]')"
            await page.wait_for(field)
            await page.evaluate(f"{field}.value = {js(value)}")
        await page.evaluate("document.getElementById('form-submit').click()")
        box = "document.getElementById('form-result')"
        return dict(
            await page.wait_for(
                f"['success', 'error', 'timeout'].includes({box}.dataset.status) && "
                f"{{status: {box}.dataset.status, task: {box}.dataset.taskId, "
                "output: document.getElementById('form-output').textContent}"
            )
        )

    fields = await page.evaluate(
        """(() => {
            const select = document.getElementById('form-tool');
            select.value = 'sleep';
            select.dispatchEvent(new Event('change'));
            return [...document.querySelectorAll('[data-field]')]
                .map((input) => [input.dataset.field, input.dataset.kind, input.dataset.required]);
        })()"""
    )
    assert fields == [["seconds", "number", "1"]]

    shown = await call("echo", {"message": "from the form"})
    assert shown["status"] == "success"
    assert json.loads(shown["output"]) == "from the form"
    # The call is in the list too, like any other.
    await page.wait_for(f"document.querySelector('tr[data-task-id={js(shown['task'])}]')")

    failed = await call("fail", {"reason": "asked by the test"})
    assert failed["status"] == "error"
    assert "failing on purpose: asked by the test" in failed["output"]


async def test_calls_reach_the_page_as_they_end_and_the_update_latency_is_measured(
    browser: Browser,
    manager: ToolManager,
    three_processes: list[ToolProcess],
    dashboard: str,
    mosquitto: Mosquitto,
    topics: Topics,
) -> None:
    """Time from a result on the bus to its row's outcome in the DOM, over 20 calls.

    Printed, not asserted: it measures this machine as much as the dashboard.
    """
    await every_replica(manager, 3)
    page = await open_page(browser, dashboard)
    await page.evaluate(
        f"""(() => {{
            window.ended = {{}};
            const seen = () => {{
                const now = performance.timeOrigin + performance.now();
                for (const row of document.querySelectorAll('#calls-body tr')) {{
                    if (!(row.dataset.taskId in window.ended) && {FINAL}) {{
                        window.ended[row.dataset.taskId] = now;
                    }}
                }}
            }};
            new MutationObserver(seen).observe(document.getElementById('calls-body'),
                {{subtree: true, childList: true, attributes: true}});
        }})()"""
    )
    on_bus: dict[str, float] = {}

    def result_seen(message: Any) -> None:
        arrived = time.time() * 1000
        parsed = parse_message(message.payload)
        if isinstance(parsed, TaskResultMessage):
            on_bus.setdefault(parsed.task_id, arrived)

    latencies = []
    async with Messager(mosquitto.url, will_topic=None) as observer:
        await observer.subscribe(f"{topics.response_base}/#", result_seen)
        for index in range(20):
            result = await manager.execute_tool("echo", {"message": f"call {index}"})
            assert result.status == TaskStatus.SUCCESS
            shown = await page.wait_for(f"window.ended[{js(result.task_id)}]")
            latencies.append(shown - on_bus[result.task_id])
    print(
        f"\ndashboard update latency, result on the bus -> row in the DOM, 20 calls: "
        f"median {statistics.median(latencies):.1f} ms, min {min(latencies):.1f} ms, "
        f"max {max(latencies):.1f} ms"
    )


async def test_the_demo_serves_the_dashboard_while_it_runs_and_it_sees_every_call(
    mosquitto: Mosquitto, prefix: str
) -> None:
    env = {**child_env(), "ARGENTIC_TOOLS_DEMO_DASHBOARD": "127.0.0.1:0"}
    command = cli("demo", "--exit", *connection(mosquitto.url, prefix))
    async with await anyio.open_process(command, cwd=ROOT, env=env) as demo:
        assert demo.stdout is not None
        seen = await read_until(demo.stdout, b"/ shows the calls", timeout=DEMO_TIMEOUT)
        printed = re.search(rb"Dashboard: http://127\.0\.0\.1:(\d+)/", seen)
        assert printed, seen
        # The event stream ends when the demo does: everything the page would have shown.
        stream = await anyio.to_thread.run_sync(events_until_the_end, int(printed.group(1)))
        with anyio.fail_after(DEMO_TIMEOUT):
            assert await demo.wait() == 0
    ended = {
        (call["tool"], call["status"], call["error_code"])
        for kind, call in stream
        if kind == "call" and call["status"] != "running"
    }
    assert ("calculate", "success", None) in ended
    assert ("sleep", "timeout", "timeout") in ended
    assert ("sleep", "error", "tool_offline") in ended  # the process the demo kills
    assert ("get_weather", "error", "invalid_arguments") not in ended  # refused, never sent
    last_fleet = [data for kind, data in stream if kind == "fleet"][-1]["fleet"]
    sleep = next(tool for tool in last_fleet if tool["name"] == "sleep")
    assert [replica["state"] for replica in sleep["replicas"]] == ["offline"]


def events_until_the_end(port: int) -> list[tuple[str, Any]]:
    """Every event of the dashboard's stream, read until the server ends it."""
    connection_ = http.client.HTTPConnection("127.0.0.1", port, timeout=DEMO_TIMEOUT)
    events = []
    try:
        connection_.request("GET", "/api/events")
        response = connection_.getresponse()
        kind = ""
        for line in iter(response.readline, b""):
            if line.startswith(b"event: "):
                kind = line[7:].strip().decode()
            elif line.startswith(b"data: "):
                events.append((kind, json.loads(line[6:])))
    finally:
        connection_.close()
    return events


# -- access rules, without a browser ---------------------------------------------------


def request(
    port: int, path: str, method: str = "GET", headers: dict[str, str] | None = None, body: str = ""
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request to 127.0.0.1:port; status, headers and the start of the body."""
    connection_ = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        connection_.request(method, path, body=body or None, headers=headers or {})
        response = connection_.getresponse()
        streamed = response.getheader("content-type", "").startswith("text/event-stream")
        data = response.readline() if streamed else response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        connection_.close()


async def fetch(port: int, path: str, **options: Any) -> tuple[int, dict[str, str], bytes]:
    return await anyio.to_thread.run_sync(lambda: request(port, path, **options))


async def test_listening_beyond_loopback_without_allow_remote_is_refused_before_anything(
    prefix: str,
) -> None:
    nothing_there = f"mqtt://127.0.0.1:{free_port()}"
    completed = await run_cli(
        "dashboard", "--http", "0.0.0.0:8080", *connection(nothing_there, prefix)
    )
    assert completed.returncode == 2
    error = one_error_line(completed)
    assert "0.0.0.0 is not a loopback address" in error
    assert "--allow-remote" in error


async def test_a_dashboard_whose_port_is_taken_says_so_in_one_line(
    mosquitto: Mosquitto, prefix: str
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        completed = await run_cli(
            "dashboard", "--http", f"127.0.0.1:{port}", *connection(mosquitto.url, prefix)
        )
    assert completed.returncode == 2
    assert f"--http 127.0.0.1:{port}: " in one_error_line(completed)


async def test_with_a_token_every_request_and_the_event_stream_need_it(
    mosquitto: Mosquitto, prefix: str
) -> None:
    args = ("dashboard", "--http", "127.0.0.1:0", "--token", "s3cret")
    async with cli_process(*args, *connection(mosquitto.url, prefix)) as process:
        port = await printed_port(process, b"?token=s3cret")

        for path in ("/", "/api/state", "/api/events", "/static/dashboard.js"):
            status, headers, _ = await fetch(port, path)
            assert status == 401, path
            assert headers["www-authenticate"].startswith("Bearer")
        status, _, _ = await fetch(port, "/api/state", headers={"Authorization": "Bearer nope"})
        assert status == 401
        refused, _, _ = await fetch(
            port,
            "/api/call",
            method="POST",
            headers={"Content-Type": "application/json"},
            body='{"tool": "echo"}',
        )
        assert refused == 401

        status, _, body = await fetch(
            port, "/api/state", headers={"Authorization": "Bearer s3cret"}
        )
        assert status == 200 and "counters" in json.loads(body)
        status, _, body = await fetch(port, "/api/events?token=s3cret")
        assert status == 200 and body == b"event: snapshot\n"
        # Opened from the printed address: the token moves to a cookie, out of the URL.
        status, headers, _ = await fetch(port, "/?token=s3cret")
        assert status == 303 and headers["location"] == "/"
        cookie = headers["set-cookie"].split(";")[0]
        assert "httponly" in headers["set-cookie"].lower()
        status, _, page = await fetch(port, "/", headers={"Cookie": cookie})
        assert status == 200 and b"argentic-tools dashboard" in page
        status, _, body = await fetch(port, "/api/events", headers={"Cookie": cookie})
        assert status == 200 and body == b"event: snapshot\n"

        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(TIMEOUT):
            assert await process.wait() == 0


async def test_without_a_token_only_loopback_names_and_same_origin_json_changes_are_served(
    dashboard: str,
) -> None:
    port = int(dashboard.rsplit(":", 1)[1].strip("/"))
    status, headers, _ = await fetch(port, "/")
    assert status == 200
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    # A site whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing.
    status, _, _ = await fetch(port, "/api/state", headers={"Host": "attacker.example"})
    assert status == 403
    # Another site cannot make a visitor's browser call a tool.
    body = '{"tool": "echo", "arguments": {"message": "x"}}'
    status, _, _ = await fetch(
        port,
        "/api/call",
        method="POST",
        headers={"Content-Type": "application/json", "Origin": "http://attacker.example"},
        body=body,
    )
    assert status == 403
    status, _, _ = await fetch(
        port, "/api/call", method="POST", headers={"Content-Type": "text/plain"}, body=body
    )
    assert status == 415
    status, _, answer = await fetch(
        port,
        "/api/call",
        method="POST",
        headers={"Content-Type": "application/json"},
        body='{"tool": "no_such_tool", "arguments": {}, "timeout": 1}',
    )
    assert status == 200 and json.loads(answer)["error_code"] == "not_found"
    status, _, _ = await fetch(port, "/api/calls/no-such-task")
    assert status == 404
    for body, problem in (
        ("not json", "Expecting value"),
        ('{"tool": "echo", "arguments": [1]}', "'arguments' must be a JSON object."),
        ('{"tool": "echo", "timeout": 99999}', "'timeout' must be a number of seconds"),
    ):
        status, _, answer = await fetch(
            port,
            "/api/call",
            method="POST",
            headers={"Content-Type": "application/json"},
            body=body,
        )
        assert status == 400 and problem in json.loads(answer)["error"]
    status, _, _ = await fetch(port, "/api/history")
    assert status == 404  # started without a history file


CALL_HEAD = b'{"tool": "no_such_tool", "timeout": 1, "arguments": {"pad": "'
CALL_TAIL = b'"}}'


async def post_chunked(port: int, pad: int) -> tuple[int, bytes, bool]:
    """POST a call to ``/api/call`` whose body, chunked, has ``pad`` bytes of padding.

    Sends 64 KiB chunks and reads the answer at the same time. Returns its status, its
    body, and whether the whole request had been sent when the answer began.
    """
    chunks = [CALL_HEAD, *[b"x" * 65536] * (pad // 65536), b"x" * (pad % 65536), CALL_TAIL]
    chunks = [chunk for chunk in chunks if chunk]  # an empty chunk would end the body
    answer = bytearray()
    answered = anyio.Event()
    sent_all_first = False
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:

        async def upload() -> None:
            nonlocal sent_all_first
            await stream.send(
                b"POST /api/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            # The server closes a refused upload: sending then fails, which ends it here.
            with contextlib.suppress(anyio.BrokenResourceError):
                for chunk in chunks:
                    if answered.is_set():
                        return
                    await stream.send(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                await stream.send(b"0\r\n\r\n")
                sent_all_first = not answered.is_set()

        async def download() -> None:
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                while True:
                    answer.extend(await stream.receive())
                    answered.set()
                    head, found, body = answer.partition(b"\r\n\r\n")
                    length = re.search(rb"(?i)content-length: (\d+)", head)
                    if found and length and len(body) >= int(length.group(1)):
                        return

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(upload)
                group.start_soon(download)
    head, _, body = bytes(answer).partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body, sent_all_first


async def test_a_chunked_call_body_past_the_limit_is_refused_while_it_is_still_coming(
    dashboard: str,
) -> None:
    port = int(dashboard.rsplit(":", 1)[1].strip("/"))
    fits = MAX_BODY_BYTES - len(CALL_HEAD) - len(CALL_TAIL)
    status, body, sent_all_first = await post_chunked(port, fits)
    assert status == 200 and json.loads(body)["error_code"] == "not_found"
    assert sent_all_first
    # No Content-Length to check: the limit holds on the bytes read. The answer comes
    # once the limit is passed, long before the 64 MiB are sent, and the rest is never read.
    status, body, sent_all_first = await post_chunked(port, 64 * MAX_BODY_BYTES)
    assert status == 413
    assert json.loads(body) == {"error": f"The body exceeds {MAX_BODY_BYTES} bytes."}
    assert not sent_all_first
    # One byte past the limit is enough.
    status, _, _ = await post_chunked(port, fits + 1)
    assert status == 413
    status, _, _ = await fetch(port, "/api/state")
    assert status == 200


async def test_with_a_history_file_the_dashboard_lists_older_calls_with_filters(
    mosquitto: Mosquitto,
    topics: Topics,
    tool_process: ToolProcess,
    tmp_path: Path,
) -> None:
    path = tmp_path / "calls.db"
    async with (
        SqliteRecorder(path) as recorder,
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("fail", timeout=15)
        await manager.execute_tool("echo", {"message": "kept"}, context=CallContext(thread_id="t1"))
        await manager.execute_tool("fail", {})
        await manager.flush_observations()
        await recorder.flush()
        async with (
            Messager(mosquitto.url, will_topic=None) as observer,
            Dashboard(manager, observer, history=path).serving("127.0.0.1", 0) as port,
        ):
            status, _, body = await fetch(port, "/api/history")
            assert status == 200
            calls = json.loads(body)["calls"]
            assert [call["tool_name"] for call in calls] == ["fail", "echo"]
            status, _, body = await fetch(port, "/api/history?thread=t1")
            assert [call["arguments"] for call in json.loads(body)["calls"]] == [
                {"message": "kept"}
            ]
            status, _, body = await fetch(port, "/api/history?outcome=execution_error")
            assert [call["tool_name"] for call in json.loads(body)["calls"]] == ["fail"]
            _, _, state = await fetch(port, "/api/state")
            assert json.loads(state)["history"] == str(path)


async def test_a_calls_details_show_images_play_audio_and_keep_html_as_text(
    browser: Browser,
    mosquitto: Mosquitto,
    prefix: str,
    manager: ToolManager,
    dashboard: str,
) -> None:
    async with ToolProcess("tests.support.media_tools", mosquitto.url, prefix):
        await manager.wait_for_tool("html_note", timeout=30)
        page = await open_page(browser, dashboard)

        async def details(tool: str, arguments: dict[str, Any] | None = None) -> None:
            result = await manager.execute_tool(tool, arguments or {})
            assert result.ok, result
            row = f"document.querySelector('tr[data-task-id={js(result.task_id)}]')"
            await page.wait_for(f"{row} && {row}.dataset.status === 'success'", PAGE_TIMEOUT)
            await page.evaluate(f"{row}.click()")
            await page.wait_for(
                f"document.getElementById('detail-content').dataset.taskId === {js(result.task_id)}"
                " && !document.getElementById('detail-content-box').hidden",
                PAGE_TIMEOUT,
            )

        # The image shows: decoded by the browser (the page's CSP lets data: images in).
        await details("mixed")
        size = await page.wait_for(
            """(() => {
                const image = document.querySelector('#detail-content img');
                return image && image.complete && image.naturalWidth > 0 &&
                    [image.naturalWidth, image.naturalHeight];
            })()""",
            PAGE_TIMEOUT,
        )
        assert size == [1, 1]
        blocks = await page.evaluate(
            "[...document.querySelectorAll('#detail-content .block')]"
            ".map((block) => [block.dataset.type, block.textContent])"
        )
        assert blocks == [
            ["text", "a chart and its source"],
            ["image", ""],
            ["resource_link", "[link chart.csv: file:///chart.csv]"],
            ["text", '{"rows": 3}'],
        ]

        # The audio plays from a data: URL too (media-src data:), with its controls.
        await details("beep")
        audio = await page.wait_for(
            """(() => {
                const audio = document.querySelector('#detail-content audio');
                return audio && audio.readyState >= 1 && [audio.controls, audio.src.slice(0, 20)];
            })()""",
            PAGE_TIMEOUT,
        )
        assert audio == [True, "data:audio/wav;base6"]

        # The call form's answer shows its image too.
        await page.evaluate(
            """(() => {
                const select = document.getElementById('form-tool');
                select.value = 'tiny_image';
                select.dispatchEvent(new Event('change'));
                document.getElementById('form-submit').click();
            })()"""
        )
        await page.wait_for(
            "(() => { const image = document.querySelector('#form-content img');"
            " return image && image.complete && image.naturalWidth === 1; })()",
            PAGE_TIMEOUT,
        )

        # HTML in a text block stays text; an SVG is no image here, only a download.
        await details("html_note")
        shown = await page.evaluate(
            """(() => {
                const box = document.getElementById('detail-content');
                return {
                    text: box.querySelector('pre').textContent,
                    elements: [...box.querySelectorAll('img, script, b, svg, object, iframe')]
                        .length,
                    download: [...box.querySelectorAll('a')].map((a) => [a.textContent,
                        a.getAttribute('href').split(',')[0], a.getAttribute('download')]),
                    pwned: window.pwned === undefined ? null : window.pwned,
                };
            })()"""
        )
    assert shown == {
        "text": HTML,
        "elements": 0,
        "download": [
            [
                "Download image/svg+xml, 79 B",
                "data:application/octet-stream;base64",
                "content-2.bin",
            ]
        ],
        "pwned": None,
    }


# -- a call's exchange with its caller ---------------------------------------------------

EXCHANGE_ITEMS = """(() => {
    const box = document.getElementById('detail-exchange-box');
    const items = [...document.querySelectorAll('#detail-exchange li')];
    return !box.hidden && items.length > 0 && items.map((item) => [
        item.dataset.kind,
        ...[...item.querySelectorAll('.x-question, .x-answer')].map((part) => part.textContent),
        ...(item.dataset.kind === 'log' ? [item.querySelector('.x-body').textContent] : []),
    ]);
})()"""
"""The details' exchange, one list per item: its kind, then its question and answer (or its
log line)."""


async def test_an_older_calls_details_show_its_questions_answers_and_log_lines(
    browser: Browser, mosquitto: Mosquitto, topics: Topics, tmp_path: Path
) -> None:
    path = tmp_path / "calls.db"
    async with SqliteRecorder(path) as recorder:
        recorder.record(observation(1, tool_name="pay", exchanges=EXCHANGES))
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics) as manager,
        Messager(mosquitto.url, will_topic=None) as observer,
        Dashboard(manager, observer, history=path).serving("127.0.0.1", 0) as port,
    ):
        page = await open_page(browser, f"http://127.0.0.1:{port}/")
        row = "document.querySelector('#history-body tr[data-task-id=\"task-1\"]')"
        await page.wait_for(row, PAGE_TIMEOUT)
        await page.evaluate(f"{row}.click()")
        items = await page.wait_for(EXCHANGE_ITEMS, PAGE_TIMEOUT)
        tags = await page.evaluate("document.querySelectorAll('#detail-exchange b').length")
    assert items == [
        [
            "elicit",
            "asked: Pay 30 EUR to <b>ACME</b>?\nfields: confirm",
            'answered {"confirm":true}',
        ],
        [
            "sample",
            "asked for a completion:\nuser: Summarise the invoice\n"
            "user: [image/png, 3.0 KB, not kept]",
            "reply from m1: An invoice.",
        ],
        ["elicit", "asked: Sure?", "declined"],
        ["elicit", "asked: Again?", "no answer: no person"],
        ["log", 'warning (bank) paid late {"days":2}'],
    ]
    assert tags == 0  # the tool's words are text, never markup


async def test_a_live_calls_details_show_what_its_tool_asked_and_logged_as_it_happens(
    browser: Browser, mosquitto: Mosquitto, prefix: str, manager: ToolManager, dashboard: str
) -> None:
    async with ToolProcess("tests.support.asking_tools", mosquitto.url, prefix):
        await manager.wait_for_tool("register", timeout=30)
        await manager.wait_for_tool("chatty", timeout=30)
        page = await open_page(browser, dashboard)
        asked = anyio.Event()
        answer = anyio.Event()

        async def person(request: ElicitRequest, call: CallRef) -> ElicitResult:
            asked.set()
            await answer.wait()  # the page shows the question while it waits
            return ElicitResult(action="accept", content={"name": "Ada", "age": 36})

        async with anyio.create_task_group() as group:
            registering: list[Any] = []

            async def register() -> None:
                registering.append(await manager.execute_tool("register", {}, on_elicit=person))

            group.start_soon(register)
            with anyio.fail_after(PAGE_TIMEOUT):
                await asked.wait()
            row = "document.querySelector('#calls-body tr[data-tool=\"register\"]')"
            await page.wait_for(row, PAGE_TIMEOUT)
            await page.evaluate(f"{row}.click()")
            waiting = await page.wait_for(EXCHANGE_ITEMS, PAGE_TIMEOUT)
            answer.set()
        (result,) = registering
        assert result.ok, result
        assert waiting == [
            [
                "elicit",
                "asked: Who is registering?\nfields: name, age, colour, toppings, newsletter",
                "(waiting for the answer)",
            ]
        ]
        # The open details follow the call: the answer shows once it is given.
        answered = await page.wait_for(
            f"(() => {{ const items = {EXCHANGE_ITEMS}; "
            "return items && items[0][2].startsWith('answered') && items; })()",
            PAGE_TIMEOUT,
        )
        assert answered[0][2] == 'answered {"name":"Ada","age":36}'

        chatty = await manager.execute_tool("chatty", {"lines": 1}, on_log=lambda r, c: None)
        assert chatty.ok, chatty
        row = f"document.querySelector('tr[data-task-id={js(chatty.task_id)}]')"
        await page.wait_for(f"{row} && {row}.dataset.status === 'success'", PAGE_TIMEOUT)
        await page.evaluate(f"{row}.click()")
        logs = await page.wait_for(
            # detail-content's task id is set last: the details are complete.
            f"document.getElementById('detail-content').dataset.taskId === {js(chatty.task_id)}"
            f" && {EXCHANGE_ITEMS}",
            PAGE_TIMEOUT,
        )
    assert logs == [
        ["log", "debug detail 0"],
        ["log", 'info (chatty) halfway there {"lines":1}'],
        ["log", "warning almost done"],
    ]


async def test_a_call_its_caller_picked_up_again_after_a_restart_is_marked(
    browser: Browser, mosquitto: Mosquitto, prefix: str, dashboard: str, tmp_path: Path
) -> None:
    topics = Topics.with_prefix(prefix)
    journal, runs = tmp_path / "calls.journal", tmp_path / "runs"
    runs.mkdir()
    async with ToolProcess("tests.support.long_proc", mosquitto.url, prefix):
        page = await open_page(browser, dashboard)
        async with (
            Messager(mosquitto.url, client_id=f"agent-{prefix}") as messager,
            ToolManager(messager, topics=topics, journal=journal) as first,
        ):
            await first.wait_for_tool("counted", timeout=30)
            arguments = {"label": "job", "seconds": 2, "directory": str(runs)}
            call = asyncio.create_task(first.execute_tool("counted", arguments, "job", 60))
            with anyio.fail_after(PAGE_TIMEOUT):
                while not (runs / "job.runs").exists():  # the tool is at work
                    await anyio.sleep(0.02)
        await call  # the first process stops waiting; the call goes on at the tool
        row = "document.querySelector('#calls-body tr[data-tool=\"counted\"]')"
        await page.wait_for(row, PAGE_TIMEOUT)
        assert await page.evaluate(f"{row}.querySelector('.reattached') === null")
        async with (
            Messager(mosquitto.url, client_id=f"agent-{prefix}") as messager,
            ToolManager(messager, topics=topics, journal=journal) as second,
        ):
            result = await second.result("job", timeout=30)
        assert result.ok, result
        mark = await page.wait_for(
            f"{row} && {row}.dataset.status === 'success' && {row}.querySelector('.reattached')"
            f" && {row}.querySelector('.reattached').textContent",
            PAGE_TIMEOUT,
        )
    assert mark == "restarted"


async def test_a_dashboard_with_auth_keys_admits_the_gateways_api_keys(
    mosquitto: Mosquitto, prefix: str, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.toml"
    made = await run_cli("mcp", "keys", "--file", str(keys), "--subject", "ops")
    assert made.returncode == 0, made.stderr
    key = made.stdout.decode().strip()
    args = ("dashboard", "--http", "127.0.0.1:0", "--token", "s3cret", "--auth", "keys", str(keys))
    async with cli_process(*args, *connection(mosquitto.url, prefix)) as process:
        port = await printed_port(process)
        refused, _, _ = await fetch(port, "/api/state", headers={"Authorization": "Bearer nope"})
        assert refused == 401
        status, _, body = await fetch(
            port, "/api/state", headers={"Authorization": f"Bearer {key}"}
        )
        assert status == 200 and "counters" in json.loads(body)
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(TIMEOUT):
            assert await process.wait() == 0


async def printed_port(process: anyio.abc.Process, then: bytes = b"") -> int:
    """The port of the address a ``dashboard`` process printed on its first line.

    ``then``: what the address must go on with after its ``/`` (its ``?token=``).
    """
    assert process.stderr is not None
    seen = b""
    with anyio.fail_after(TIMEOUT):
        while b"\n" not in seen:
            seen += await process.stderr.receive()
    printed = re.search(rb"Dashboard on http://127\.0\.0\.1:(\d+)/" + re.escape(then), seen)
    assert printed, seen
    return int(printed.group(1))


async def test_a_dashboard_with_auth_oauth_admits_the_issuers_tokens_for_its_audience(
    mosquitto: Mosquitto, prefix: str
) -> None:
    """--auth oauth: a real OpenID provider's JWTs for --audience open it, others do not."""
    audience = "https://dashboard.example/"
    ops = OidcClient("ops-bot", "ops-secret", "ops")
    async with oidc_provider(audience, "ops", [ops]) as issuer:
        token = await client_token(issuer, ops)
        elsewhere = await client_token(issuer, ops, resource="https://elsewhere.example/")
        args = ["dashboard", "--http", "127.0.0.1:0", "--token", "s3cret", "--auth", "oauth"]
        args += ["--issuer", issuer, "--audience", audience]
        async with cli_process(*args, *connection(mosquitto.url, prefix)) as process:
            port = await printed_port(process)
            for refused in ("nope", elsewhere):  # not a JWT; the issuer's, for another audience
                bearer = {"Authorization": f"Bearer {refused}"}
                status, headers, _ = await fetch(port, "/api/state", headers=bearer)
                assert status == 401 and headers["www-authenticate"].startswith("Bearer")
            bearer = {"Authorization": f"Bearer {token}"}
            status, _, body = await fetch(port, "/api/state", headers=bearer)
            assert status == 200 and "counters" in json.loads(body)
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(TIMEOUT):
                assert await process.wait() == 0
