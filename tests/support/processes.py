"""Processes the tests start: the repository's root, and tool processes a test can kill."""

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import anyio
import anyio.to_thread

from argentic_tools import ToolManager, Topics
from tests.support.brokers import child_env, uncovered_env

from .clients import manager_for, messager_for

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root: the working directory of every process the tests start."""


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
        env = uncovered_env() if self.args[2] == "tests.support.tool_proc" else child_env()
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


@contextlib.contextmanager
def serving(module: str, url: str, prefix: str, names: Iterable[str]) -> Iterator[ToolProcess]:
    """A :class:`ToolProcess` of ``module``, once it has registered every tool in ``names``."""
    with ToolProcess(module, url, prefix) as process:
        process.wait_registered(url, prefix, names)
        yield process


TEST_TOOLS = ("echo", "sleep", "fail", "crash", "unserialisable", "whoami", "count")


async def ready(manager: ToolManager, names: tuple[str, ...] = TEST_TOOLS) -> None:
    """Wait (bounded) until every tool of ``tests.support.tool_proc`` is registered."""
    for name in names:
        await manager.wait_for_tool(name, timeout=15)
