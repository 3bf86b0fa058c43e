"""Shared fixtures: one real mosquitto per session, a unique topic prefix per test.

Helpers that tests import live in ``tests/support/``; this file holds only fixtures, so
every test under ``tests/`` reaches them without importing anything.
"""

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from argentic_tools import ToolManager, Topics
from tests.support.brokers import (
    MOSQUITTO_DEFAULTS,
    Mosquitto,
    ThreadedEmbeddedBroker,
    find_mosquitto,
    running_mosquitto,
    uncovered_env,
)
from tests.support.clients import manager_for, messager_for
from tests.support.processes import ROOT, ToolProcess, python_cmd
from tests.support.requirements import REQUIRED, require_mosquitto, require_tmux


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tmux_installed() -> None:
    """For ``needs_tmux`` (tests/support/terminal.py): skip, or fail in CI, without tmux."""
    require_tmux()


@pytest.fixture(scope="session")
def mosquitto() -> Iterator[Mosquitto]:
    """A mosquitto shared by the session; tests that kill or restart it use their own.

    Without mosquitto (and outside CI, which requires it) the embedded amqtt broker
    stands in, with a notice, so the protocol tests still run.
    """
    forced = os.environ.get("ARGENTIC_TOOLS_TEST_BROKER") == "embedded"
    if forced or find_mosquitto() is None:
        if REQUIRED and not forced:
            pytest.fail("mosquitto is not installed, and CI requires it", pytrace=False)
        print(
            "\nnotice: running the broker tests on the embedded amqtt broker "
            f"({'as asked' if forced else 'mosquitto is not installed'})",
            file=sys.stderr,
        )
        embedded = ThreadedEmbeddedBroker()
        try:
            yield embedded  # type: ignore[misc]  # duck-types Mosquitto: url, port
        finally:
            embedded.stop()
        return
    with running_mosquitto() as broker:
        yield broker


@pytest.fixture
def private_mosquitto() -> Iterator[Mosquitto]:
    """A mosquitto of this test alone, free to be killed and restarted."""
    require_mosquitto()
    with running_mosquitto() as broker:
        yield broker


@pytest.fixture
def default_limits_mosquitto() -> Iterator[Mosquitto]:
    """A mosquitto of this test alone with mosquitto's own per-client queue limits."""
    require_mosquitto()
    with running_mosquitto(MOSQUITTO_DEFAULTS) as broker:
        yield broker


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def topics(prefix: str) -> Topics:
    return Topics.with_prefix(prefix)


@pytest.fixture
async def manager(mosquitto: Mosquitto, topics: Topics) -> AsyncIterator[ToolManager]:
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, default_timeout=10) as tool_manager,
    ):
        yield tool_manager


@pytest.fixture
async def tool_process(mosquitto: Mosquitto, prefix: str) -> AsyncIterator[ToolProcess]:
    """The test tools of ``tests.support.tool_proc`` running in their own process."""
    async with ToolProcess("tests.support.tool_proc", mosquitto.url, prefix) as proc:
        yield proc


@pytest.fixture
def argentic_tool(mosquitto: Mosquitto, prefix: str) -> Iterator[None]:
    """An unmodified argentic 0.16 tool, ``argentic_upper``, in its own process."""
    pytest.importorskip("argentic", reason="argentic 0.16 is installed by `make test`")
    proc = subprocess.Popen(
        python_cmd(
            "-m",
            "tests.support.argentic_peer",
            "--broker-port",
            str(mosquitto.port),
            "--topic-prefix",
            prefix,
        ),
        cwd=ROOT,
        env=uncovered_env(),  # the argentic peer runs none of our code
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)
