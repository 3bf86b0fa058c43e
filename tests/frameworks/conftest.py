"""What every framework's tests share: the fleet's processes per module, a manager per test."""

from collections.abc import AsyncIterator, Iterator

import pytest

from argentic_tools import ToolManager, Topics
from tests.support.brokers import Mosquitto
from tests.support.framework_fleet import fleet_manager, fleet_processes


@pytest.fixture(scope="module")
def fleet_topics(mosquitto: Mosquitto) -> Iterator[Topics]:
    """The test tool processes, started once per module, on a prefix of their own."""
    with fleet_processes(mosquitto.url) as topics:
        yield topics


@pytest.fixture
async def manager(mosquitto: Mosquitto, fleet_topics: Topics) -> AsyncIterator[ToolManager]:
    """A manager of its own for each test, once it knows every tool of the fleet."""
    async with fleet_manager(mosquitto.url, fleet_topics) as tool_manager:
        yield tool_manager


@pytest.fixture
def fleet(manager: ToolManager) -> ToolManager:
    """The test's manager, under the name the OpenAI Agents and PydanticAI tests use."""
    return manager
