"""A real terminal for the command line's interactive parts: a private tmux server.

``top``'s live view and ``call``'s questions to the person at the terminal run in a tmux
pane; the tests type keys into it and read its screen.
"""

import contextlib
import shlex
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.support.brokers import child_env

from .processes import ROOT

needs_tmux = pytest.mark.usefixtures("tmux_installed")
"""The command line's interactive parts are tested on a tmux terminal (``make test``
installs tmux; without it the test is skipped, or fails in CI: tests/support/requirements)."""


class Tmux:
    """A private tmux server (no user config) running one command.

    Its socket lives in ``directory``, a temporary one: tmux leaves the socket file
    behind when its server is killed. With ``scrollback``, :meth:`screen` is the whole
    output so far (lines that scrolled away included, wrapped lines joined), for a command
    that prints line after line; without, what the pane shows now (a live view).
    """

    def __init__(self, command: list[str], directory: Path, *, scrollback: bool = False) -> None:
        self.name = f"term{uuid.uuid4().hex[:10]}"
        self.scrollback = scrollback
        self.socket = directory / "tmux"
        self.status_file = directory / "status"
        self.command = command

    async def tmux(self, *args: str) -> str:
        # COLUMNS and LINES (pytest-xdist's workers have them) would override the pane's size.
        env = {k: v for k, v in child_env().items() if k not in ("COLUMNS", "LINES")}
        completed = await anyio.run_process(
            ["tmux", "-S", str(self.socket), "-f", "/dev/null", *args], env=env, check=True
        )
        return completed.stdout.decode(errors="replace")

    async def start(self) -> None:
        await self.tmux(
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            "120",
            "-y",
            "30",
            "-c",
            str(ROOT),
            # The pane's shell records the exit status (tmux's pane_dead_status was found
            # empty at times on a busy machine), then keeps the pane for the last screen.
            f"{shlex.join(self.command)}; echo $? > {shlex.quote(str(self.status_file))}; sleep 60",
        )

    async def screen(self) -> str:
        history = ("-J", "-S", "-1000") if self.scrollback else ()
        return await self.tmux("capture-pane", "-p", *history, "-t", self.name)

    async def keys(self, *keys: str) -> None:
        """Type ``keys`` (tmux key names: ``Enter``, ``C-c``; other text as it is)."""
        await self.tmux("send-keys", "-t", self.name, *keys)

    async def line(self, text: str) -> None:
        """Type ``text`` and Enter."""
        if text:
            await self.tmux("send-keys", "-t", self.name, "-l", text)
        await self.keys("Enter")

    async def wait_for(self, *texts: str, timeout: float = 20) -> str:
        """The screen once it shows every one of ``texts`` (polled: a screen sends no events)."""
        screen = ""
        with anyio.move_on_after(timeout):
            while True:
                screen = await self.screen()
                if all(text in screen for text in texts):
                    return screen
                await anyio.sleep(0.2)
        raise AssertionError(f"not on the screen after {timeout:g} s: {texts}\n{screen}")

    async def exit_status(self, timeout: float = 20) -> int:
        """The command's exit status, once it has ended."""
        status = anyio.Path(self.status_file)
        with anyio.move_on_after(timeout):
            while True:
                if await status.exists():
                    text = (await status.read_text()).strip()
                    if text:
                        return int(text)
                await anyio.sleep(0.2)
        raise AssertionError(f"still running after {timeout:g} s\n{await self.screen()}")

    async def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            await self.tmux("kill-server")


@contextlib.asynccontextmanager
async def on_a_terminal(command: list[str], *, scrollback: bool = False) -> AsyncIterator[Tmux]:
    """``command`` running in a tmux pane of 120 x 30; the server is killed afterwards."""
    # A short path: a Unix socket's path may not be much longer than 100 bytes.
    with tempfile.TemporaryDirectory(prefix="term-") as directory:
        session = Tmux(command, Path(directory), scrollback=scrollback)
        await session.start()
        try:
            yield session
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(10):
                await session.stop()
