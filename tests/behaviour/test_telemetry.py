"""Traces across processes and metrics scraped over HTTP, with the OpenTelemetry SDK.

This process installs the SDK once (an in-memory span exporter, a Prometheus metric
reader); a tool process (``tests.support.otel_tool``) installs its own and writes its
finished spans to a file the test reads.
"""

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from argentic_tools import (
    InMemoryRecorder,
    Messager,
    ToolManager,
    ToolService,
    Topics,
    start_metrics_server,
    tool,
)
from tests.support.brokers import Mosquitto
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    """The SDK in this process, once: a tracer provider can be installed only once."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    return _EXPORTER


def hex_id(value: int) -> str:
    return f"{value:032x}"


def caller_span(exporter: InMemorySpanExporter, call_id: str) -> ReadableSpan:
    found = [
        s
        for s in exporter.get_finished_spans()
        if s.kind is SpanKind.CLIENT and (s.attributes or {}).get("gen_ai.tool.call.id") == call_id
    ]
    assert len(found) == 1, found
    return found[0]


async def tool_spans(path: Path, count: int) -> list[dict[str, Any]]:
    """The tool process's spans, once ``count`` are written (bounded wait)."""
    with anyio.fail_after(15):
        while True:
            if await anyio.Path(path).exists():
                lines = (await anyio.Path(path).read_text()).splitlines()
                if len(lines) >= count:
                    return [json.loads(line) for line in lines]
            await anyio.sleep(0.05)


async def test_one_call_is_one_trace_across_the_caller_and_the_tool_process(
    spans: InMemorySpanExporter,
    mosquitto: Mosquitto,
    prefix: str,
    manager: ToolManager,
    tmp_path: Path,
) -> None:
    written = tmp_path / "tool-spans.jsonl"
    async with ToolProcess("tests.support.otel_tool", mosquitto.url, prefix, str(written)):
        await manager.wait_for_tool("traced", timeout=15)
        await manager.wait_for_tool("broken", timeout=15)
        with trace.get_tracer("test").start_as_current_span("agent step") as step:
            ok = await manager.execute_tool("traced", {"x": 1}, call_id="call-ok")
            failed = await manager.execute_tool("broken", {}, call_id="call-broken")
        # The tool writes "inner work", then its own span, for each call it served.
        written_spans = await tool_spans(written, 3)
    assert ok.ok and not failed.ok

    caller = caller_span(spans, "call-ok")
    trace_id = caller.context.trace_id
    assert caller.name == "execute_tool traced"
    assert caller.parent is not None and caller.parent.span_id == step.get_span_context().span_id
    assert caller.attributes is not None
    assert caller.attributes["gen_ai.operation.name"] == "execute_tool"
    assert caller.attributes["gen_ai.tool.name"] == "traced"
    assert "error.type" not in caller.attributes
    # The tool knows the trace: ToolContext.trace_id comes from the task's traceparent.
    assert ok.result == {"x": 1, "trace_id": hex_id(trace_id)}

    by_name = {s["name"]: s for s in written_spans}
    server = by_name["execute_tool traced"]
    assert server["kind"] == "SpanKind.SERVER"
    assert server["context"]["trace_id"] == f"0x{hex_id(trace_id)}"
    assert server["parent_id"] == f"0x{caller.context.span_id:016x}"
    assert server["attributes"]["gen_ai.tool.name"] == "traced"
    assert server["attributes"]["gen_ai.tool.call.id"] == "call-ok"
    assert server["attributes"]["gen_ai.tool.description"].startswith("Return x")
    inner = by_name["inner work"]
    assert inner["parent_id"] == server["context"]["span_id"]

    broken_caller = caller_span(spans, "call-broken")
    assert broken_caller.context.trace_id == trace_id
    assert broken_caller.attributes is not None
    assert broken_caller.attributes["error.type"] == "execution_error"
    assert broken_caller.status.status_code is StatusCode.ERROR
    broken_server = by_name["execute_tool broken"]
    assert broken_server["attributes"]["error.type"] == "execution_error"
    assert broken_server["status"]["status_code"] == "ERROR"
    assert broken_server["parent_id"] == f"0x{broken_caller.context.span_id:016x}"


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text: str = response.read().decode()
    return text


def value(text: str, name: str, **labels: str) -> float:
    """The sample ``name`` whose labels include ``labels`` (0 when absent)."""
    for line in text.splitlines():
        match = re.match(rf"{re.escape(name)}\{{(.*)\}} (\S+)$", line)
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            return float(match.group(2))
    return 0.0


