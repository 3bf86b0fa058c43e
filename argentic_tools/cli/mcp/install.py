"""``argentic-tools mcp install``: write the stdio gateway into an MCP client's configuration.

As FastMCP's ``fastmcp install`` does for a FastMCP server, with the same files: Claude
Desktop's ``claude_desktop_config.json`` and Cursor's ``mcp.json`` (``{"mcpServers": {NAME:
{"command", "args", "env"}}}``), VS Code's ``mcp.json`` (``{"servers": {NAME: {"type":
"stdio", ...}}}``), Claude Code through its own CLI (``claude mcp add``), and, for any other
client, the snippet on stdout. A file is merged, never replaced: its other servers and keys
stay, a server of the same name is replaced (and the message says so), nothing is backed
up behind the user's back.

The command written is this environment's Python running ``-m argentic_tools mcp serve``
with the broker, topic prefix and TLS files given here: an MCP client starts it with its
own working directory and environment, where neither ``argentic-tools`` on PATH nor
``$ARGENTIC_TOOLS_BROKER`` can be counted on.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._transport import parse_brokers
from ..common import EXIT_OK, CliError, topics_from
from ..options import Commands, add_command, add_env_argument
from .commands import env_pairs

TARGETS = ("claude-desktop", "claude-code", "cursor", "vscode", "mcp-json")
"""What ``mcp install`` writes into, in the order its help lists them."""

DEFAULT_NAME = "argentic-tools"
"""The server's name in the client's configuration without ``--name``."""


@dataclass(frozen=True)
class StdioServer:
    """The gateway as an MCP client starts it: a command, its arguments, its environment."""

    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def mcp_servers_entry(self) -> dict[str, Any]:
        """The entry of an ``mcpServers`` object (Claude Desktop, Cursor, most clients)."""
        return {"command": self.command, "args": self.args, "env": self.env}

    def vscode_entry(self) -> dict[str, Any]:
        """The entry of VS Code's ``servers`` object, which names the transport."""
        return {"type": "stdio", **self.mcp_servers_entry()}

    def argv(self) -> list[str]:
        """The command line itself."""
        return [self.command, *self.args]


def gateway_server(args: argparse.Namespace, env: dict[str, str]) -> StdioServer:
    """``mcp serve`` on the broker and topic prefix of ``args``, run by this Python."""
    try:
        parse_brokers(args.broker)
    except ValueError as exc:
        raise CliError(f"--broker {args.broker!r}: {exc}") from None
    topics_from(args)  # a bad prefix fails here, not in the client's log
    serve = ["-m", "argentic_tools", "mcp", "serve", "--broker", args.broker]
    if args.topic_prefix:
        serve += ["--topic-prefix", args.topic_prefix]
    for option, path in (
        ("--ca-file", args.ca_file),
        ("--cert-file", args.cert_file),
        ("--key-file", args.key_file),
    ):
        if path:
            # The client starts the gateway from its own directory.
            serve += [option, str(Path(path).expanduser().absolute())]
    # Not resolved: a virtual environment's python is a symlink that must stay one.
    return StdioServer(os.path.abspath(sys.executable), serve, env)


def _app_config_dir() -> Path:
    """Where desktop applications keep their settings on this system."""
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def claude_desktop_file() -> Path:
    """Claude Desktop's ``claude_desktop_config.json`` on this system."""
    return _app_config_dir() / "Claude" / "claude_desktop_config.json"


def vscode_user_file() -> Path:
    """The ``mcp.json`` of VS Code's default user profile on this system."""
    return _app_config_dir() / "Code" / "User" / "mcp.json"


def merged(config: Any, key: str, name: str, entry: dict[str, Any], path: Path) -> bool:
    """Put ``entry`` as ``config[key][name]``; whether a server of that name was replaced."""
    if not isinstance(config, dict):
        raise CliError(f"{path}: expected a JSON object at the top, found {type(config).__name__}")
    servers = config.setdefault(key, {})
    if not isinstance(servers, dict):
        raise CliError(f'{path}: expected "{key}" to be an object of servers')
    replaced = name in servers
    servers[name] = entry
    return replaced


def write_server(path: Path, key: str, name: str, entry: dict[str, Any]) -> bool:
    """Merge server ``name`` into the JSON file at ``path``; whether it replaced one.

    The file is read whole and written whole through a temporary file in the same
    directory, so a failure leaves the old file as it was.
    """
    config: Any = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror}") from None
    if text.strip():
        try:
            config = json.loads(text)
        except ValueError as exc:
            # VS Code accepts comments in mcp.json; json does not, and they would be lost.
            raise CliError(
                f"{path} is not plain JSON ({exc}); left as it is: add the server by hand "
                "(`argentic-tools mcp install mcp-json` prints it)"
            ) from None
    replaced = merged(config, key, name, entry, path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
        ) as temporary:
            json.dump(config, temporary, indent=2)
            temporary.write("\n")
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror}") from None
    try:
        if text:  # the file keeps its mode; a new one is the user's alone (it may hold -e)
            shutil.copymode(path, temporary.name)
        os.replace(temporary.name, path)
    except OSError as exc:
        Path(temporary.name).unlink(missing_ok=True)
        raise CliError(f"{path}: {exc.strerror}") from None
    return replaced


