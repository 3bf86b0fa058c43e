"""Child processes of a benchmark run: started in their own session, always stopped."""

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness.broker import wait_for_port

PACKAGE_PARENT = Path(__file__).resolve().parents[2]
"""Directory holding the ``benchmarks`` package: children run ``python -m benchmarks.X`` there."""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p
    )
    return env


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of the log at ``path`` ("" when there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Child:
    """One child process; its stdout+stderr go to a log file shown when it fails."""

    def __init__(self, name: str, args: list[str], logdir: Path) -> None:
        self.name = name
        self.args = args
        self.log_path = logdir / f"{name}.log"
        self.started_at = 0.0
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Child":
        with self.log_path.open("ab") as log:
            self.started_at = time.perf_counter()
            self.process = subprocess.Popen(
                self.args,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=PACKAGE_PARENT,
                env=child_env(),
                start_new_session=True,  # Ctrl-C reaches the runner only; it stops us
            )
        return self

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        return tail(self.log_path, lines)

    def wait_listening(self, port: int, timeout: float) -> None:
        """Return once the child listens on 127.0.0.1:``port`` (BrokerError if it does not)."""
        assert self.process is not None
        wait_for_port(port, self.process, timeout, self.name)

    async def wait_for_output(self, text: str, timeout: float) -> None:
        """Return once ``text`` is in the child's log; RuntimeError if it exits first."""
        async with asyncio.timeout(timeout):
            while text not in self.log_path.read_text(errors="replace"):
                if not self.alive():
                    raise RuntimeError(f"{self.name} exited:\n{self.log_tail()}")
                await asyncio.sleep(0.05)

    def finish(self, timeout: float) -> None:
        """Wait for the child to exit; RuntimeError, with its log, unless it exits with 0."""
        assert self.process is not None
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{self.name} did not finish within {timeout:g} s") from None
        if status != 0:
            raise RuntimeError(f"{self.name} exited with status {status}:\n{self.log_tail()}")

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; waits for the exit."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        self.process = None


class Children:
    """Every child of the run, so that one ``stop_all`` in a ``finally`` ends them all.

    Their logs go to a temporary directory, removed by :meth:`cleanup`; as a context
    manager it cleans up on exit.
    """

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="argentic-tools-bench-logs-")
        self.logdir = Path(self._tmp.name)
        self._children: list[Child] = []

    def __enter__(self) -> "Children":
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def start(self, name: str, args: list[str]) -> Child:
        """Start ``args`` in the directory holding ``benchmarks``."""
        child = Child(name, args, self.logdir)
        self._children.append(child)
        return child.start()

    def python(self, name: str, module: str, *args: str) -> Child:
        """Start ``python -m module args`` (this interpreter)."""
        return self.start(name, [sys.executable, "-m", module, *args])

    def stop(self, child: Child, grace: float = 5.0) -> None:
        child.stop(grace)
        if child in self._children:
            self._children.remove(child)

    def stop_all(self) -> None:
        # SIGTERM to all first so that they shut down in parallel, then wait for each.
        for child in self._children:
            if child.alive():
                assert child.process is not None
                child.process.send_signal(signal.SIGTERM)
        for child in reversed(self._children):
            child.stop()
        self._children.clear()

    def cleanup(self) -> None:
        self.stop_all()
        self._tmp.cleanup()
