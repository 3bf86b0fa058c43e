"""A call that became an MCP task: its questions wait for ``tasks/update`` under keys used
once; who a request comes from; the extension declared per request."""

from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is installed by `make test`")

import anyio.lowlevel
import mcp_types as types
from mcp.server.context import ServerRequestContext

from argentic_tools._protocol.messages import ToolResult
from argentic_tools.mcp.participation.asking import ELICIT, ROOTS, SAMPLE
from argentic_tools.mcp.participation.input_required import PendingCall
from argentic_tools.mcp.tasks.task_store import TaskRecord
from argentic_tools.mcp.tasks.tasks import EXTENSION, TaskableCall, declares_tasks, iso, owner_of

pytestmark = pytest.mark.anyio

QUESTION = {
    "message": "Name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


def request(meta: dict[str, Any]) -> ServerRequestContext[Any, Any]:
    """A request context as far as the tasks read it."""
    session = SimpleNamespace(client_capabilities=None)
    return cast(ServerRequestContext[Any, Any], SimpleNamespace(meta=meta, session=session))


def _record() -> TaskRecord:
    return TaskRecord("t", "client:a", "label", "tool", "working", None, 0.0, 0.0, 1000)


async def test_a_tasks_questions_wait_for_their_answers_under_keys_used_once() -> None:
    ended: list[ToolResult | None] = []
    rounds = PendingCall(frozenset({ELICIT, SAMPLE, ROOTS}), {})
    call = TaskableCall(rounds, lambda _, r: ended.append(r))
    call.adopt(_record())
    answers: dict[str, dict[str, Any]] = {}

    async def ask(name: str) -> None:
        answers[name] = await rounds.ask(ELICIT, QUESTION, None)  # the task takes it

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(ask, "first")
            group.start_soon(ask, "second")
            while len(call.questions) < 2:
                await anyio.lowlevel.checkpoint()
            first, second = sorted(call.questions)
            assert call.questions[first].request.method == ELICIT
            call.answer_task({first: {"action": "accept", "content": {"name": "A"}}, "x": {}})
            while first in call.questions:
                await anyio.lowlevel.checkpoint()
            assert list(call.questions) == [second]  # a partial answer leaves the rest open
            call.answer_task({second: "not an object"})
            assert list(call.questions) == [second]
            call.answer_task({second: {"action": "decline"}})
    assert sorted(answers.values(), key=str) == [
        {"action": "accept", "content": {"name": "A"}},
        {"action": "decline"},
    ]
    assert {first, second} == {"elicitation-task-1", "elicitation-task-2"}
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(ask, "again")
            while not call.questions:
                await anyio.lowlevel.checkpoint()
            assert list(call.questions) == ["elicitation-task-3"]  # never a used key
            call.answer_task({"elicitation-task-3": {"action": "cancel"}})
    rounds.finish(None)
    assert ended == [None]


def test_the_extension_is_declared_per_request() -> None:
    declared: dict[str, Any] = {types.CLIENT_CAPABILITIES_META_KEY: {"extensions": {EXTENSION: {}}}}
    assert declares_tasks(request(declared))
    assert not declares_tasks(request({types.CLIENT_CAPABILITIES_META_KEY: {}}))
    assert not declares_tasks(request({}))


def test_a_request_without_authentication_belongs_to_its_clients_name() -> None:
    named = {types.CLIENT_INFO_META_KEY: {"name": "alice", "version": "1"}}
    assert owner_of(request(named)) == "client:alice"
    assert owner_of(request({})) == "anonymous"


def test_times_are_iso_8601_in_utc() -> None:
    assert iso(0.25) == "1970-01-01T00:00:00.250Z"
