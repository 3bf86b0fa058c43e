"""A tool's questions built from what it wrote, and its caller's answers checked."""

import pytest
from pydantic import BaseModel

from argentic_tools import AskError, ElicitResult, SamplingMessage
from argentic_tools._tools.call.questions import (
    CONFIRM_FIELD,
    confirm_request,
    confirmed,
    elicit_request,
    elicit_result,
    roots_result,
    sample_request,
    sample_result,
)


class Choice(BaseModel):
    env: str
    replicas: int = 1


def test_a_question_takes_a_json_schema_or_a_model_and_refuses_anything_else() -> None:
    from_model = elicit_request("Where?", Choice)
    assert from_model.requested_schema["properties"]["env"]["type"] == "string"
    assert from_model.requested_schema["required"] == ["env"]
    plain = elicit_request("Ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    wire = plain.model_dump(by_alias=True)
    assert wire["requestedSchema"]["properties"] == {"ok": {"type": "boolean"}}
    with pytest.raises(ValueError, match="JSON Schema object"):
        elicit_request("?", {"type": "string"})
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        elicit_request("?", {"type": "object", "properties": {"x": {"type": 5}}})


def test_an_accepted_answer_must_match_the_schema_and_other_actions_carry_no_content() -> None:
    request = elicit_request("Where?", Choice)
    good = elicit_result(request, {"action": "accept", "content": {"env": "prod"}})
    assert good.accepted and good.data == {"env": "prod"}
    with pytest.raises(AskError, match="does not match the question's schema"):
        elicit_result(request, {"action": "accept", "content": {"replicas": "two"}})
    with pytest.raises(AskError, match="malformed"):
        elicit_result(request, {"action": "maybe"})
    declined = elicit_result(request, {"action": "decline", "content": {"env": "x"}})
    assert not declined.accepted and declined.content is None and declined.data == {}


def test_confirm_is_true_only_for_an_accepted_yes() -> None:
    request = confirm_request("Pay 3 EUR?")
    assert request.requested_schema["required"] == [CONFIRM_FIELD]
    assert confirmed(ElicitResult(action="accept", content={CONFIRM_FIELD: True}))
    assert not confirmed(ElicitResult(action="accept", content={CONFIRM_FIELD: False}))
    assert not confirmed(ElicitResult(action="decline"))
    assert not confirmed(ElicitResult(action="cancel"))


def test_a_sampling_request_in_mcps_shape() -> None:
    request = sample_request(
        [
            "hello",
            {"role": "assistant", "content": "hi"},
            SamplingMessage(role="user", content="?"),
        ],
        max_tokens=20,
        system="be brief",
        stop_sequences=("END",),
    )
    wire = request.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire == {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "hello"}},
            {"role": "assistant", "content": {"type": "text", "text": "hi"}},
            {"role": "user", "content": {"type": "text", "text": "?"}},
        ],
        "maxTokens": 20,
        "systemPrompt": "be brief",
        "stopSequences": ["END"],
    }
    with pytest.raises(ValueError, match="invalid sampling request"):
        sample_request("x", max_tokens=0)


def test_completions_and_roots_are_checked() -> None:
    completion = sample_result({"role": "assistant", "content": "done", "model": "m"})
    assert completion.text == "done" and completion.model == "m"
    with pytest.raises(AskError, match="completion is malformed"):
        sample_result({"content": "no model"})
    assert [r.uri for r in roots_result({"roots": [{"uri": "file:///a"}]})] == ["file:///a"]
    with pytest.raises(AskError, match="roots are malformed"):
        roots_result({"roots": "file:///a"})
