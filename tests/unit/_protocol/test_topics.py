"""Smaller pieces: argentic-style BaseTool registration, names and topics, drop logging."""

import logging
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from argentic_tools import (
    BaseTool,
    BrokerError,
    Messager,
    TaskErrorMessage,
    ToolDefinitionError,
    ToolManager,
    Topics,
)
from argentic_tools._logging import DropLog, parse_log_level
from argentic_tools._protocol.topics import is_valid_tool_id, tool_name_problem, topic_problem
from argentic_tools._transport import topic_matches as _matches
from argentic_tools._transport.routing import IncomingMessage, Subscriptions
from tests.support.brokers import Mosquitto
from tests.support.clients import messager_for

pytestmark = pytest.mark.anyio


class GreetArgs(BaseModel):
    name: str


class Greeter(BaseTool):
    """A tool written the argentic way: only the import differs."""

    def __init__(self, messager: Messager) -> None:
        super().__init__(
            name="greeter",
            manual="Greet someone by name.",
            api="",
            argument_schema=GreetArgs,
            messager=messager,
        )

    async def _execute(self, **kwargs: Any) -> Any:
        assert self.context is not None
        return f"hello {kwargs['name']} (task {self.context.task_id})"


async def test_argentic_style_base_tool_registers_serves_and_unregisters(
    manager: ToolManager, mosquitto: Mosquitto, topics: Topics
) -> None:
    async with messager_for(mosquitto.url, topics) as messager:
        greeter = Greeter(messager)
        tool_id = await greeter.register(
            topics.register, topics.status, topics.call_base, topics.response_base
        )
        info = await manager.wait_for_tool("greeter", timeout=10)
        assert info.id == tool_id == greeter.id
        assert info.input_schema["required"] == ["name"]
        result = await manager.execute_tool("greeter", {"name": "Ada"}, task_id_override="t-1")
        # The override labels the result; the tool sees the unique id the task travelled under.
        assert result.task_id == "t-1"
        assert result.result.startswith("hello Ada (task ")
        assert result.result != "hello Ada (task t-1)"
        await greeter.unregister()
        await manager.wait_for_tool_removed(tool_id, timeout=10)
        gone = await manager.execute_tool("greeter", {"name": "Ada"})
        assert isinstance(gone, TaskErrorMessage)
        assert gone.error_code == "not_found"


async def test_base_tool_without_messager_cannot_register() -> None:
    with pytest.raises(RuntimeError, match="no messager"):
        await Greeter(None).register()  # type: ignore[arg-type]


def test_base_tool_refuses_bad_definitions() -> None:
    class Bad(BaseTool):
        async def _execute(self, **kwargs: Any) -> Any:
            return None

    with pytest.raises(ToolDefinitionError, match="forbidden character"):
        Bad("a/b", "", "", GreetArgs)
    with pytest.raises(ToolDefinitionError, match="not valid JSON"):
        Bad("ok", "", "{nope", GreetArgs)
    with pytest.raises(ToolDefinitionError, match="tool_id"):
        Bad("ok", "", "", GreetArgs, tool_id="has/slash")
    with pytest.raises(ToolDefinitionError, match="max_concurrency"):
        Bad("ok", "", "", GreetArgs, max_concurrency=0)
    explicit = Bad("ok", "", '{"type": "object"}', GreetArgs)
    assert explicit.input_schema == {"type": "object"}


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "non-empty"),
        ("   ", "non-empty"),
        ("x" * 129, "limit is 128"),
        ("a+b", "'+'"),
        ("a#b", "'#'"),
        ("a\x00b", "'\\x00'"),
        ("line\nbreak", "'\\n'"),
        (42, "non-empty string"),
    ],
)
def test_unusable_tool_names_are_explained(name: object, problem: str) -> None:
    found = tool_name_problem(name)
    assert found is not None
    assert problem in found


def test_good_names_and_ids_pass() -> None:
    assert tool_name_problem("Email Sender") is None
    assert is_valid_tool_id("550e8400-e29b-41d4-a716-446655440000")
    assert is_valid_tool_id("files.write_file")
    assert not is_valid_tool_id("a/b")
    assert not is_valid_tool_id("")


