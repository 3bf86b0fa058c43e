"""The team options of ``mcp serve`` (``--auth``, ``--views``) and ``mcp views`` / ``mcp keys``.

See ``docs/security.md`` for what they protect and how.
"""

import argparse
import contextlib
import ipaddress
import sys
from pathlib import Path
from typing import Any

from ... import JsonLinesRecorder
from ..common import EXIT_OK, CliError, connected_manager, settle
from ..options import Commands, add_command
from .extra import mcp_module


def _mcp(module: str) -> Any:
    return mcp_module(module, ("mcp", "mcp_types", "jwt"))


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """``mcp serve``'s options for a gateway a team shares."""
    parser.add_argument(
        "--auth",
        nargs="+",
        metavar=("oauth|keys", "FILE"),
        default=None,
        help="HTTP only: 'oauth' (bearer JWTs of --issuer for --audience) or 'keys FILE'"
        " (API keys whose SHA-256 digests FILE holds; FILE is read again when it changes)",
    )
    parser.add_argument("--issuer", default=None, help="the OAuth issuer whose tokens count")
    parser.add_argument(
        "--audience",
        default=None,
        help="what a token's aud must hold (default: the gateway's resource URL)",
    )
    parser.add_argument(
        "--resource",
        default=None,
        metavar="URL",
        help="the gateway's public URL, named by its protected-resource metadata"
        " (default: http://HOST:PORT/PATH of --http)",
    )
    parser.add_argument(
        "--scope",
        action="append",
        default=[],
        help="a scope every request needs (repeatable)",
    )
    parser.add_argument(
        "--audit",
        default=None,
        metavar="FILE",
        help="append every call (tool, arguments, outcome, the caller's subject as user_id)"
        " to FILE as JSON lines",
    )
    parser.add_argument(
        "--views",
        default=None,
        metavar="FILE",
        help="TOML rules: which tools each caller sees and calls, and rate/concurrency limits",
    )


def audit_of(args: argparse.Namespace) -> Any:
    """The recorder of ``--audit FILE`` (one JSON line per call, with its user), or None."""
    if args.audit is None:
        return None
    return JsonLinesRecorder(args.audit)


def open_gateway_warning(args: argparse.Namespace, address: tuple[str, int] | None) -> str | None:
    """The warning for an HTTP gateway without ``--auth`` on a non-loopback address, or None.

    Such a gateway lets whoever reaches the address list and call every tool on the bus.
    """
    if address is None or args.auth is not None:
        return None
    host = address[0].strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return None
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return None
    return (
        f"the MCP gateway on {address[0]} is open to the network without authentication: "
        "anyone who reaches it can list and call every tool; protect it with --auth keys FILE "
        "or --auth oauth --issuer URL (docs/security.md), or listen on 127.0.0.1"
    )


def team_access(args: argparse.Namespace, address: tuple[str, int] | None) -> Any:
    """The gateway's ``TeamAccess`` from the options, or None when none is given."""
    if args.auth is None and args.views is None:
        return None
    team, views_module, limits_module = (
        _mcp("access.team"),
        _mcp("access.views"),
        _mcp("access.limits"),
    )
    views = limits = None
    if args.views is not None:
        try:
            data = views_module.load_file(args.views)
            views = views_module.parse_views(data, args.views)
            limits = limits_module.parse_limits(data, args.views)
        except ValueError as exc:
            raise CliError(f"--views {exc}") from None
    protection = None
    if args.auth is not None:
        if address is None:
            raise CliError("--auth protects the HTTP gateway: add --http HOST:PORT")
        protection = _protection(args, address)
    access = team.TeamAccess(protection=protection, views=views)
    if limits is not None:
        access.limits = limits
    return access


