"""Routing incoming messages: topic filters match as MQTT's do, and the table of handlers
forgets what it remembered when it changes."""

import pytest

from argentic_tools._transport import topic_matches as _matches
from argentic_tools._transport.routing import IncomingMessage, Subscriptions, filter_problem


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


@pytest.mark.parametrize(
    ("topic_filter", "problem"),
    [
        ("a/#/b", "'#' may only stand alone"),
        ("a/b#", "'#' may only stand alone"),
        ("a/b+/c", "'+' may only stand alone"),
        ("", "cannot be empty"),
        ("a/\0", "NUL"),
    ],
)
def test_a_string_that_is_not_a_topic_filter_says_why(topic_filter: str, problem: str) -> None:
    found = filter_problem(topic_filter)
    assert found is not None and problem in found


@pytest.mark.parametrize("topic_filter", ["a/b", "a/+/c", "a/#", "#", "+", "+/+/#", "a//b"])
def test_topic_filters_mqtt_accepts_have_no_problem(topic_filter: str) -> None:
    assert filter_problem(topic_filter) is None


def test_wildcard_handlers_keep_their_order_when_one_of_a_filters_handlers_leaves() -> None:
    table = Subscriptions()
    first, second, third = (lambda _: None), (lambda _: None), (lambda _: None)
    table.add("a/+", first)
    table.add("a/#", second)
    table.add("a/+", third)
    assert list(table.handlers_for("a/b")) == [first, second, third]
    assert table.filters() == ["a/+", "a/#"]
    assert not table.remove("a/+", first)  # another handler still has the filter
    assert list(table.handlers_for("a/b")) == [second, third]
    assert table.remove("a/+", third) and not table.has("a/+")
    assert table.filters() == ["a/#"]
    assert table.remove("a/#") and list(table.handlers_for("a/b")) == []
