"""The shapes a tool's questions and log records take in MCP, and what a client can answer."""

from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types

from argentic_tools import ElicitRequest, LogRecord, SampleRequest
from argentic_tools.mcp.participation.asking import (
    ELICIT,
    KEY_META,
    ROOTS,
    SAMPLE,
    at_least,
    declared,
    input_request,
    key_hint,
    log_params,
    wire,
)

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def test_a_question_becomes_the_mcp_request_of_its_kind() -> None:
    asked = input_request(ELICIT, {"message": "Sure?", "requestedSchema": SCHEMA})
    assert isinstance(asked, types.ElicitRequest)
    sampled = input_request(
        SAMPLE,
        wire(
            SampleRequest.model_validate(
                {"messages": [{"role": "user", "content": "Hi"}], "maxTokens": 9}
            )
        ),
    )
    assert isinstance(sampled, types.CreateMessageRequest)
    assert sampled.params.max_tokens == 9
    assert isinstance(input_request(ROOTS, None), types.ListRootsRequest)


def test_a_questions_own_key_is_read_from_its_meta_and_not_sent_on() -> None:
    fields: dict[str, Any] = {"message": "Sure?", "requestedSchema": SCHEMA}
    plain = ElicitRequest.model_validate(fields)
    assert key_hint(plain) is None
    assert wire(plain) == fields
    named = ElicitRequest.model_validate({**fields, "_meta": {KEY_META: "confirm", "k": 1}})
    if "meta" in ElicitRequest.model_fields:  # the core passes a question's _meta through
        assert key_hint(named) == "confirm"
        assert wire(named) == {**fields, "_meta": {"k": 1}}


def test_a_client_can_answer_what_it_declared() -> None:
    assert declared(None) == frozenset()
    assert declared(types.ClientCapabilities()) == frozenset()
    everything = types.ClientCapabilities(
        sampling=types.SamplingCapability(),
        elicitation=types.ElicitationCapability(),
        roots=types.RootsCapability(),
    )
    assert declared(everything) == {ELICIT, SAMPLE, ROOTS}
    assert declared(types.ClientCapabilities(sampling=types.SamplingCapability())) == {SAMPLE}


def test_a_log_level_lets_through_itself_and_what_is_more_severe() -> None:
    assert at_least("error") == {"error", "critical", "alert", "emergency"}
    assert len(at_least(None)) == 8


def test_a_log_record_becomes_mcp_notification_params() -> None:
    params = log_params(LogRecord(level="info", message="hi", data={"n": 1}, logger="x"))
    assert params.level == "info" and params.logger == "x"
    assert params.data == {"message": "hi", "data": {"n": 1}}
