"""The ``argentic-tools`` command line as the tests run it: real subprocesses, bounded waits."""

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from tests.support.brokers import child_env

from .processes import ROOT

TIMEOUT = 30
"""Bound on any one CLI run; generous because CI machines are slow."""


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "argentic_tools", *args]


def connection(url: str, prefix: str) -> list[str]:
    return ["--broker", url, "--topic-prefix", prefix]


async def run_cli(
    *args: str, timeout: float = TIMEOUT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    environment = child_env()
    environment.update(env or {})
    with anyio.fail_after(timeout):
        return await anyio.run_process(cli(*args), check=False, cwd=ROOT, env=environment)


CONSOLE_SCRIPT = Path(sys.executable).parent / "argentic-tools"
"""The installed console script, as users run it."""


async def run_installed_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Like :func:`run_cli`, through the installed console script rather than ``python -m``."""
    with anyio.fail_after(timeout):
        return await anyio.run_process([str(CONSOLE_SCRIPT), *args], check=False, env=child_env())


def lines(data: bytes) -> list[str]:
    return data.decode(errors="replace").strip().splitlines()


def one_error_line(completed: subprocess.CompletedProcess[bytes]) -> str:
    """The stderr of a failed run, asserted to be one line without a traceback."""
    errors = lines(completed.stderr)
    assert len(errors) == 1, errors
    assert errors[0].startswith("error: ")
    return errors[0]


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as cmdline:
            if text.encode() in cmdline.read():
                found.append(int(entry))
    return found


async def read_until(stream: ByteReceiveStream, marker: bytes, timeout: float = TIMEOUT) -> bytes:
    """Read ``stream`` until ``marker`` appears; return everything read so far."""
    seen = b""
    with anyio.fail_after(timeout):
        while marker not in seen:
            seen += await stream.receive()
    return seen


async def read_rest(stream: ByteReceiveStream | None) -> bytes:
    data = b""
    if stream is None:
        return data
    with anyio.fail_after(TIMEOUT), contextlib.suppress(anyio.EndOfStream):
        while True:
            data += await stream.receive()
    return data


@contextlib.asynccontextmanager
async def cli_process(*args: str) -> AsyncIterator[Process]:
    """A long-running CLI command; terminated (then killed) when the block ends."""
    process = await anyio.open_process(cli(*args), cwd=ROOT, env=child_env())
    try:
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(15):
                await process.wait()
        if process.returncode is None:
            process.kill()
        with anyio.fail_after(TIMEOUT):
            await process.aclose()


DEMO_TIMEOUT = 90
"""Bound on a whole demo run (it takes a few seconds; CI machines are slow)."""