@pytest.mark.parametrize(
    ("topic", "problem"),
    [("", "empty"), ("a/+/b", "wildcard"), ("$SYS/x", "reserved"), ("a\x00", "NUL")],
)
def test_topic_problems_are_explained(topic: str, problem: str) -> None:
    found = topic_problem(topic)
    assert found is not None
    assert problem in found


def test_topic_prefix_is_validated_and_applied() -> None:
    topics = Topics.with_prefix("/team-a/")
    assert topics.register == "team-a/agent/tools/register"
    assert topics.call("x") == "team-a/agent/tools/call/x"
    assert topics.tool_id_from_response("team-a/agent/tools/response/x") == "x"
    # A reply topic names the tool too; deeper topics are neither.
    assert topics.tool_id_from_response("team-a/agent/tools/response/x/y") == "x"
    assert topics.tool_id_from_response("team-a/agent/tools/response/x/y/z") is None
    assert topics.reply("x", "me") == "team-a/agent/tools/response/x/me"
    assert topics.is_reply_topic("team-a/agent/tools/response/x/me", "x")
    assert not topics.is_reply_topic("team-a/agent/tools/response/x/me/more", "x")
    assert not topics.is_reply_topic("team-a/agent/tools/response/y/me", "x")
    assert not topics.is_reply_topic("team-a/agent/tools/register", "x")
    assert not topics.is_reply_topic("team-a/agent/tools/response/x/+", "x")
    assert topics.tool_id_from_response("elsewhere") is None
    assert Topics.with_prefix(None) == Topics()
    with pytest.raises(ValueError, match="invalid topic prefix"):
        Topics.with_prefix("a/#")
    with pytest.raises(ValueError, match="wildcard"):
        Topics(register="a/+")


@pytest.mark.parametrize(
    ("topic_filter", "topic", "expected"),
    [
        ("a/+/c", "a/b/c", True),
        ("a/+/c", "a/b/d", False),
        ("a/#", "a/b/c", True),
        ("a/+", "a/b/c", False),
        ("a/b/c", "a/b", False),
    ],
)
def test_topic_filters_match_like_mqtt(topic_filter: str, topic: str, expected: bool) -> None:
    assert _matches(topic_filter, topic) is expected


def test_the_routing_table_forgets_remembered_matches_when_it_changes() -> None:
    table = Subscriptions()

    def first(message: IncomingMessage) -> None: ...

    def second(message: IncomingMessage) -> None: ...

    table.add("r/+", first)
    assert list(table.handlers_for("r/x")) == [first]
    assert list(table.handlers_for("r/x")) == [first]  # remembered
    table.add("r/#", second)
    assert list(table.handlers_for("r/x")) == [first, second]
    table.remove("r/+", first)
    assert list(table.handlers_for("r/x")) == [second]
    assert list(table.handlers_for("s/x")) == []


def test_drop_log_is_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.drops")
    drops = DropLog(logger, burst=3, period=3600)
    with caplog.at_level(logging.WARNING, logger="test.drops"):
        for index in range(100):
            drops.drop("t/x", f"bad message {index}")
    assert len(caplog.records) == 3
    assert "dropped message on 't/x': bad message 0" in caplog.text


def test_log_levels_parse_by_name_and_number() -> None:
    assert parse_log_level("debug") == logging.DEBUG
    assert parse_log_level(logging.ERROR) == logging.ERROR
    with pytest.raises(ValueError, match="unknown log level"):
        parse_log_level("chatty")


async def test_publishing_on_a_closed_messager_is_a_clear_error(mosquitto: Mosquitto) -> None:
    messager = Messager(mosquitto.url)
    with pytest.raises(BrokerError, match="closed"):
        await messager.publish("x", b"y")
    async with messager:
        pass
    with pytest.raises(BrokerError, match="closed"), anyio.fail_after(5):
        await messager.publish("x", b"y")
