"""How long a restarted tool process with a pinned id takes to serve again.

    python scripts/pinned_restart.py                # SIGKILL, then SIGSTOP; 3 runs each
    python scripts/pinned_restart.py --mode stop --runs 1

Each run starts its own mosquitto on a free loopback port, a ToolManager, and
``python -m tool_clients.slow --tool-id echo=pin-echo`` under a small supervisor that
starts it again 100 ms after it exits (a supervisor's default delay). Once the tool
serves, the holder is SIGKILLed (``kill``: its Last Will follows) or SIGSTOPped
(``stop``: frozen, no Will) and the supervisor starts a newcomer at once. The figure is
the time from the signal until a call to ``pin-echo`` succeeds, and how many times the
supervisor had to start the newcomer again meanwhile (each exit is a refused
registration). Progress goes to stderr, one line per run to stdout.
"""

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from argentic_tools import Messager, ToolManager, Topics

ROOT = Path(__file__).resolve().parent.parent
RESTART_DELAY = 0.1
"""A supervisor's default restart delay (supervisord, systemd's RestartSec=100ms)."""
BOUND = 120.0
"""Seconds a run may take before it counts as never serving again."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Supervisor:
    """Starts the tool process, and again RESTART_DELAY after each exit."""

    def __init__(self, url: str, prefix: str) -> None:
        self.args = [
            sys.executable,
            "-m",
            "tool_clients.slow",
            "--broker",
            url,
            "--topic-prefix",
            prefix,
            "--tool-id",
            "echo=pin-echo",
        ]
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the tool process now."""
        self.process = subprocess.Popen(  # noqa: S603
            self.args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.starts += 1

    def supervise(self) -> None:
        """From now on, start the process again RESTART_DELAY after each exit."""
        self._task = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            assert self.process is not None
            while self.process.poll() is None:  # noqa: ASYNC110 (polling a child process)
                await asyncio.sleep(0.01)
            await asyncio.sleep(RESTART_DELAY)
            self.start()

    async def close(self) -> None:
        """Stop supervising and kill the process."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


async def one_run(url: str, mode: str) -> tuple[float | None, int]:
    """One restart: seconds until a call succeeds again (None: never), and the restarts."""
    prefix = f"pin{os.getpid()}x{time.monotonic_ns() % 10**9}"
    topics = Topics.with_prefix(prefix)
    supervisor = Supervisor(url, prefix)
    async with (
        Messager(url, will_topic=None) as messager,
        ToolManager(messager, topics=topics) as manager,
    ):
        supervisor.start()
        try:
            await manager.wait_for_tool("pin-echo", timeout=30)
            assert (await manager.execute_tool("pin-echo", {"message": "x"}, timeout=5)).ok
            holder = supervisor.process
            assert holder is not None
            holder.send_signal(signal.SIGKILL if mode == "kill" else signal.SIGSTOP)
            signalled = time.monotonic()
            await asyncio.sleep(RESTART_DELAY)
            supervisor.start()
            supervisor.supervise()
            served: float | None = None
            while time.monotonic() - signalled < BOUND:
                result = await manager.execute_tool("pin-echo", {"message": "x"}, timeout=0.5)
                if result.ok:
                    served = time.monotonic() - signalled
                    break
                await asyncio.sleep(0.02)
            if mode == "stop":
                holder.kill()
                holder.wait(timeout=10)
            return served, supervisor.starts - 2
        finally:
            await supervisor.close()


def main() -> None:
    """Run the restarts and print one line per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["kill", "stop", "both"], default="both")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        config = Path(workdir) / "mosquitto.conf"
        config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
        broker = subprocess.Popen(  # noqa: S603
            [binary, "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            time.sleep(0.5)
            modes = ["kill", "stop"] if args.mode == "both" else [args.mode]
            for mode in modes:
                for run in range(args.runs):
                    served, restarts = asyncio.run(one_run(f"mqtt://127.0.0.1:{port}", mode))
                    shown = "never" if served is None else f"{served:.2f} s"
                    print(
                        f"{mode}: run {run + 1}: serves again after {shown}, "
                        f"{restarts} restart(s) of the newcomer",
                        flush=True,
                    )
        finally:
            broker.terminate()
            broker.wait(timeout=10)


if __name__ == "__main__":
    main()
