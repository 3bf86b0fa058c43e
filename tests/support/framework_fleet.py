"""A fleet for the agent frameworks' tests: the test tool processes on one prefix, a manager.

The processes (``tool_proc``, ``long_proc``, ``media_tools``, ``asking_proc``) start once per
test module (:func:`fleet_processes`); each test gets its own manager on their topics
(:func:`fleet_manager`), once the tools it names are registered.
"""

import contextlib
import os
import pathlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import anyio
import pytest

from argentic_tools import ToolManager, Topics
from tests.support.brokers import uncovered_env
from tests.support.clients import manager_with_tools
from tests.support.processes import ROOT, ToolProcess

FLEET_MODULES = (
    "tests.support.tool_proc",
    "tests.support.long_proc",
    "tests.support.media_tools",
    "tests.support.asking_proc",
)
"""The tool processes every framework's tests call."""


def skip_unless_frameworks() -> None:
    """Skip the calling test module unless ``make test-frameworks`` runs it."""
    if os.environ.get("ARGENTIC_TOOLS_FRAMEWORKS") != "1":
        pytest.skip(
            "the agent frameworks' tests run with `make test-frameworks`",
            allow_module_level=True,
        )


class FleetProcess(ToolProcess):
    """A tool process serving a whole test module: without coverage (``make test-frameworks``
    measures the integrations, which run in the test's process) and with its output
    dropped (a pipe nobody reads would stop it once full)."""

    def __enter__(self) -> "FleetProcess":
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
    """The test tool processes on a fresh prefix of the broker at ``url``; yields the topics."""
    prefix = f"f{uuid.uuid4().hex[:10]}"
    with contextlib.ExitStack() as stack:
        for module in FLEET_MODULES:
            stack.enter_context(FleetProcess(module, url, prefix))
        yield Topics.with_prefix(prefix)


@contextlib.asynccontextmanager
async def fleet_manager(
    url: str, topics: Topics, names: Iterable[str], **kwargs: Any
) -> AsyncIterator[ToolManager]:
    """A manager on the fleet's topics once ``names`` are registered."""
    kwargs.setdefault("default_timeout", 20)
    async with manager_with_tools(url, topics, names, **kwargs) as manager:
        yield manager


def files_in(directory: pathlib.Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


async def wait_for_files(directory: pathlib.Path, names: list[str]) -> None:
    """Wait (bounded) until exactly ``names`` are in ``directory``."""
    with anyio.fail_after(15):
        while files_in(directory) != sorted(names):
            await anyio.sleep(0.02)
