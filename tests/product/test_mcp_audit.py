"""The audit of a team gateway's calls: the caller in the observation and in the spans."""

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")
pytest.importorskip("opentelemetry.sdk", reason="the otel extra is installed by `make test`")

from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from argentic_tools import InMemoryRecorder, ToolContext, ToolService, Topics, tool
from argentic_tools.mcp.access.team import TeamAccess
from argentic_tools.mcp.gateway import McpGateway
from tests.behaviour.test_telemetry import spans  # noqa: F401 - the process's one exporter
from tests.support.brokers import Mosquitto
from tests.support.clients import manager_for, messager_for

pytestmark = pytest.mark.anyio


@tool
def audited(context: ToolContext) -> str:
    """Say whom the call is for."""
    return str(context.user_id)


async def test_a_call_is_recorded_and_traced_with_its_caller(
    spans: InMemorySpanExporter,  # noqa: F811
    mosquitto: Mosquitto,
    topics: Topics,
) -> None:
    recorder = InMemoryRecorder()
    access = AccessToken(
        token="sha256:00", client_id="ops-bot", scopes=["mcp", "ops"], subject="ops-bot"
    )
    async with (
        ToolService(mosquitto.url, [audited], topics=topics),
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, recorder=recorder) as manager,
    ):
        await manager.wait_for_tool("audited", timeout=10)
        gateway = McpGateway(manager, access=TeamAccess())
        # The SDK's bearer middleware sets this for an HTTP request with a valid token.
        auth_context_var.set(AuthenticatedUser(access))
        async with Client(gateway.server) as client:
            result = await client.call_tool("audited", {})
        assert result.content[0].text == "ops-bot"  # type: ignore[union-attr]
        await manager.flush_observations()
    (observation,) = [o for o in recorder.observations if o.tool_name == "audited"]
    assert observation.user_id == "ops-bot"
    (gateway_span,) = [s for s in spans.get_finished_spans() if s.name == "mcp.tools/call"]
    assert gateway_span.attributes is not None
    assert gateway_span.attributes["enduser.id"] == "ops-bot"
    assert gateway_span.attributes["enduser.scope"] == "mcp ops"
    children = [
        s
        for s in spans.get_finished_spans()
        if s.parent is not None and s.parent.span_id == gateway_span.context.span_id
    ]
    assert [s.name for s in children] == ["execute_tool audited"]
