"""The fleet the LangChain and LlamaIndex tests call: four real tool processes on one prefix.

``tests.support.tool_proc`` (plain calls, errors, the call's context),
``tests.support.long_proc`` (progress, chunks, cancellation marks),
``tests.support.media_tools`` (images) and ``tests.support.asking_proc`` (questions).
"""

import contextlib
import pathlib
import subprocess
from collections.abc import AsyncIterator, Iterator

import anyio

from argentic_tools import ToolManager, Topics, tool
from tests.support import asking_proc, media_tools
from tests.support.brokers import uncovered_env
from tests.support.clients import manager_with_tools
from tests.support.processes import ROOT, ToolProcess

PYTHON = r"```python\n(.*?)```"

FLEET_TOOLS = {
    "tests.support.tool_proc": ("echo", "whoami", "fail"),
    "tests.support.long_proc": ("steps", "chunks"),
    "tests.support.media_tools": (*media_tools.NAMES, "speaker"),
    "tests.support.asking_proc": asking_proc.NAMES,
}
"""Each process and the tools the tests wait for."""


@tool
def joined(text: str) -> str:
    """Return ``text`` from a tool that joins the fleet late (served in the test's process)."""
    return text


class UncoveredProcess(ToolProcess):
    """A tool process without coverage or output: the integrations run in the test's process.

    Under coverage ``media_tools`` exits at start-up here with ``CancelledError`` from a
    registration (3 runs of 3, on 2 busy cores), after its tools were confirmed once.
    """

    def __enter__(self) -> "UncoveredProcess":
        self.process = subprocess.Popen(
            self.args,
            cwd=ROOT,
            env=uncovered_env(),
            stdout=subprocess.DEVNULL,  # a pipe nobody reads would stop it once full
            stderr=subprocess.DEVNULL,
        )
        return self


@contextlib.contextmanager
def fleet(url: str, prefix: str) -> Iterator[list[ToolProcess]]:
    """The four tool processes, once each has registered its tools."""
    with contextlib.ExitStack() as stack:
        processes: list[ToolProcess] = []
        for module, names in FLEET_TOOLS.items():
            process = stack.enter_context(UncoveredProcess(module, url, prefix))
            process.wait_registered(url, prefix, names)
            processes.append(process)
        yield processes


@contextlib.asynccontextmanager
async def fleet_manager(url: str, prefix: str) -> AsyncIterator[ToolManager]:
    """A manager of the fleet on ``prefix``, once it knows every tool the tests call."""
    names = [name for names in FLEET_TOOLS.values() for name in names]
    async with manager_with_tools(
        url, Topics.with_prefix(prefix), names, default_timeout=10
    ) as manager:
        yield manager


async def wait_for_mark(directory: pathlib.Path, name: str) -> None:
    """Wait (bounded) until a tool process has left the file ``name`` in ``directory``."""
    with anyio.fail_after(10):
        while not (directory / name).exists():
            await anyio.sleep(0.02)
