"""PendingCall and InputRounds: a tool's questions become ``input_required`` rounds; the
client's ``inputResponses`` answer them by key."""

from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import mcp_types as types
from mcp.server.context import ServerRequestContext

from argentic_tools._protocol.messages import TaskErrorMessage, TaskResultMessage, TaskStatus
from argentic_tools.mcp.participation.asking import ELICIT, ROOTS, SAMPLE
from argentic_tools.mcp.participation.input_required import (
    ASK_NOT_SUPPORTED,
    InputRounds,
    PendingCall,
    missing_capability,
)

pytestmark = pytest.mark.anyio

QUESTION = {
    "message": "Name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
SAMPLING = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
    "maxTokens": 5,
}
EVERYTHING = frozenset({ELICIT, SAMPLE, ROOTS})


def request(meta: dict[str, Any] | None = None) -> ServerRequestContext[Any, Any]:
    """A request context as far as a round reads it (no log level, no progress token)."""
    return cast(ServerRequestContext[Any, Any], SimpleNamespace(meta=meta or {}))


def result(value: Any) -> TaskResultMessage:
    return TaskResultMessage(
        task_id="t", tool_id="x", tool_name="x", status=TaskStatus.SUCCESS, result=value
    )


async def test_questions_asked_together_come_in_one_round_and_answers_resume_the_tool() -> None:
    call = PendingCall(EVERYTHING, {})
    answers: dict[str, dict[str, Any]] = {}

    async def tool() -> None:
        async def ask(method: str, params: dict[str, Any], hint: str | None) -> None:
            answers[method] = await call.ask(method, params, hint)

        async with anyio.create_task_group() as group:
            group.start_soon(ask, ELICIT, QUESTION, "user_name")
            group.start_soon(ask, SAMPLE, SAMPLING, None)
            group.start_soon(ask, ROOTS, {}, None)
        call.finish(result("done"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(tool)
            first = await call.next_round(request())
            assert isinstance(first, types.InputRequiredResult)
            assert first.input_requests is not None
            assert sorted(first.input_requests) == ["roots-3", "sampling-2", "user_name"]
            assert first.input_requests["user_name"].method == ELICIT
            assert first.request_state == f"{call.id}.1"
            # One answer missing: the next round asks it again, under the same key.
            call.answer({"user_name": {"action": "accept", "content": {"name": "Al"}}, "x": {}})
            call.answer({"sampling-2": {"role": "assistant", "content": "Yo", "model": "m"}})
            second = await call.next_round(request())
            assert isinstance(second, types.InputRequiredResult)
            assert list(second.input_requests or {}) == ["roots-3"]
            assert second.request_state == f"{call.id}.2"
            call.answer({"roots-3": {"roots": []}})
            done = await call.next_round(request())
    assert isinstance(done, TaskResultMessage) and done.result == "done"
    assert answers[ELICIT] == {"action": "accept", "content": {"name": "Al"}}
    assert answers[ROOTS] == {"roots": []}


async def test_an_answer_given_in_advance_answers_the_question_of_its_key_at_once() -> None:
    call = PendingCall(EVERYTHING, {"elicitation-1": {"action": "decline"}, "bad": 3})
    with anyio.fail_after(5):
        assert await call.ask(ELICIT, QUESTION, None) == {"action": "decline"}


async def test_a_call_that_ends_without_asking_gives_its_result_in_the_first_round() -> None:
    call = PendingCall(frozenset(), {})
    call.finish(result(1))
    with anyio.fail_after(5):
        done = await call.next_round(request())
    assert isinstance(done, TaskResultMessage) and done.result == 1


async def test_rounds_run_calls_in_the_background_and_abandon_those_left_waiting() -> None:
    rounds = InputRounds(wait=0.2)
    call = PendingCall(EVERYTHING, {})
    cancelled = anyio.Event()

    async def work() -> TaskResultMessage:
        try:
            await call.ask(ELICIT, QUESTION, None)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return result("never")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            await group.start(rounds.run)
            rounds.start(call, work)
            first = await call.next_round(request())
            assert isinstance(first, types.InputRequiredResult)
            assert rounds.find(first.request_state or "") is call
            await cancelled.wait()  # nobody came back within 0.2 s
            while rounds.pending:
                await anyio.sleep(0.01)
            assert rounds.find(first.request_state or "") is None
            group.cancel_scope.cancel()


def test_input_wait_must_be_a_positive_number() -> None:
    with pytest.raises(ValueError, match="input_wait"):
        InputRounds(wait=0)


def test_an_unanswerable_question_becomes_the_missing_capability_error() -> None:
    failed = TaskErrorMessage(
        task_id="t",
        tool_id="x",
        tool_name="x",
        error="its caller cannot lend its model",
        error_code=ASK_NOT_SUPPORTED,
        details={"kind": "sample"},
    )
    error = missing_capability(failed)
    assert error is not None
    assert error.error.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert error.error.data == {"requiredCapabilities": {"sampling": {}}}
    other = TaskErrorMessage(
        task_id="t", tool_id="x", tool_name="x", error="boom", error_code="execution_error"
    )
    assert missing_capability(other) is None
    assert missing_capability(result(1)) is None


async def test_a_result_that_comes_while_the_client_is_away_waits_for_its_next_request() -> None:
    rounds = InputRounds(wait=30)
    call = PendingCall(EVERYTHING, {})
    ended = anyio.Event()

    async def work() -> TaskResultMessage:
        with anyio.move_on_after(0.1):  # the call's own timeout, say, while it waits
            await call.ask(ELICIT, QUESTION, None)
        ended.set()
        return result("timed out")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            await group.start(rounds.run)
            rounds.start(call, work)
            first = await call.next_round(request())
            assert isinstance(first, types.InputRequiredResult)
            await ended.wait()
            found = rounds.find(first.request_state or "")
            assert found is call
            late = await found.next_round(request())
            assert isinstance(late, TaskResultMessage) and late.result == "timed out"
            while rounds.pending:
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()
