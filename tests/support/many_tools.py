"""A process serving thousands of tools at once, like an MCP bridge of a very large server.

``python -m tests.support.many_tools --broker URL --topic-prefix P --count N`` serves
``many-0`` .. ``many-{N-1}`` (one small class, its schema given as JSON, so that making
ten thousand tools takes milliseconds) until SIGTERM, when it unregisters them all.
"""

import argparse
import asyncio
import json
import logging
from typing import Any

from pydantic import BaseModel

from argentic_tools import BaseTool
from argentic_tools._tools.hosting.service import (
    add_connection_arguments,
    add_service_arguments,
    service_from_args,
)


class Arguments(BaseModel):
    x: int = 0


API = json.dumps(Arguments.model_json_schema())


class Numbered(BaseTool):
    """One of many identical tools, told apart by name."""

    def __init__(self, number: int) -> None:
        super().__init__(f"many-{number}", "Return x.", API, Arguments)

    async def _execute(self, **kwargs: Any) -> Any:
        return kwargs.get("x", 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    add_service_arguments(parser)
    parser.add_argument("--count", type=int, required=True)
    args = parser.parse_args()
    args.debug = False
    logging.basicConfig(level=logging.WARNING)
    service = service_from_args(args, [Numbered(n) for n in range(args.count)])
    asyncio.run(service.run())


if __name__ == "__main__":
    main()
