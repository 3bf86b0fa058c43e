"""The checks a call passes before its task exists (no broker)."""

from typing import Any

import pytest

from argentic_tools import CallContext, TaskStatus, ThreadToolPolicy
from argentic_tools._agent.calls.pending.pending import CallSpec
from argentic_tools._agent.calls.settings.checks import Refusal, check
from argentic_tools._agent.fleet.info import Entry
from argentic_tools._agent.fleet.registry import ToolRegistry
from argentic_tools._agent.policy import AllToolsEnabled
from tests.support.registrations import registration

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "times": {"type": "integer", "default": 1}},
    "required": ["text"],
}


def echo() -> Entry:
    entry, _, _ = ToolRegistry().admit(registration("echo", schema=SCHEMA), epoch=1)
    return entry


def spec(arguments: Any, timeout: float | None = 5, context: CallContext | None = None) -> CallSpec:
    return CallSpec("echo", arguments, None, timeout, context=context)


def refusal(arguments: Any, **kwargs: Any) -> Refusal:
    outcome = check(echo(), spec(arguments, **kwargs), AllToolsEnabled())
    assert isinstance(outcome, Refusal)
    return outcome


def test_valid_arguments_are_returned_as_they_will_be_sent() -> None:
    assert check(echo(), spec({"text": "hi"}), AllToolsEnabled()) == {"text": "hi"}


def test_nulls_a_strict_mode_model_sends_for_skipped_defaults_are_dropped() -> None:
    checked = check(echo(), spec({"text": "hi", "times": None}), AllToolsEnabled())
    assert checked == {"text": "hi"}


def test_a_tool_not_enabled_for_the_thread_is_refused() -> None:
    policy = ThreadToolPolicy()
    policy.set_enabled_tools("t-1", ["other"])
    outcome = check(echo(), spec({"text": "x"}, context=CallContext(thread_id="t-1")), policy)
    assert isinstance(outcome, Refusal) and outcome.code == "not_enabled"
    assert "not enabled for thread 't-1'" in outcome.text


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ('{"text": "hi"}', "pass the object itself, not a string"),
        ({"text": float("nan")}, "$.text is nan, which JSON cannot carry"),
        ({"text": 3}, "invalid arguments: $.text"),
        ({}, "invalid arguments"),
    ],
)
def test_arguments_that_cannot_be_sent_or_break_the_schema_are_refused(
    arguments: Any, says: str
) -> None:
    outcome = refusal(arguments)
    assert outcome.code == "invalid_arguments" and says in outcome.text
    assert outcome.text.startswith("Tool 'echo'")
    assert outcome.details  # where, for the model to fix it


def test_a_context_utf8_cannot_carry_is_refused() -> None:
    outcome = refusal({"text": "x"}, context=CallContext(user_id="\ud800"))
    assert outcome.code == "invalid_arguments" and "user_id" in outcome.text


def test_a_call_with_no_time_left_is_not_sent() -> None:
    outcome = refusal({"text": "x"}, timeout=0)
    assert (outcome.code, outcome.status) == ("timeout", TaskStatus.TIMEOUT)
    assert check(echo(), spec({"text": "x"}, timeout=None), AllToolsEnabled()) == {"text": "x"}
