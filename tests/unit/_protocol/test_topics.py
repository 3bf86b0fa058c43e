"""Names and topics: what is refused and why, and how a topic prefix applies."""

import pytest

from argentic_tools import Topics
from argentic_tools._protocol.topics import is_valid_tool_id, tool_name_problem, topic_problem

pytestmark = pytest.mark.anyio


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