def claude_code_command(name: str, server: StdioServer, claude: str = "claude") -> list[str]:
    """``claude mcp add NAME [-e KEY=VALUE]... -- COMMAND ARGS...``.

    The ``-e`` options come after the name: Claude Code's ``--env`` takes several values,
    and before the name it would take the name for one.
    """
    env = [part for key, value in server.env.items() for part in ("-e", f"{key}={value}")]
    return [claude, "mcp", "add", name, *env, "--", *server.argv()]


def install_claude_code(name: str, server: StdioServer) -> str:
    """Add the server through ``claude mcp add``; what to tell the user."""
    claude = shutil.which("claude")
    if claude is None:
        command = shlex.join(claude_code_command(name, server))
        raise CliError(
            "claude (Claude Code's command line) is not on PATH: install Claude Code, "
            f"or run this where it is: {command}"
        )
    added = subprocess.run(  # noqa: S603 - our own arguments, no shell
        claude_code_command(name, server, claude),
        capture_output=True,
        text=True,
        check=False,
    )
    if added.returncode != 0:
        said = (added.stderr or added.stdout).strip() or f"exit status {added.returncode}"
        raise CliError(f"claude mcp add {name}: {said}", status=added.returncode or 1)
    return f"added server {name!r} to Claude Code (claude mcp add {name})"


def install_command(args: argparse.Namespace) -> int:
    """``mcp install TARGET``: the gateway in an MCP client's configuration."""
    target: str = args.target
    if args.project is not None and target not in ("cursor", "vscode"):
        raise CliError(f"--project DIR is for cursor and vscode, not {target}")
    if args.user and target != "vscode":
        raise CliError(f"--user is for vscode, not {target}")
    if args.user and args.project is not None:
        raise CliError("--user and --project DIR: choose one")
    if not args.name.strip():
        raise CliError("--name: give the server a name")
    server = gateway_server(args, env_pairs(args.env))
    if target == "mcp-json":
        # A whole config file, which `mcp bridge --config` and most clients read as it is.
        snippet = {"mcpServers": {args.name: server.mcp_servers_entry()}}
        print(json.dumps(snippet, indent=2))
        return EXIT_OK
    if target == "claude-code":
        print(install_claude_code(args.name, server))
        return EXIT_OK
    if target == "claude-desktop":
        path, key, entry, client = (
            claude_desktop_file(),
            "mcpServers",
            server.mcp_servers_entry(),
            "Claude Desktop",
        )
    elif target == "cursor":
        base = project_dir(args.project) if args.project is not None else Path.home()
        path, key, entry, client = (
            base / ".cursor" / "mcp.json",
            "mcpServers",
            server.mcp_servers_entry(),
            "Cursor",
        )
    else:
        path = (
            vscode_user_file()
            if args.user
            else project_dir(args.project or ".") / ".vscode" / "mcp.json"
        )
        key, entry, client = "servers", server.vscode_entry(), "VS Code"
    replaced = write_server(path, key, args.name, entry)
    what = "replaced server" if replaced else "added server"
    print(f"{what} {args.name!r} in {path}; restart {client} (or reload its MCP servers)")
    return EXIT_OK


def project_dir(text: str) -> Path:
    """``--project DIR`` as an absolute path to an existing directory."""
    path = Path(text).expanduser().absolute()
    if not path.is_dir():
        raise CliError(f"--project {text}: no such directory")
    return path


def add_parser(commands: Commands) -> None:
    """``mcp install``: its options."""
    mcp_install = add_command(
        commands,
        "install",
        "write the stdio gateway (mcp serve) into an MCP client's configuration",
        (
            "argentic-tools mcp install claude-desktop --broker mqtt://localhost:1883",
            "argentic-tools mcp install cursor --project .  # .cursor/mcp.json here",
            "argentic-tools mcp install vscode  # .vscode/mcp.json in this directory",
            "argentic-tools mcp install claude-code --name fleet --topic-prefix team1",
            "argentic-tools mcp install mcp-json -e API_TOKEN=secret  # prints it, for any client",
        ),
    )
    mcp_install.add_argument(
        "target",
        choices=TARGETS,
        help="claude-desktop: its claude_desktop_config.json; claude-code: `claude mcp add`; "
        "cursor: ~/.cursor/mcp.json; vscode: .vscode/mcp.json; mcp-json: print the "
        '{"mcpServers": ...} JSON on stdout',
    )
    mcp_install.add_argument(
        "--name", default=DEFAULT_NAME, help="the server's name in the client's configuration"
    )
    add_env_argument(mcp_install, "set a variable for the gateway (repeatable)")
    mcp_install.add_argument(
        "--project",
        default=None,
        metavar="DIR",
        help="cursor, vscode: write DIR/.cursor/mcp.json or DIR/.vscode/mcp.json "
        "(vscode's default: the current directory)",
    )
    mcp_install.add_argument(
        "--user",
        action="store_true",
        help="vscode: the user profile's mcp.json instead of the project's",
    )
    mcp_install.set_defaults(sync=install_command)
