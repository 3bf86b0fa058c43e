"""Tools that ask their caller: ``python -m tests.support.asking_proc --broker URL ...``.

They elicit, sample, list roots and log through the tool-side API, async and sync, and
leave files in a directory they are given so a test can tell what really happened in
this process (``LABEL.asked``: it was waiting for an answer; ``LABEL.stopped``: the
call was cancelled while it waited; ``LABEL.refused``: the caller could not answer).
"""

import asyncio
import pathlib
import sys
import time
from typing import Any, Literal

from pydantic import BaseModel

from argentic_tools import AskError, AskNotSupportedError, ToolContext, ToolError, serve_main, tool


def mark(directory: str, name: str) -> None:
    """Leave the file ``name`` in ``directory`` (nothing without a directory)."""
    if directory:
        (pathlib.Path(directory) / name).write_text(name)


class Person(BaseModel):
    """The answer ``ask_name`` asks for."""

    name: str
    age: int | None = None


@tool
async def ask_name(context: ToolContext, label: str = "", directory: str = "") -> dict[str, Any]:
    """Ask the caller for a name; say what the caller did."""
    mark(directory, f"{label}.asked")
    try:
        answer = await context.elicit(f"Who are you? ({label})", Person)
    except asyncio.CancelledError:
        mark(directory, f"{label}.stopped")
        raise
    except AskNotSupportedError:
        mark(directory, f"{label}.refused")
        raise
    return {"action": answer.action, "data": answer.data, "label": label}


@tool
async def ask_many(context: ToolContext, label: str, together: int = 2) -> list[Any]:
    """Ask ``together`` questions at once, then one more after their answers."""
    schema = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
    first = await asyncio.gather(*(context.elicit(f"{label}:{i}", schema) for i in range(together)))
    last = await context.elicit(f"{label}:last", schema)
    return [answer.data.get("value") for answer in (*first, last)]


@tool
async def summarize(context: ToolContext, text: str) -> dict[str, Any]:
    """Ask the caller's model to summarise ``text``."""
    completion = await context.sample(
        [{"role": "user", "content": f"Summarise: {text}"}],
        max_tokens=50,
        system="You summarise.",
        temperature=0.2,
    )
    return {"text": completion.text, "model": completion.model, "stop": completion.stop_reason}


@tool
async def where(context: ToolContext) -> list[str]:
    """The caller's roots."""
    return [root.uri for root in await context.list_roots()]


@tool
async def chatty(context: ToolContext, count: int, level: str = "info") -> int:
    """Log ``count`` records as fast as it can, then return ``count``."""
    for i in range(count):
        context.log(level, f"record {i}", {"i": i}, logger="chatty")
    return count


@tool
async def polite(context: ToolContext) -> str:
    """Ask only a caller that can answer; otherwise go on without."""
    if not context.caller_can("elicit"):
        return "nobody to ask"
    answer = await context.elicit(
        "Proceed?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    )
    return f"asked: {answer.action}"


@tool
def sync_asker(context: ToolContext, text: str) -> dict[str, Any]:
    """A blocking tool: log, ask, sample, then return what it got."""
    context.log("notice", "starting")
    answer = context.elicit_blocking(
        "Continue?", {"type": "object", "properties": {"go": {"type": "boolean"}}}
    )
    completion = context.sample_blocking(text, max_tokens=10)
    roots = context.list_roots_blocking()
    context.log("info", "done")
    return {"go": answer.data.get("go"), "text": completion.text, "roots": len(roots)}


@tool
async def pay(context: ToolContext, amount: float, to: str) -> str:
    """Pay ``amount`` to ``to``, only with a person's yes."""
    if not await context.confirm(f"Pay {amount:.2f} EUR to {to}?"):
        raise ToolError(f"payment of {amount:.2f} EUR to {to} not approved")
    return f"paid {amount:.2f} EUR to {to}"


@tool
async def ask_badly(context: ToolContext) -> str:
    """Ask a question whose answer the caller's handler gets wrong; report the error."""
    try:
        await context.elicit(
            "A number?",
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        )
    except AskError as exc:
        return f"refused: {exc}"
    return "accepted"


@tool
def received(context: ToolContext) -> dict[str, Any]:
    """Report what the call brought: its ids, its seconds left and what its caller handles."""
    left = None if context.deadline is None else context.deadline - time.time()
    return {
        "call_id": context.call_id,
        "thread_id": context.thread_id,
        "trace_id": context.trace_id,
        "user_id": context.user_id,
        "seconds_left": left,
        "handles": [kind for kind in CALLER_ABILITIES if context.caller_can(kind)],
    }


CALLER_ABILITIES: tuple[Literal["elicit", "sample", "log", "roots"], ...] = (
    "elicit",
    "sample",
    "log",
    "roots",
)

TOOLS = [
    ask_name,
    ask_many,
    summarize,
    where,
    chatty,
    polite,
    sync_asker,
    pay,
    ask_badly,
    received,
]
NAMES = tuple(t.__name__ for t in TOOLS)


def main(argv: list[str]) -> None:
    """Serve the asking test tools."""
    serve_main(TOOLS, argv, prog="tests.support.asking_proc")


if __name__ == "__main__":
    main(sys.argv[1:])
