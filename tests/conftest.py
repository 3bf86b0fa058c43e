"""Shared fixtures: one real mosquitto per session, a unique topic prefix per test."""

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from argentic_tools import Messager, ToolManager, Topics

from .brokers import (
    Mosquitto,
    ThreadedEmbeddedBroker,
    child_env,
    find_mosquitto,
    running_mosquitto,
    uncovered_env,
)

ROOT = Path(__file__).resolve().parent.parent

REQUIRE_MOSQUITTO = os.environ.get("ARGENTIC_TOOLS_REQUIRE_MOSQUITTO") == "1"

CONFIRM = 15.0
"""A test ToolService's ``confirm_timeout`` where the manager's answer is what is tested
(a refusal, a confirmed replica): entering returns at the answer, however slow the machine."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def mosquitto() -> Iterator[Mosquitto]:
    """A mosquitto shared by the session; tests that kill or restart it use their own.

    Without mosquitto (and outside CI, which requires it) the embedded amqtt broker
    stands in, with a notice, so the protocol tests still run.
    """
    forced = os.environ.get("ARGENTIC_TOOLS_TEST_BROKER") == "embedded"
    if forced or find_mosquitto() is None:
        if REQUIRE_MOSQUITTO and not forced:
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
    return ToolManager(messager, topics=topics, **kwargs)


@pytest.fixture
async def manager(mosquitto: Mosquitto, topics: Topics) -> AsyncIterator[ToolManager]:
    async with (
        messager_for(mosquitto.url, topics) as messager,
        manager_for(messager, topics, default_timeout=10) as tool_manager,
    ):
        yield tool_manager


def python_cmd(*args: str) -> list[str]:
    return [sys.executable, *args]


class ToolProcess:
    """A tool process (``python -m MODULE --broker URL --topic-prefix P``) a test can kill."""

    def __init__(self, module: str, url: str, prefix: str, *extra: str) -> None:
        self.args = python_cmd("-m", module, "--broker", url, "--topic-prefix", prefix, *extra)
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> "ToolProcess":
        # The test tools measure nothing of the library that the tests running ToolService
        # in-process do not (coverage stays at 92 % without them), and coverage in every
        # one of these processes cost ~7 s of the suite.
        env = uncovered_env() if self.args[2] == "tests.tool_proc" else child_env()
        self.process = subprocess.Popen(
            self.args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.terminate()
        assert self.process is not None
        if self.process.stdout is not None:
            self.process.stdout.close()

    # In an async test, prefer ``async with`` and ``await stop()``: they wait for the
    # process in a worker thread, so the event loop keeps running meanwhile and the
    # test's manager still confirms registrations and sends cancellations; a process
    # still waiting for its confirmations would otherwise only exit after their timeout.

    async def __aenter__(self) -> "ToolProcess":
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        await anyio.to_thread.run_sync(self.__exit__)

    async def stop(self, timeout: float = 15) -> int:
        """Like :meth:`terminate`, without blocking the event loop."""
        return await anyio.to_thread.run_sync(self.terminate, timeout)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 15) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        return self.process.returncode

    def wait_registered(self, url: str, prefix: str, names: Iterable[str]) -> None:
        """Block until the process has registered every tool in ``names`` (sync fixtures).

        A test that starts its own manager or gateway right after the process would
        otherwise race the process's start-up, registering its tools one by one.
        """

        async def registered() -> None:
            topics = Topics.with_prefix(prefix)
            async with (
                messager_for(url, topics) as messager,
                manager_for(messager, topics) as manager,
            ):
                for name in names:
                    await manager.wait_for_tool(name, timeout=30)

        anyio.run(registered)

    def output(self) -> str:
        assert self.process is not None
        if self.process.poll() is None:
            return ""
        assert self.process.stdout is not None
        return self.process.stdout.read().decode(errors="replace")


@pytest.fixture
async def tool_process(mosquitto: Mosquitto, prefix: str) -> AsyncIterator[ToolProcess]:
    """The test tools of ``tests.tool_proc`` running in their own process."""
    async with ToolProcess("tests.tool_proc", mosquitto.url, prefix) as proc:
        yield proc


TEST_TOOLS = ("echo", "sleep", "fail", "crash", "unserialisable", "whoami", "count")


async def ready(manager: ToolManager, names: tuple[str, ...] = TEST_TOOLS) -> None:
    """Wait (bounded) until every tool of ``tests.tool_proc`` is registered."""
    for name in names:
        await manager.wait_for_tool(name, timeout=15)
