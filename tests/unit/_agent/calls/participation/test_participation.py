"""The caller's part in one call: handlers run, answers shaped, exchanges kept."""

import asyncio
from typing import Any

import anyio
import pytest

from argentic_tools import CallerHandlers, CallRef, ElicitRequest, LogRecord
from argentic_tools._agent.calls.participation.participation import EXCHANGES_KEPT, Participation
from argentic_tools._protocol.participation import ToolAskMessage, ToolLogMessage

pytestmark = pytest.mark.anyio

CALL = CallRef("t", "t-id", "label", "c1", None)


class Answers:
    """Collects what the participation sends the tool."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any] | None, str | None, bool]] = []
        self.event = anyio.Event()

    def __call__(
        self, ask_id: str, result: dict[str, Any] | None, error: str | None, unsupported: bool
    ) -> None:
        self.sent.append((ask_id, result, error, unsupported))
        self.event.set()

    async def wait(self, count: int) -> None:
        with anyio.fail_after(5):
            while len(self.sent) < count:
                await anyio.sleep(0.001)


def ask(ask_id: str, kind: str = "elicit", **request: Any) -> ToolAskMessage:
    request = request or {"message": "?", "requestedSchema": {"type": "object"}}
    return ToolAskMessage(task_id="w", tool_id="t-id", ask_id=ask_id, kind=kind, request=request)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_each_question_is_answered_once_in_mcps_shape_or_said_unsupported() -> None:
    answers = Answers()

    def on_elicit(request: ElicitRequest, call: CallRef) -> dict[str, Any]:
        assert call is CALL
        return {"action": "accept", "content": {"q": request.message}}

    part = Participation(CallerHandlers(on_elicit=on_elicit), CALL, answers)
    assert part.abilities() == ["elicit"]
    part.asked(ask("1"))
    part.asked(ask("1"))  # redelivered
    part.asked(ask("2", kind="sample", messages=[], maxTokens=1))
    await answers.wait(2)
    await asyncio.sleep(0.01)
    assert sorted(answers.sent, key=lambda s: s[0]) == [
        ("1", {"action": "accept", "content": {"q": "?"}}, None, False),
        ("2", None, "the caller has no on_sample handler", True),
    ]
    assert part.heard and [e["kind"] for e in part.kept() or []] == ["elicit", "sample"]


async def test_a_handler_that_fails_or_answers_nonsense_answers_with_its_error() -> None:
    answers = Answers()

    def on_elicit(request: ElicitRequest, call: CallRef) -> Any:
        if request.message == "boom":
            raise KeyError("nope")
        return 42

    part = Participation(CallerHandlers(on_elicit=on_elicit), CALL, answers)
    part.asked(ask("1", message="boom", requestedSchema={}))
    part.asked(ask("2"))
    await answers.wait(2)
    errors = {a: e for a, _, e, _ in answers.sent}
    assert errors["1"] == "KeyError: 'nope'"
    assert errors["2"] is not None and "returned int" in errors["2"]


async def test_log_records_reach_the_handler_in_order_and_a_gap_is_announced() -> None:
    seen: list[str] = []

    async def on_log(record: LogRecord, call: CallRef) -> None:
        await asyncio.sleep(0)
        seen.append(record.message)

    part = Participation(CallerHandlers(on_log=on_log), CALL, Answers())
    for seq, dropped in ((1, 0), (3, 0), (2, 0), (4, 7)):
        record = LogRecord(level="info", message=f"r{seq}")
        part.logged(
            ToolLogMessage(task_id="w", tool_id="t-id", seq=seq, record=record, dropped=dropped)
        )
    await part.flush()
    assert seen[:2] == ["r1", "r3"]  # r2 came after r3: older than one seen
    assert seen[2].startswith("7 log record(s) of tool 't' were left out") and seen[3] == "r4"


async def test_closing_cancels_open_handlers_and_the_exchange_is_bounded() -> None:
    started = anyio.Event()
    cancelled: list[bool] = []

    async def on_elicit(request: ElicitRequest, call: CallRef) -> Any:
        started.set()
        try:
            await anyio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    part = Participation(CallerHandlers(on_elicit=on_elicit), CALL, Answers())
    part.asked(ask("1"))
    with anyio.fail_after(5):
        await started.wait()
    part.close()
    with anyio.fail_after(5):
        while not cancelled:
            await anyio.sleep(0.001)
    part.asked(ask("2"))  # after the end: not taken
    kept = part.kept()
    assert kept is not None and len(kept) == 1 and "answer" not in kept[0]

    many = Participation(CallerHandlers(on_log=lambda r, c: None), CALL, Answers())
    for seq in range(1, EXCHANGES_KEPT + 11):
        record = LogRecord(level="debug", message=str(seq))
        many.logged(ToolLogMessage(task_id="w", tool_id="t-id", seq=seq, record=record))
    kept = many.kept()
    assert kept is not None and len(kept) == EXCHANGES_KEPT + 1
    assert kept[-1]["record"]["message"] == "10 more exchanges not kept"
    many.close()
