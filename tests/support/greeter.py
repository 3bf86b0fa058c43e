"""An argentic-style tool for tests: a ``BaseTool`` with an argument model and a messager."""

from typing import Any

from pydantic import BaseModel

from argentic_tools import BaseTool, Messager


class GreetArgs(BaseModel):
    name: str


class Greeter(BaseTool):
    """A tool written the argentic way: only the import differs."""

    def __init__(self, messager: Messager) -> None:
        super().__init__(
            name="greeter",
            manual="Greet someone by name.",
            api="",
            argument_schema=GreetArgs,
            messager=messager,
        )

    async def _execute(self, **kwargs: Any) -> Any:
        assert self.context is not None
        return f"hello {kwargs['name']} (task {self.context.task_id})"
