"""The fleet the agent frameworks' tests call: four real tool processes on one prefix.

``tests.support.tool_proc`` (plain calls, errors, the call's context),
``tests.support.long_proc`` (progress, chunks, cancellation marks),
``tests.support.media_tools`` (images, audio, files) and ``tests.support.asking_proc``
(questions, and ``received``, which reports the settings a call brought). The
processes start once per test module (:func:`fleet_processes`, the ``fleet_topics`` fixture of
``tests/frameworks/conftest.py``); each test gets its own manager on their topics
(:func:`fleet_manager`), once every tool is registered.
"""

import contextlib
import os
import pathlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from argentic_tools import (
    CallerHandlers,
    CallRef,
    ElicitRequest,
    LogRecord,
    Root,
    SampleRequest,
    ToolManager,
    Topics,
    tool,
)
from tests.support import asking_proc, media_tools
from tests.support.brokers import uncovered_env
from tests.support.clients import manager_with_tools
from tests.support.processes import ROOT, ToolProcess

FLEET_TOOLS = {
    "tests.support.tool_proc": ("echo", "whoami", "fail", "count"),
    "tests.support.long_proc": ("steps", "chunks"),
    "tests.support.media_tools": (*media_tools.NAMES, "speaker"),
    "tests.support.asking_proc": asking_proc.NAMES,
}
"""Each process and the tools the tests wait for."""

FLEET_NAMES = tuple(name for names in FLEET_TOOLS.values() for name in names)
"""Every tool the frameworks' tests call."""


def skip_unless_frameworks() -> None:
    """Skip the calling test module unless ``make test-frameworks`` runs it."""
    if os.environ.get("ARGENTIC_TOOLS_FRAMEWORKS") != "1":
        pytest.skip(
            "the agent frameworks' tests run with `make test-frameworks`",
            allow_module_level=True,
        )


@tool
def joined(text: str) -> str:
    """Return ``text`` from a tool that joins the fleet late (served in the test's process)."""
    return text


class UncoveredProcess(ToolProcess):
    """A tool process without coverage or output: the integrations run in the test's process.

    ``make test-frameworks`` measures the integrations, which run in the test's process;
    a pipe nobody reads would stop the tool process once full. (Under coverage
    ``media_tools`` once exited at start-up here with ``CancelledError`` from a
    registration, 3 runs of 3 on 2 busy cores, after its tools were confirmed once.)
    """

    def __enter__(self) -> "UncoveredProcess":
        self.process = subprocess.Popen(
            self.args,
            cwd=ROOT,
            env=uncovered_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return self


@contextlib.contextmanager
def fleet_processes(url: str) -> Iterator[Topics]:
    """The four tool processes on a fresh prefix, once each has registered its tools."""
    prefix = f"f{uuid.uuid4().hex[:10]}"
    with contextlib.ExitStack() as stack:
        for module, names in FLEET_TOOLS.items():
            process = stack.enter_context(UncoveredProcess(module, url, prefix))
            process.wait_registered(url, prefix, names)
        yield Topics.with_prefix(prefix)


@contextlib.asynccontextmanager
async def fleet_manager(url: str, topics: Topics) -> AsyncIterator[ToolManager]:
    """A manager of the fleet on ``topics``, once it knows every tool the tests call."""
    async with manager_with_tools(url, topics, FLEET_NAMES, default_timeout=20) as manager:
        yield manager


async def wait_for_mark(directory: pathlib.Path, name: str) -> None:
    """Wait (bounded) until a tool process has left the file ``name`` in ``directory``."""
    with anyio.fail_after(10):
        while not (directory / name).exists():
            await anyio.sleep(0.02)


def files_in(directory: pathlib.Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


async def wait_for_files(directory: pathlib.Path, names: list[str]) -> None:
    """Wait (bounded) until exactly ``names`` are in ``directory``."""
    with anyio.fail_after(15):
        while files_in(directory) != sorted(names):
            await anyio.sleep(0.02)


TIMEOUT = 4321.0
"""The deadline the settings tests give: far from any default, so the tool can tell it."""
MAX_DURATION = 777.0
"""The long call's limit the settings tests give (with an idle timeout far above it)."""
EVERY_HANDLER = ["elicit", "sample", "log", "roots"]


def every_setting() -> list[dict[str, Any]]:
    """Two sets of an adapter's call settings, each with every handler and a user.

    The first has a plain ``timeout``, the second a long call's ``idle_timeout`` and
    ``max_duration`` (the deadline the tool sees is then ``max_duration``); the tool
    ``received`` reports what reached it (:func:`check_received`).
    """

    def on_elicit(request: ElicitRequest, call: CallRef) -> dict[str, Any]:
        return {"action": "decline"}

    def on_sample(request: SampleRequest, call: CallRef) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "-"}, "model": "m"}

    def on_log(record: LogRecord, call: CallRef) -> None:
        return None

    def on_roots(call: CallRef) -> list[Root]:
        return []

    handlers = CallerHandlers(on_elicit, on_sample, on_log, on_roots)
    return [
        {"timeout": TIMEOUT, "user_id": "ada", "handlers": handlers},
        {
            "idle_timeout": 6000.0,
            "max_duration": MAX_DURATION,
            "user_id": "ada",
            "on_elicit": on_elicit,
            "on_sample": on_sample,
            "on_log": on_log,
            "on_roots": on_roots,
        },
    ]


def check_received(
    reports: list[dict[str, Any]], *, call_ids: list[str | None], thread_id: str
) -> None:
    """Assert that each setting of :func:`every_setting` reached the tool ``received``."""
    plain, long = reports
    # The seconds the tool has left: the deadline given, less the moments on the way.
    assert TIMEOUT - 60 < plain["seconds_left"] <= TIMEOUT, plain
    assert MAX_DURATION - 60 < long["seconds_left"] <= MAX_DURATION, long
    assert [report["call_id"] for report in reports] == call_ids
    for report in reports:
        assert report["user_id"] == "ada", report
        assert report["thread_id"] == thread_id, report
        assert report["handles"] == EVERY_HANDLER, report
