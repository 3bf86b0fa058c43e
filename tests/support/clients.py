"""The caller's side as the tests build it: a Messager and a ToolManager on a test's topics."""

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

from argentic_tools import Messager, ToolManager, Topics

CONFIRM = 15.0
"""A test ToolService's ``confirm_timeout`` where the manager's answer is what is tested
(a refusal, a confirmed replica): entering returns at the answer, however slow the machine."""


def messager_for(url: str, topics: Topics, **kwargs: Any) -> Messager:
    kwargs.setdefault("will_topic", topics.register)
    return Messager(url, **kwargs)


def manager_for(messager: Messager, topics: Topics, **kwargs: Any) -> ToolManager:
    return ToolManager(messager, topics=topics, **kwargs)


@contextlib.asynccontextmanager
async def manager_with_tools(
    url: str, topics: Topics, names: Iterable[str], **kwargs: Any
) -> AsyncIterator[ToolManager]:
    """A manager on ``url`` and ``topics``, once every tool in ``names`` is registered."""
    async with (
        messager_for(url, topics) as messager,
        manager_for(messager, topics, **kwargs) as manager,
    ):
        for name in names:
            await manager.wait_for_tool(name, timeout=15)
        yield manager
