"""What ``list --mcp``, ``call --mcp`` and ``mcp bridge --url`` send an MCP server by URL.

``--header 'NAME: VALUE'`` (repeatable) and ``--token TOKEN`` (sent as
``Authorization: Bearer TOKEN``), or the token in :data:`TOKEN_ENV`, so that a secret
need not sit in the shell's history. Headers from an ``mcpServers`` config file come
first; the command line's replace those of the same name; the variable's token is sent
when no ``Authorization`` header is given otherwise. The token is never printed: an
error names a header by its name only.
"""

import argparse
import os
import re
from collections.abc import Mapping

from ..common import CliError

TOKEN_ENV = "ARGENTIC_TOOLS_MCP_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""The variable ``--token`` is read from when it is not given."""

_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110's token)."""


def add_credential_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--header NAME: VALUE`` (repeatable) and ``--token TOKEN``."""
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for a server reached by URL (repeatable), like"
        " --header 'X-Api-Key: ...'",
    )
    parser.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="send 'Authorization: Bearer TOKEN' to a server reached by URL (an --auth"
        f" gateway's key); unset, the token is read from ${TOKEN_ENV}, which keeps it out of"
        " the shell's history",
    )


def header_pair(text: str, where: str = "--header") -> tuple[str, str]:
    """``'NAME: VALUE'`` as ``(NAME, VALUE)``; a CliError naming it (not its value) if not."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _NAME.fullmatch(name):
        shown = text.split()[0] if text.split() else text
        shown += " ..." if shown != text.strip() else ""
        raise CliError(f"{where} {shown!r}: expected NAME: VALUE, like --header 'X-Api-Key: ...'")
    if "\r" in value or "\n" in value:
        raise CliError(f"{where} {name!r}: a header's value cannot span lines")
    return name, value


def request_headers(
    args: argparse.Namespace, *, by_url: bool, configured: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The headers to send the server: ``configured`` (a config file's), then the options'.

    Args:
        args: The parsed ``--header`` and ``--token``.
        by_url: Whether the server is reached by URL; a server started as a command
            takes its secrets with ``-e KEY=VALUE``, and headers for it are refused.
        configured: The headers of the server's entry in ``--config``.

    Raises:
        CliError: A malformed header, a header or token for a command, or a token
            given both as ``--token`` and as an ``Authorization`` header.

    """
    if not by_url:
        if args.header or args.token is not None:
            raise CliError(
                "--header and --token are for a server reached by URL; a server started as"
                " a command takes its secrets with -e KEY=VALUE"
            )
        return {}
    headers = dict(configured or {})
    named = [header_pair(text) for text in args.header]
    if args.token is not None:
        if not args.token.strip():
            raise CliError("--token: the token is empty")
        if any(name.lower() == "authorization" for name, _ in named):
            raise CliError("--token and --header 'Authorization: ...': give the credentials once")
        named.append(("Authorization", f"Bearer {args.token.strip()}"))
    for name, value in named:
        headers = _without(headers, name)
        headers[name] = value
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token and not any(name.lower() == "authorization" for name in headers):
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _without(headers: dict[str, str], name: str) -> dict[str, str]:
    """``headers`` without ``name`` in any case (HTTP header names ignore case)."""
    return {key: value for key, value in headers.items() if key.lower() != name.lower()}
