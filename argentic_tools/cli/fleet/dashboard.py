"""``argentic-tools dashboard``: the fleet and its calls, live in a browser (``dashboard`` extra).

The dashboard listens on loopback unless told otherwise. Any other address shows
every call's arguments and results, and the call form, to whoever reaches it: it
needs ``--allow-remote``, and then a token (``--token``, the
``ARGENTIC_TOOLS_DASHBOARD_TOKEN`` variable, or one generated and printed) that
every request must carry. ``--token`` on loopback protects the dashboard from the
other users of the machine too.
"""

import argparse
import functools
import os
import sys
from typing import Any

import anyio

from ..common import EXIT_OK, CliError, StopRequest, connected_manager, messager_from, shielded
from ..options import Commands, add_command, host_and_port

DEFAULT_ADDRESS = "127.0.0.1:8080"
"""Where the dashboard listens by default."""

TOKEN_VARIABLE = "ARGENTIC_TOOLS_DASHBOARD_TOKEN"  # noqa: S105 - a variable name
"""Environment variable with the token (keeps it out of the process list)."""


def add_dashboard_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``argentic-tools dashboard``."""
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        default=DEFAULT_ADDRESS,
        help="address to serve the dashboard on (port 0 picks a free one); /healthz and"
        " /readyz answer there without the token",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow an address other than loopback: whoever reaches it sees every call's "
        "arguments and results and can call any tool, so a token is then required",
    )
    parser.add_argument(
        "--token",
        default=None,
        help=f"require this token on every request (or set {TOKEN_VARIABLE}); with "
        "--allow-remote and no token, one is generated and printed",
    )
    parser.add_argument(
        "--history",
        default=None,
        metavar="FILE",
        help="also list older calls from this file, kept by managers with "
        "ToolManager(recorder=SqliteRecorder(FILE)) (read only)",
    )
    parser.add_argument(
        "--auth",
        nargs="+",
        default=None,
        metavar="MODE",
        help="also admit what mcp serve --auth admits: 'oauth' (JWTs of --issuer for "
        "--audience) or 'keys FILE' (the API keys whose SHA-256 FILE holds)",
    )
    parser.add_argument("--issuer", default=None, help="with --auth oauth: the OAuth issuer")
    parser.add_argument("--audience", default=None, help="with --auth oauth: the tokens' aud")


def verifier_of(args: argparse.Namespace) -> Any:
    """The verifier of ``--auth`` (the MCP gateway's, from the mcp extra), or None.

    Raises:
        CliError: ``--auth`` is incomplete.

    """
    if args.auth is None:
        return None
    from argentic_tools.mcp.access import auth

    kind, *rest = args.auth
    if kind == "keys" and len(rest) == 1:
        return auth.KeyFileVerifier(rest[0])
    if kind == "oauth" and not rest and args.issuer and args.audience:
        return auth.JwtVerifier(args.issuer, args.audience)
    raise CliError("--auth: give 'oauth' with --issuer and --audience, or 'keys FILE'")


def load_dashboard() -> Any:
    """The dashboard package, or a one-line error naming the extra to install."""
    try:
        import argentic_tools.dashboard as dashboard
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("starlette", "uvicorn"):
            raise CliError(
                "the dashboard needs the dashboard extra: pip install 'argentic-tools[dashboard]'"
            ) from None
        raise
    return dashboard


def address(host: str, port: int, token: str | None) -> str:
    """The dashboard's URL to print (with its token, which the page then keeps in a cookie)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


async def dashboard_command(args: argparse.Namespace, stop: StopRequest) -> int:
    """``dashboard``: serve the dashboard until Ctrl-C or SIGTERM."""
    host, port = host_and_port(args.http)
    host = host.strip("[]")
    dashboard = load_dashboard()
    problem = dashboard.bind_problem(host, args.allow_remote)
    if problem is not None:
        raise CliError(f"--http {args.http}: {problem}")
    token = args.token or os.environ.get(TOKEN_VARIABLE) or None
    if token is None and not dashboard.is_loopback(host):
        token = dashboard.new_token()
    async with connected_manager(args) as manager:
        observer = messager_from(args)
        await observer.connect()
        try:
            server = dashboard.Dashboard(
                manager, observer, token=token, history=args.history, verifier=verifier_of(args)
            )
            serve = functools.partial(server.serve, host, port, stop=stop.requested.wait)
            unbound: OSError | None = None
            async with anyio.create_task_group() as group:
                try:
                    bound = await group.start(serve)
                except OSError as exc:  # raised here, not by the group: nothing else runs
                    unbound = exc
                else:
                    # Plain and flushed: scripts (and tests) read the address here.
                    url = address(host, bound, token)
                    print(f"Dashboard on {url}", file=sys.stderr, flush=True)
                    if not dashboard.is_loopback(host):
                        print(
                            "warning: the dashboard is reachable from other machines; anyone "
                            "with the token sees every call and can call any tool",
                            file=sys.stderr,
                            flush=True,
                        )
            if unbound is not None:
                raise CliError(f"--http {args.http}: {unbound.strerror or unbound}")
        finally:
            await shielded(observer.disconnect)
    return EXIT_OK


def add_parser(commands: Commands) -> None:
    """``dashboard``: its options."""
    dashboard = add_command(
        commands,
        "dashboard",
        "a live view of the fleet and its calls in a browser",
        (
            f"argentic-tools dashboard  # http://{DEFAULT_ADDRESS}",
            "argentic-tools dashboard --http 127.0.0.1:0 --history calls.db",
        ),
        long_running=True,
    )
    add_dashboard_arguments(dashboard)
    dashboard.set_defaults(run=dashboard_command, graceful=True, log_level="WARNING")
