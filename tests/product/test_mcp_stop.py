"""``argentic-tools mcp serve --http`` stopped with SIGTERM, as an orchestrator stops it:
new calls are refused with 503 and ``Retry-After``, the calls in flight finish (or, past
``--drain-timeout``, are cancelled at their tools), and the process exits 0."""

import os
import pathlib
import signal
import uuid
from collections.abc import Iterator

import anyio
import httpx
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types  # noqa: E402
from anyio.abc import Process  # noqa: E402
from mcp import Client  # noqa: E402

from tests.support.brokers import Mosquitto  # noqa: E402
from tests.support.gateways import http_gateway  # noqa: E402
from tests.support.processes import ToolProcess  # noqa: E402

pytestmark = pytest.mark.anyio

NEW_CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "steps", "arguments": {"count": 1, "interval": 0}},
}


@pytest.fixture(scope="module")
def prefix() -> str:
    return f"s{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def long_tools(mosquitto: Mosquitto, prefix: str) -> Iterator[ToolProcess]:
    with ToolProcess("tests.support.long_proc", mosquitto.url, prefix) as process:
        process.wait_registered(mosquitto.url, prefix, ("steps",))
        yield process


class Started:
    """A progress callback that notes the call's first progress: it is running at its tool."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.event.set()


async def call_after_sigterm(url: str) -> tuple[httpx.Response, httpx.Response]:
    """A new call sent once the gateway has heard SIGTERM: the first answer refusing it,
    and what ``/readyz`` says then.

    Until the signal is handled a call may still be taken (it starts and ends at once).
    """
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        while True:
            response = await http.post(url, json=NEW_CALL, headers=headers)
            if response.status_code == 503:
                return response, await http.get(url.rsplit("/", 1)[0] + "/readyz")
            await anyio.sleep(0.02)


async def stop_during(
    url: str, process: Process, arguments: dict[str, object]
) -> tuple[types.CallToolResult, httpx.Response, httpx.Response]:
    """Call ``steps`` with ``arguments``, SIGTERM the gateway once the call runs, send a new
    call: the first call's result, the new call's response and ``/readyz``'s then."""
    started = Started()
    results: list[types.CallToolResult] = []
    async with Client(url) as client, anyio.create_task_group() as group:

        async def in_flight() -> None:
            results.append(await client.call_tool("steps", arguments, progress_callback=started))

        group.start_soon(in_flight)
        await started.event.wait()
        process.send_signal(signal.SIGTERM)
        refused, readiness = await call_after_sigterm(url)
    return results[0], refused, readiness


async def test_sigterm_refuses_new_calls_lets_the_call_in_flight_finish_and_exits_0(
    mosquitto: Mosquitto, prefix: str, long_tools: ToolProcess
) -> None:
    async with http_gateway(mosquitto.url, prefix) as (url, process):
        with anyio.fail_after(30):
            result, refused, readiness = await stop_during(
                url, process, {"count": 20, "interval": 0.1}
            )
            await process.wait()
    assert refused.headers["Retry-After"] == "1"
    # A load balancer polling /readyz stops sending traffic too.
    assert readiness.status_code == 503
    assert readiness.json() == {"status": "unavailable", "reason": "stopping"}
    assert refused.json()["id"] == NEW_CALL["id"]
    assert "stopping" in refused.json()["error"]["message"]
    assert not result.is_error, result
    assert result.structured_content == {"result": 20}
    assert process.returncode == 0


async def test_a_call_longer_than_the_drain_timeout_is_cancelled_at_its_tool_and_exits_0(
    mosquitto: Mosquitto, prefix: str, long_tools: ToolProcess, tmp_path: pathlib.Path
) -> None:
    arguments = {"count": 300, "interval": 0.1, "label": "long", "directory": str(tmp_path)}
    async with http_gateway(mosquitto.url, prefix, "--drain-timeout", "1") as (url, process):
        with anyio.fail_after(30):
            result, refused, _ = await stop_during(url, process, arguments)
            await process.wait()
            while "long.stopped" not in os.listdir(tmp_path):
                await anyio.sleep(0.02)
    assert refused.status_code == 503
    assert result.is_error
    assert "stopped before the call finished" in result.content[0].text  # type: ignore[union-attr]
    assert "long.done" not in os.listdir(tmp_path)
    assert process.returncode == 0
