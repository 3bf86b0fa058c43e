"""MCP Tasks (``io.modelcontextprotocol/tasks``) through ``argentic-tools mcp serve --http``.

A raw JSON-RPC client over HTTP speaks 2026-07-28 with the extension, as the
specification writes it (headers ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``,
the per-request ``_meta`` envelope): a long tool answers with a task polled to completion,
a task is cancelled at the tool, a question is answered with ``tasks/update``, tasks are
their creator's only, and a gateway killed mid-task and started again on its journal
still answers ``tasks/get`` with the call's real result (the tool ran once).
"""

import importlib.util
import json
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import httpx
import mcp_types as types

from argentic_tools.mcp.tasks.tasks import EXTENSION
from tests.support.brokers import Mosquitto
from tests.support.gateways import http_gateway
from tests.support.processes import ToolProcess
from tests.support.task_tools import TOOL_NAMES

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
TERMINAL = ("completed", "failed", "cancelled")
WAIT = 60.0
"""Bound on every wait of these tests."""


@pytest.fixture(scope="module")
def tasks_prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def task_tools(mosquitto: Mosquitto, tasks_prefix: str) -> Iterator[ToolProcess]:
    """The long tools in their own process, for the whole module."""
    with ToolProcess("tests.support.task_tools", mosquitto.url, tasks_prefix) as process:
        process.wait_registered(mosquitto.url, tasks_prefix, TOOL_NAMES)
        yield process


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.data = error.get("data")


