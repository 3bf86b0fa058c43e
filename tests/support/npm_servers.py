"""MCP servers from npm that the tests run: ``python -m tests.support.npm_servers`` installs them.

The reference server ``@modelcontextprotocol/server-everything``, pinned, goes into the
checkout's ``.cache/npm`` through ``scripts/ensure-npm.sh`` (never globally): ``make
test`` runs this module first, and :func:`everything_command` installs it on first use
too, so a test on a clean clone never lacks it. A second call does no network.
"""

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from tests.support.brokers import free_port
from tests.support.processes import ROOT

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
"""The reference MCP server, at the version the tests were written against."""

OLDEST_NODE = 20
"""The oldest Node major the server runs on (measured: 20 and 22)."""

ENSURE_NPM = ROOT / "scripts" / "ensure-npm.sh"


def _ensure(*args: str) -> str:
    done = subprocess.run(
        ["bash", str(ENSURE_NPM), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"scripts/ensure-npm.sh {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout.strip()


def node() -> str:
    """A node executable: the machine's when new enough, else one ensure-npm.sh installs."""
    own = shutil.which("node")
    if own is not None:
        version = subprocess.run(
            [own, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
        major = version.lstrip("v").split(".", 1)[0]
        if major.isdigit() and int(major) >= OLDEST_NODE:
            return own
    return _ensure("node")


def everything_command() -> list[str]:
    """The command that starts server-everything over stdio (installed when missing)."""
    prefix = Path(_ensure("package", EVERYTHING))
    script = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
    return [node(), str(script / "index.js"), "stdio"]


@contextlib.asynccontextmanager
async def everything_http() -> AsyncIterator[str]:
    """server-everything over streamable HTTP on a free local port; yields its MCP URL."""
    command = everything_command()
    port = free_port()
    env = dict(os.environ, PORT=str(port))
    process = await anyio.open_process([*command[:2], "streamableHttp"], env=env)
    try:
        assert process.stderr is not None
        text = b""
        with anyio.fail_after(30):
            while b"listening on port" not in text:
                text += await process.stderr.receive()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()


if __name__ == "__main__":
    print(" ".join(everything_command()), file=sys.stderr)
