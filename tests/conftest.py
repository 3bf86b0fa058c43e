"""Shared fixtures: one real mosquitto per session, a unique topic prefix per test."""

import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from argentic_tools import Messager, ToolManager, Topics

from .brokers import Mosquitto, find_mosquitto, running_mosquitto

REQUIRE_MOSQUITTO = os.environ.get("ARGENTIC_TOOLS_REQUIRE_MOSQUITTO") == "1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def mosquitto() -> Iterator[Mosquitto]:
    """A mosquitto shared by the session; tests that kill or restart it use their own."""
    if find_mosquitto() is None:
        message = "mosquitto is not installed (run `make test`, which installs it)"
        if REQUIRE_MOSQUITTO:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    with running_mosquitto() as broker:
        yield broker


@pytest.fixture
def private_mosquitto() -> Iterator[Mosquitto]:
    """A mosquitto of this test alone, free to be killed and restarted."""
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    with running_mosquitto() as broker:
        yield broker


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def topics(prefix: str) -> Topics:
    return Topics.with_prefix(prefix)


def messager_for(url: str, topics: Topics, **kwargs: Any) -> Messager:
    kwargs.setdefault("will_topic", topics.register)
    return Messager(url, **kwargs)


def manager_for(messager: Messager, topics: Topics, **kwargs: Any) -> ToolManager:
    return ToolManager(
        messager,
        register_topic=topics.register,
        tool_call_topic_base=topics.call_base,
        tool_response_topic_base=topics.response_base,
        status_topic=topics.status,
        **kwargs,
    )


@pytest.fixture
async def manager(mosquitto: Mosquitto, topics: Topics) -> AsyncIterator[ToolManager]:
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, default_timeout=10) as tool_manager,
    ):
        yield tool_manager


def python_cmd(*args: str) -> list[str]:
    return [sys.executable, *args]
