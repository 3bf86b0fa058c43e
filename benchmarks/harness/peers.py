"""Peer processes that report to the runner in JSON lines, started from its event loop.

A peer prints ``{"event": ...}`` lines on stdout (``ready`` once it serves, a result when
it has one) and logs to stderr, which goes to a file. Each runs in its own session, and
:class:`Peers` stops every one it started.
"""

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness.procs import PACKAGE_PARENT, child_env, tail


class PeerError(RuntimeError):
    """A peer process exited or stayed silent; the message ends with its log's tail."""


class Peer:
    """One peer process: JSON events on stdout, log on stderr."""

    def __init__(self, name: str, process: asyncio.subprocess.Process, log_path: Path) -> None:
        self.name = name
        self.process = process
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 15) -> str:
        return tail(self.log_path, lines)

    async def event(self, kind: str, timeout: float) -> dict[str, Any]:
        """The next ``{"event": kind, ...}`` line; PeerError on exit or after ``timeout``."""
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    line = await self.process.stdout.readline()
                    if not line:
                        await self.process.wait()
                        raise PeerError(
                            f"{self.name} exited with status {self.process.returncode} "
                            f"before {kind!r}:\n{self.log_tail()}"
                        )
                    with contextlib.suppress(ValueError):
                        data = json.loads(line)
                        if isinstance(data, dict) and data.get("event") == kind:
                            return data
        except TimeoutError:
            raise PeerError(
                f"{self.name}: no {kind!r} within {timeout:g} s:\n{self.log_tail()}"
            ) from None


class Peers:
    """Every peer process of the run, so that one ``stop_all`` in a ``finally`` ends them."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.running: list[Peer] = []

    async def start(
        self,
        name: str,
        args: list[str],
        *,
        cwd: Path = PACKAGE_PARENT,
        env: dict[str, str] | None = None,
        line_limit: int = 1 << 16,
    ) -> Peer:
        """Start ``args`` (``python -m benchmarks.X`` there, by default) as peer ``name``.

        ``line_limit`` bounds one event line (asyncio's default, 64 KiB, unless raised).
        """
        log_path = self.logdir / f"{name}.log"
        with log_path.open("ab") as log_file:
            process = await asyncio.create_subprocess_exec(
                *args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log_file,
                cwd=cwd,
                env=child_env() if env is None else env,
                start_new_session=True,  # Ctrl-C reaches the runner only; it stops us
                limit=line_limit,
            )
        peer = Peer(name, process, log_path)
        self.running.append(peer)
        return peer

    async def python(self, name: str, module: str, *args: str) -> Peer:
        """Start ``python -m module args`` (this interpreter)."""
        return await self.start(name, [sys.executable, "-m", module, *args])

    async def stop(self, peers: Iterable[Peer], grace: float = 10.0) -> None:
        """SIGTERM to all at once, SIGKILL to those still there after ``grace`` seconds."""
        peers = list(peers)
        for peer in peers:
            if peer.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    peer.process.send_signal(signal.SIGTERM)
        waits = [asyncio.ensure_future(p.process.wait()) for p in peers]
        if waits:
            _, pending = await asyncio.wait(waits, timeout=grace)
            for peer, waiting in zip(peers, waits, strict=True):
                if waiting in pending:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(peer.pid, signal.SIGKILL)
            if pending:
                await asyncio.wait(pending, timeout=5)
        for peer in peers:
            if peer in self.running and peer.process.returncode is not None:
                self.running.remove(peer)

    async def stop_all(self) -> None:
        await self.stop(list(self.running))

    def kill_remaining(self) -> None:
        """Last resort outside the event loop: SIGKILL whatever ``stop_all`` did not end."""
        for peer in self.running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(peer.pid, signal.SIGKILL)
        self.running.clear()