def _protection(args: argparse.Namespace, address: tuple[str, int]) -> Any:
    auth = _mcp("access.auth")
    host, port = address
    if args.resource is None and port == 0:
        raise CliError("--auth with port 0: give the gateway's URL with --resource URL")
    resource = args.resource or f"http://{host}:{port}{args.path}"
    kind, *rest = args.auth
    if kind == "oauth":
        if rest:
            raise CliError("--auth oauth takes no file (did you mean --auth keys FILE?)")
        if args.issuer is None:
            raise CliError("--auth oauth needs --issuer URL (the authorization server)")
        verifier = auth.JwtVerifier(args.issuer, args.audience or resource)
        servers = [args.issuer]
    elif kind == "keys":
        if len(rest) != 1:
            raise CliError("--auth keys FILE: one key file")
        if not Path(rest[0]).is_file():
            raise CliError(f"--auth keys {rest[0]}: no such file")
        verifier = auth.KeyFileVerifier(rest[0])
        servers = [args.issuer] if args.issuer else []  # keys: no authorization server
    else:
        raise CliError(f"--auth {kind}: expected oauth or keys FILE")
    return _mcp("access.team").Protection(verifier, resource, servers, tuple(args.scope))


def add_commands(commands: Commands) -> None:
    """``mcp views`` and ``mcp keys``."""
    views = add_command(
        commands,
        "views",
        "show which tools a caller sees through a views file",
        (
            "argentic-tools mcp views --views team.toml --explain alice --scope tools:read"
            " --tool search --tool drop_table",
            "argentic-tools mcp views --views team.toml --explain ci-bot  # the live fleet",
        ),
    )
    views.add_argument("--views", required=True, metavar="FILE", help="the views file")
    views.add_argument("--explain", required=True, metavar="SUBJECT", help="the caller's subject")
    views.add_argument("--scope", action="append", default=[], help="a scope of the caller")
    views.add_argument(
        "--claim", action="append", default=[], metavar="KEY=VALUE", help="a claim of the caller"
    )
    views.add_argument(
        "--tool",
        action="append",
        default=[],
        metavar="NAME[:TAG,...]",
        help="a tool to judge (repeatable; without it, the tools of the fleet on --broker)",
    )
    views.add_argument("--wait", type=float, default=1.0, help="seconds to let tools register")
    views.set_defaults(run=views_command, graceful=False, log_level="WARNING")

    keys = add_command(
        commands,
        "keys",
        "make an API key for --auth keys FILE",
        (
            "argentic-tools mcp keys --file keys.toml --subject ci-bot --scope tools:call",
            "argentic-tools mcp keys --file keys.toml --subject nightly-report",
        ),
        client=False,
    )
    keys.add_argument("--file", required=True, help="the key file to append to")
    keys.add_argument("--subject", required=True, help="whom the key stands for")
    keys.add_argument("--scope", action="append", default=[], help="a scope of the key")
    keys.set_defaults(sync=keys_command, log_level="WARNING")


async def views_command(args: argparse.Namespace, stop: Any) -> int:
    """``mcp views --explain``: each tool in or out of the caller's view, and why."""
    views_module = _mcp("access.views")
    try:
        views = views_module.parse_views(views_module.load_file(args.views), args.views)
    except ValueError as exc:
        raise CliError(f"--views {exc}") from None
    claims: dict[str, Any] = {}
    for pair in args.claim:
        key, sep, value = pair.partition("=")
        if not sep:
            raise CliError(f"--claim {pair!r}: expected KEY=VALUE")
        claims.setdefault(key, []).append(value)
    caller = views_module.Caller(args.explain, None, frozenset(args.scope), claims)
    tools: list[tuple[str, tuple[str, ...]]] = []
    for given in args.tool:
        name, _, tags = given.partition(":")
        tools.append((name, tuple(tag for tag in tags.split(",") if tag)))
    if not tools:
        async with connected_manager(args) as manager:
            await settle(manager, args.wait)
            tools = [(info.name, info.tags) for info in manager.get_available_tools()]
    for name, tags in sorted(tools):
        allowed, why = views.explain(caller, [name], tags)
        print(f"{'+' if allowed else '-'} {name}  ({why})")
    return EXIT_OK


def keys_command(args: argparse.Namespace) -> int:
    """``mcp keys``: a new API key, printed once; its digest appended to the key file."""
    auth = _mcp("access.auth")
    key = auth.new_api_key()
    with open(args.file, "a", encoding="utf-8") as file:
        file.write("\n" + auth.key_entry(key, args.subject, args.scope))
    print(key)
    print(f"(its SHA-256 is in {args.file}; the key is shown only now)", file=sys.stderr)
    return EXIT_OK