class RawClient:
    """A 2026-07-28 client written by hand: one POST a request, nothing from the SDK."""

    def __init__(self, http: httpx.AsyncClient, url: str, name: str, *, tasks: bool = True):
        self.http = http
        self.url = url
        self.name = name
        self.tasks = tasks
        self._ids = 0

    async def request(
        self, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The result of ``method``; raises :class:`RpcError` for an error answer."""
        self._ids += 1
        capabilities: dict[str, Any] = {"elicitation": {}}
        if self.tasks:
            capabilities["extensions"] = {EXTENSION: {}}
        meta = {
            types.PROTOCOL_VERSION_META_KEY: MODERN,
            types.CLIENT_CAPABILITIES_META_KEY: capabilities,
            types.CLIENT_INFO_META_KEY: {"name": self.name, "version": "1.0"},
        }
        body = {
            "jsonrpc": "2.0",
            "id": self._ids,
            "method": method,
            "params": {**params, "_meta": meta},
        }
        sent = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
        }
        named = params.get("taskId") if method.startswith("tasks/") else params.get("name")
        if named is not None:
            sent["Mcp-Name"] = str(named)
        sent.update(headers or {})
        response = await self.http.post(self.url, json=body, headers=sent)
        answer = _answer(response, self._ids)
        if "error" in answer:
            raise RpcError(answer["error"])
        result: dict[str, Any] = answer["result"]
        return result

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.request("tasks/get", {"taskId": task_id})

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """Poll ``tasks/get`` at the task's ``pollIntervalMs`` until a status in ``statuses``."""
        with anyio.fail_after(WAIT):
            while True:
                task = await self.get(task_id)
                if task["status"] in statuses:
                    return task
                await anyio.sleep(task.get("pollIntervalMs", 500) / 1000)


def _answer(response: httpx.Response, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response to ``request_id``, from a JSON body or an SSE stream."""
    if response.headers.get("content-type", "").startswith("application/json"):
        found: dict[str, Any] = response.json()
        return found
    for line in response.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return dict(message)
    raise AssertionError(
        f"no answer to request {request_id}: {response.status_code} {response.text}"
    )


def gateway(url: str, prefix: str, *options: str) -> Any:
    """``mcp serve --http`` on a free port (its MCP URL and process); may be killed inside."""
    return http_gateway(url, prefix, "--wait", "5", *options)


@pytest.fixture
async def served(
    mosquitto: Mosquitto, tasks_prefix: str, task_tools: ToolProcess
) -> AsyncIterator[str]:
    async with gateway(mosquitto.url, tasks_prefix) as (url, _):
        yield url


async def _marked(path: Path) -> None:
    """Wait (bounded) for the tool to leave the file ``path``."""
    with anyio.fail_after(WAIT):
        while not await anyio.Path(path).exists():
            await anyio.sleep(0.05)


async def test_a_long_tool_answers_with_a_task_polled_to_completion(
    served: str, tmp_path: Path
) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        alice = RawClient(http, served, "alice")
        created = await alice.call(
            "crunch", {"seconds": 0.5, "label": "polled", "directory": str(tmp_path)}
        )
        assert created["resultType"] == "task"
        assert created["status"] == "working"
        assert len(created["taskId"]) >= 32
        assert created["ttlMs"] > 0 and created["pollIntervalMs"] > 0
        assert {"result", "error", "inputRequests"}.isdisjoint(created)
        done = await alice.until(created["taskId"], *TERMINAL)
        assert done["status"] == "completed"
        assert done["resultType"] == "complete"
        assert done["result"]["content"][0]["text"] == "polled: crunched for 0.5 s"
        assert not done["result"].get("isError")
        # Without the extension, the same tool is an ordinary call.
        plain = RawClient(http, served, "alice", tasks=False)
        result = await plain.call("crunch", {"seconds": 0.1, "label": "plain"})
        assert result["resultType"] == "complete"
        assert result["content"][0]["text"] == "plain: crunched for 0.1 s"


async def test_an_untagged_call_becomes_a_task_only_once_it_runs_long(served: str) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        alice = RawClient(http, served, "alice")
        quick = await alice.call("plain_crunch", {"seconds": 0.1, "label": "quick"})
        assert quick["resultType"] == "complete"
        assert "taskId" not in quick
        slow = await alice.call("plain_crunch", {"seconds": 3, "label": "slow"})
        assert slow["resultType"] == "task"
        done = await alice.until(slow["taskId"], *TERMINAL)
        assert done["result"]["content"][0]["text"] == "slow: crunched for 3 s"


async def test_a_cancelled_task_stops_its_tool(served: str, tmp_path: Path) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        alice = RawClient(http, served, "alice")
        created = await alice.call(
            "crunch", {"seconds": 120, "label": "cancelled", "directory": str(tmp_path)}
        )
        task_id = created["taskId"]
        with anyio.fail_after(WAIT):  # the tool is working: its progress is the status
            while "statusMessage" not in (task := await alice.get(task_id)):
                await anyio.sleep(task["pollIntervalMs"] / 1000)
        assert task["status"] == "working"
        assert "crunching" in task["statusMessage"]
        ack = await alice.request("tasks/cancel", {"taskId": task_id})
        assert {"taskId", "status", "result"}.isdisjoint(ack)
        assert ack["resultType"] == "complete"
        ended = await alice.until(task_id, *TERMINAL)
        assert ended["status"] == "cancelled"
        await _marked(tmp_path / "cancelled.cancelled")
        assert not (tmp_path / "cancelled.done").exists()
        # Cancelling an ended task is acknowledged the same way.
        assert (await alice.request("tasks/cancel", {"taskId": task_id}))["resultType"] == (
            "complete"
        )


async def test_a_question_puts_the_task_in_input_required_until_tasks_update(
    served: str,
) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        alice = RawClient(http, served, "alice")
        created = await alice.call("approve", {"item": "the budget"})
        waiting = await alice.until(created["taskId"], "input_required", *TERMINAL)
        assert waiting["status"] == "input_required"
        [(key, request)] = waiting["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["message"] == "Approve the budget?"
        answer = {"action": "accept", "content": {"confirm": True}}
        ack = await alice.request(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {key: answer, "unknown": answer}},
        )
        assert ack["resultType"] == "complete" and "status" not in ack
        done = await alice.until(created["taskId"], *TERMINAL)
        assert done["result"]["content"][0]["text"] == "the budget approved"


async def test_a_task_is_its_creators_only(served: str) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        alice = RawClient(http, served, "alice")
        bob = RawClient(http, served, "bob")
        created = await alice.call("crunch", {"seconds": 30, "label": "private"})
        task_id = created["taskId"]
        for method in ("tasks/get", "tasks/cancel"):
            with pytest.raises(RpcError) as refused:
                await bob.request(method, {"taskId": task_id})
            assert refused.value.code == types.INVALID_PARAMS
        with pytest.raises(RpcError) as unknown:
            await alice.get("no-such-task-" + task_id[:8])
        assert unknown.value.code == types.INVALID_PARAMS
        without = RawClient(http, served, "alice", tasks=False)
        with pytest.raises(RpcError) as missing:
            await without.get(task_id)
        assert missing.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
        assert missing.value.data == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
        with pytest.raises(RpcError) as mismatch:
            await alice.request("tasks/get", {"taskId": task_id}, {"Mcp-Name": "another"})
        assert mismatch.value.code == -32020
        assert (await alice.get(task_id))["status"] == "working"  # bob's cancel did nothing
        await alice.request("tasks/cancel", {"taskId": task_id})
        assert (await alice.until(task_id, *TERMINAL))["status"] == "cancelled"


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
async def test_a_gateway_restarted_mid_task_still_answers(
    mosquitto: Mosquitto,
    tasks_prefix: str,
    task_tools: ToolProcess,
    tmp_path: Path,
    stop: signal.Signals,
) -> None:
    journal = str(tmp_path / "gateway.db")
    async with httpx.AsyncClient(timeout=WAIT) as http:
        async with gateway(mosquitto.url, tasks_prefix, "--journal", journal) as (url, process):
            alice = RawClient(http, url, "alice")
            created = await alice.call(
                "crunch", {"seconds": 4, "label": "durable", "directory": str(tmp_path)}
            )
            task_id = created["taskId"]
            await _marked(tmp_path / "durable.runs")
            process.send_signal(stop)  # mid-task
            with anyio.fail_after(WAIT):
                await process.wait()
        async with gateway(mosquitto.url, tasks_prefix, "--journal", journal) as (url, _):
            alice = RawClient(http, url, "alice")
            assert (await alice.get(task_id))["status"] in ("working", "completed")
            done = await alice.until(task_id, *TERMINAL)
            assert done["status"] == "completed", done
            assert done["result"]["content"][0]["text"] == "durable: crunched for 4 s"
            with pytest.raises(RpcError) as refused:
                await RawClient(http, url, "bob").get(task_id)
            assert refused.value.code == types.INVALID_PARAMS
    assert (tmp_path / "durable.runs").read_text() == "run\n"  # it ran once


@pytest.mark.skipif(
    importlib.util.find_spec("fastmcp_tasks") is None,
    reason="PydanticAI's MCP toolset runs tasks with fastmcp-tasks (pydantic-ai-slim[mcp-tasks])",
)
async def test_pydantic_ai_toolset_with_tasks_preferred_gets_the_tasks_result(
    served: str, tmp_path: Path
) -> None:
    """PydanticAI's MCP toolset (FastMCP 4's client, with ``fastmcp-tasks``) drives a task."""
    import httpx2
    from pydantic_ai.mcp import MCPToolset

    sent: list[str] = []  # the JSON-RPC methods the toolset's client sent, in order

    async def note(request: httpx2.Request) -> None:
        if request.method == "POST":
            sent.append(json.loads(request.content).get("method", "(a response)"))

    http = httpx2.AsyncClient(event_hooks={"request": [note]}, timeout=WAIT)
    toolset: Any = MCPToolset(served, prefer_tasks=True, http_client=http)
    async with http, toolset:
        # An ordinary call of a long-running tool: the gateway answers with a task, which
        # the client polls to its result.
        sent.clear()
        value = await toolset.direct_call_tool(
            "crunch", {"seconds": 0.5, "label": "agent", "directory": str(tmp_path)}
        )
        assert value == "agent: crunched for 0.5 s"
        # It was a task: the client polled the task the call became, not only the call.
        assert sent[0] == "tools/call" and "tasks/get" in sent, sent
        # The task path asked for explicitly (as prefer_tasks does on FastMCP 3).
        sent.clear()
        tasked = await toolset.direct_call_tool(
            "crunch", {"seconds": 0.3, "label": "tasked"}, use_task=True
        )
        assert tasked == "tasked: crunched for 0.3 s"
        assert sent[0] == "tools/call" and "tasks/get" in sent, sent
    assert (tmp_path / "agent.runs").read_text() == "run\n"
