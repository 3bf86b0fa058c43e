"""Long tools for the MCP Tasks tests: they leave files saying what happened to them.

    python -m tests.support.task_tools --broker URL [--topic-prefix P]

Served like any tool process, called through ``argentic-tools mcp serve`` as MCP tasks
(``tests/product/test_mcp_tasks.py``). In ``directory``, ``<label>.runs`` gets a line each
time the tool starts on a call (executions are counted), ``<label>.cancelled`` appears when
the call was cancelled at the tool, ``<label>.done`` when it finished.
"""

import sys
from pathlib import Path

import anyio

from argentic_tools import ToolContext, serve_main, tool

STEP_SECONDS = 0.1
"""How often ``crunch`` reports progress."""

CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


def _mark(directory: str, label: str, what: str) -> None:
    if directory:
        Path(directory, f"{label}.{what}").touch()


def _count(directory: str, label: str) -> None:
    if directory:
        with Path(directory, f"{label}.runs").open("a") as runs:
            runs.write("run\n")


async def _work(context: ToolContext, seconds: float, label: str, directory: str) -> str:
    _count(directory, label)
    steps = max(1, round(seconds / STEP_SECONDS))
    try:
        for step in range(steps):
            await context.report_progress(step, steps, "crunching")
            await anyio.sleep(STEP_SECONDS)
    except anyio.get_cancelled_exc_class():
        _mark(directory, label, "cancelled")
        raise
    _mark(directory, label, "done")
    return f"{label}: crunched for {seconds:g} s"


@tool(tags=["long-running"])
async def crunch(context: ToolContext, seconds: float, label: str, directory: str = "") -> str:
    """Work for ``seconds``, reporting progress; a task for clients that take tasks."""
    return await _work(context, seconds, label, directory)


@tool
async def plain_crunch(
    context: ToolContext, seconds: float, label: str, directory: str = ""
) -> str:
    """The same work without the tag: a task only once it runs long."""
    return await _work(context, seconds, label, directory)


@tool(tags=["long-running"])
async def approve(context: ToolContext, item: str) -> str:
    """Ask the user to approve ``item``."""
    answer = await context.elicit(f"Approve {item}?", CONFIRM_SCHEMA)
    approved = answer.accepted and bool(answer.data.get("confirm"))
    return f"{item} {'approved' if approved else 'refused'}"


TOOL_NAMES = ("crunch", "plain_crunch", "approve")


if __name__ == "__main__":
    serve_main([crunch, plain_crunch, approve], sys.argv[1:], prog="tests.support.task_tools")
