"""Which processes a manager asks whether they are still there (no broker)."""

import logging

import pytest

from argentic_tools import Messager, Topics
from argentic_tools._agent.fleet.info import Entry
from argentic_tools._agent.fleet.liveness import Liveness
from argentic_tools._agent.fleet.presence import QUIET_SECONDS, Presence
from argentic_tools._agent.fleet.registry import ToolRegistry
from argentic_tools._lifecycle import TaskSet
from argentic_tools._logging import InstanceLogger
from tests.support.registrations import registration

pytestmark = pytest.mark.anyio


async def test_only_processes_quiet_long_enough_that_can_answer_a_ping_are_asked_once() -> None:
    registry = ToolRegistry()
    registry.admit(registration("a", source="quiet"), epoch=1)
    registry.admit(registration("b", source="quiet"), epoch=1)
    registry.admit(registration("c", source="talking"), epoch=1)
    # A plain Argentic tool declares no protocol: it cannot answer, so it is never asked.
    plain = registration("d", source="argentic").model_copy(update={"protocol": None})
    registry.admit(plain, epoch=1)
    logger = InstanceLogger(logging.getLogger("test"))
    tasks = TaskSet(logger, "test")
    messager = Messager(will_topic=None)
    liveness = Liveness(registry, messager, Topics(), "inbox", logger, tasks)
    retired: list[Entry] = []
    presence = Presence(registry, liveness, messager, logger, tasks, retired.append)
    now = 1000.0
    liveness.heard_at.update(
        {"quiet": now - QUIET_SECONDS, "talking": now - QUIET_SECONDS / 2, "argentic": 0.0}
    )
    chosen = presence.quiet(now)
    assert [entry.info.source for entry in chosen] == ["quiet"]  # one ping per process
    liveness.forget_except({"talking"})
    assert set(liveness.heard_at) == {"talking"}
    assert retired == []
