"""Tools that take part in their call: they ask their caller's user, borrow its model,
list its roots and log to it.

    python -m tests.support.participation_tools --broker URL [--topic-prefix P]

Served like any tool process, called through ``argentic-tools mcp serve`` by the MCP
participation tests (``tests/product/test_mcp_participation.py``).
"""

import sys
from pathlib import Path

import anyio

from argentic_tools import ToolContext, serve_main, tool

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
COLOUR_SCHEMA = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
    "required": ["colour"],
}


def mark(directory: str, name: str) -> None:
    """Leave the file ``name`` in ``directory``."""
    Path(directory, name).touch()


@tool
async def ask_name(context: ToolContext, label: str = "", directory: str = "") -> str:
    """Ask the user's name; greet them, or say what they did instead.

    With ``directory``, a file ``<label>.stopped`` there says the call was cancelled
    while it waited for the answer.
    """
    try:
        result = await context.elicit("What is your name?", NAME_SCHEMA)
    except anyio.get_cancelled_exc_class():
        if directory:
            mark(directory, f"{label}.stopped")
        raise
    if result.accepted:
        return f"hello {result.data['name']}"
    return f"no name ({result.action})"


@tool
async def progress_and_question(context: ToolContext) -> str:
    """Report progress, ask the user's name, report progress again."""
    await context.report_progress(1, 2, "asking")
    name = await context.elicit("What is your name?", NAME_SCHEMA)
    await context.report_progress(2, 2, "answered")
    return f"thanks {name.data.get('name')}"


@tool
async def slow(context: ToolContext, label: str, directory: str) -> str:
    """Report progress every 0.1 s for a minute; ``<label>.stopped`` when cancelled."""
    try:
        for step in range(600):
            await context.report_progress(step + 1, 600)
            await anyio.sleep(0.1)
    except anyio.get_cancelled_exc_class():
        mark(directory, f"{label}.stopped")
        raise
    return "finished"


@tool
async def two_questions(context: ToolContext) -> str:
    """Ask the user's name, then their favourite colour."""
    name = await context.elicit("What is your name?", NAME_SCHEMA)
    colour = await context.elicit(f"Which colour, {name.data.get('name')}?", COLOUR_SCHEMA)
    return f"{name.data.get('name')} likes {colour.data.get('colour')}"


@tool
async def name_and_summary(context: ToolContext, text: str) -> str:
    """Ask the user's name and the model's summary of ``text`` at the same time."""
    found: dict[str, str] = {}

    async def name() -> None:
        found["name"] = str((await context.elicit("What is your name?", NAME_SCHEMA)).data)

    async def summary() -> None:
        found["summary"] = (await context.sample(f"Summarise: {text}", max_tokens=50)).text

    async with anyio.create_task_group() as group:
        group.start_soon(name)
        group.start_soon(summary)
    return f"{found['name']} / {found['summary']}"


@tool
async def summarise(context: ToolContext, text: str) -> str:
    """Ask the caller's model for a summary of ``text``."""
    result = await context.sample(
        f"Summarise: {text}", max_tokens=50, system="Be brief.", temperature=0.2
    )
    return f"summary: {result.text} (by {result.model})"


@tool
async def my_roots(context: ToolContext) -> str:
    """The caller's roots, by URI."""
    return ", ".join(root.uri for root in await context.list_roots())


@tool
async def chatty(context: ToolContext) -> str:
    """Log one record at debug, info and warning, in that order."""
    context.log("debug", "looking around", logger="chatty")
    context.log("info", "working", data={"step": 1}, logger="chatty")
    context.log("warning", "almost done", logger="chatty")
    return "logged"


@tool
async def needs_model(context: ToolContext) -> str:
    """Ask the caller's model without checking that the caller lends one."""
    return (await context.sample("Say hello", max_tokens=10)).text


@tool
def confirm_delete(context: ToolContext, what: str) -> str:
    """A sync tool that deletes nothing unless a person says yes."""
    if context.confirm_blocking(f"Delete {what}?"):
        return f"deleted {what}"
    return f"kept {what}"


TOOLS = [
    ask_name,
    progress_and_question,
    slow,
    two_questions,
    name_and_summary,
    summarise,
    my_roots,
    chatty,
    needs_model,
    confirm_delete,
]
TOOL_NAMES = tuple(t.__name__ for t in TOOLS)


if __name__ == "__main__":
    serve_main(TOOLS, sys.argv[1:], prog="tests.support.participation_tools")