@tool
def metered(fail: bool = False) -> str:
    """Succeed, or fail when asked."""
    if fail:
        raise ValueError("asked to fail")
    return "ok"


async def test_the_prometheus_endpoint_counts_exactly_the_calls_made(
    spans: InMemorySpanExporter, mosquitto: Mosquitto, topics: Topics, manager: ToolManager
) -> None:
    async with ToolService(mosquitto.url, [metered], topics=topics, metrics_port=0) as service:
        assert service.metrics_port is not None
        port = start_metrics_server(0)
        assert port == service.metrics_port  # one endpoint per process
        await manager.wait_for_tool("metered", timeout=15)
        before = await anyio.to_thread.run_sync(scrape, port)
        for _ in range(5):
            assert (await manager.execute_tool("metered", {})).ok
        for _ in range(2):
            assert not (await manager.execute_tool("metered", {"fail": True})).ok
        # The tool side counts a call once its reply is acknowledged, which can come
        # after the caller already has the result: wait (bounded) for the seventh.
        duration = "argentic_tools_tool_duration_seconds_count"
        with anyio.fail_after(15):
            while True:
                after = await anyio.to_thread.run_sync(scrape, port)
                counted = value(after, duration, tool="metered")
                if counted - value(before, duration, tool="metered") >= 7:
                    break
                await anyio.sleep(0.05)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    tool_calls = "argentic_tools_tool_calls_total"
    assert moved(tool_calls, tool="metered", outcome="success") == 5
    assert moved(tool_calls, tool="metered", outcome="execution_error") == 2
    assert moved("argentic_tools_tool_duration_seconds_count", tool="metered") == 7
    assert (
        moved("argentic_tools_tool_payload_size_bytes_count", direction="in", tool="metered") == 7
    )
    client_calls = "argentic_tools_client_calls_total"
    assert moved(client_calls, tool="metered", outcome="success") == 5
    assert moved(client_calls, tool="metered", outcome="execution_error") == 2
    assert moved("argentic_tools_client_duration_seconds_count", tool="metered") == 7
    assert value(after, "argentic_tools_tool_in_flight", tool="metered") == 0
    assert value(after, "argentic_tools_client_pending") == value(
        before, "argentic_tools_client_pending"
    )


async def test_an_observation_carries_the_calls_trace_id(
    spans: InMemorySpanExporter, mosquitto: Mosquitto, topics: Topics
) -> None:
    recorder = InMemoryRecorder()
    async with (
        ToolService(mosquitto.url, [metered], topics=topics),
        Messager(mosquitto.url, will_topic=None) as messager,
        ToolManager(messager, topics=topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("metered", timeout=15)
        assert (await manager.execute_tool("metered", {}, call_id="observed")).ok
        await manager.flush_observations()
    span = caller_span(spans, "observed")
    [observation] = recorder.observations
    assert observation.trace_id == hex_id(span.context.trace_id)


async def test_a_call_its_caller_cancels_still_ends_its_span_gauge_and_record(
    spans: InMemorySpanExporter, mosquitto: Mosquitto, topics: Topics
) -> None:
    started = anyio.Event()

    @tool
    async def lingering(seconds: float) -> str:
        """Wait ``seconds``, then answer (the caller cancels the call before)."""
        started.set()
        await anyio.sleep(seconds)
        return "done"

    recorder = InMemoryRecorder()
    port = start_metrics_server(0)
    async with (
        ToolService(mosquitto.url, [lingering], topics=topics),
        Messager(mosquitto.url, will_topic=None) as messager,
        ToolManager(messager, topics=topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("lingering", timeout=15)
        before = await anyio.to_thread.run_sync(scrape, port)
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: manager.execute_tool("lingering", {"seconds": 60}, call_id="given-up")
            )
            with anyio.fail_after(15):
                await started.wait()
            group.cancel_scope.cancel()
        after = await anyio.to_thread.run_sync(scrape, port)
        await manager.flush_observations()
    span = caller_span(spans, "given-up")
    assert (span.attributes or {}).get("error.type") == "cancelled"
    assert span.status.status_code is StatusCode.ERROR
    [observation] = recorder.observations
    assert (observation.call_id, observation.status) == ("given-up", "cancelled")
    assert observation.error == "Tool 'lingering' call was cancelled: cancelled by the caller."
    assert value(after, "argentic_tools_client_pending") == value(
        before, "argentic_tools_client_pending"
    )
    cancelled = "argentic_tools_client_calls_total"
    assert value(after, cancelled, tool="lingering", outcome="cancelled") == 1 + value(
        before, cancelled, tool="lingering", outcome="cancelled"
    )
