"""``serve``: tools from Python modules or files, until Ctrl-C (``--reload``: again on edits)."""

import argparse

import anyio

from ..._tools.hosting.service import add_service_arguments, service_from_args
from ..common import EXIT_OK, StopRequest
from ..options import Commands, add_command
from .loading import load_tools
from .reload import serve_with_reload, started_by_reloader, stop_when_reloader_exits


async def serve_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``serve``: load the tools and serve them until Ctrl-C or SIGTERM.

    With ``--reload`` a child process serves them, started again on each edit.
    """
    if args.reload:
        return await serve_with_reload(args, stop)
    reloaded = started_by_reloader()
    tools = load_tools(args.tools)
    service = service_from_args(args, tools, log_level=args.log_level)
    async with anyio.create_task_group() as tasks:
        if reloaded:
            tasks.start_soon(stop_when_reloader_exits, stop)
        async with service:
            await stop.requested.wait()
        tasks.cancel_scope.cancel()
    return EXIT_OK


def add_parser(commands: Commands) -> None:
    """``serve``: its options (a tool service's, and ``--reload``)."""
    serve = add_command(
        commands,
        "serve",
        "serve @tool functions or BaseTool classes from Python modules",
        (
            "argentic-tools serve tool_clients.calculator  # every tool in a module",
            "argentic-tools serve tool_clients.units:convert_units tool_clients.clock",
            "argentic-tools serve tool_clients.weather --max-concurrency 8 --session persistent",
            "argentic-tools serve tool_clients/calculator.py --reload  # served again on each edit",
        ),
        long_running=True,
    )
    serve.add_argument(
        "tools",
        nargs="+",
        metavar="MODULE[:OBJECT]",
        help="a module (every tool in it), MODULE:OBJECT (a tool or a list of tools), "
        "or a file: path/to/tools.py[:OBJECT]",
    )
    add_service_arguments(serve)
    serve.add_argument(
        "--reload",
        action="store_true",
        help="serve again whenever a .py file of the tools changes (the file's directory, "
        "the module's package); needs watchfiles, in the [cli] extra",
    )
    serve.set_defaults(run=serve_command, graceful=True)
