"""Tools for the team-gateway tests: ``python -m tests.support.team_tools --names a,b``.

Each tool ``NAME`` returns, and prints on stdout (one line ``NAME user_id=...``), the
``context.user_id`` its call carried: the subject the gateway vouched for.
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
    note: str = ""


API = json.dumps(Arguments.model_json_schema())


class WhoCalls(BaseTool):
    """Answers with the user the call is made for."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "Say whom this call is for.", API, Arguments)

    async def _execute(self, **kwargs: Any) -> Any:
        assert self.context is not None
        user = self.context.user_id
        print(f"{self.name} user_id={user}", flush=True)
        return {"tool": self.name, "user_id": user}


def main() -> None:
    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    add_service_arguments(parser)
    parser.add_argument("--names", required=True, help="comma-separated tool names")
    args = parser.parse_args()
    args.debug = False
    logging.basicConfig(level=logging.WARNING)
    service = service_from_args(args, [WhoCalls(name) for name in args.names.split(",")])
    asyncio.run(service.run())


if __name__ == "__main__":
    main()
