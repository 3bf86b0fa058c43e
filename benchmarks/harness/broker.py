"""A private mosquitto on 127.0.0.1 for one benchmark run (self-contained: no test helpers)."""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

MOSQUITTO_CANDIDATES = ("mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")


class BrokerError(RuntimeError):
    """The broker cannot be started (missing binary, port in use, early exit)."""


def find_mosquitto(explicit: str | None = None) -> str | None:
    """Path of the mosquitto binary (``explicit`` first), or None when there is none."""
    for candidate in (explicit,) if explicit else MOSQUITTO_CANDIDATES:
        found = shutil.which(candidate) if candidate else None
        if found:
            return found
    return None


def mosquitto_version(binary: str) -> str:
    """``2.0.11`` from ``mosquitto -h`` (which exits non-zero by design)."""
    try:
        out = subprocess.run(
            [binary, "-h"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r"mosquitto version (\S+)", out)
    return match.group(1) if match else "unknown"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    """True when something already listens on (or holds) 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def wait_for_port(
    port: int, process: subprocess.Popen[bytes], timeout: float, name: str = "mosquitto"
) -> None:
    """Return once ``process`` listens on 127.0.0.1:``port``; BrokerError if it exits or not."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise BrokerError(f"{name} exited with status {process.returncode} at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise BrokerError(f"{name} does not listen on 127.0.0.1:{port}") from None
            time.sleep(0.02)


Config = Callable[[int, Path], str]
"""The text of a ``mosquitto.conf`` for a port and the broker's own temporary directory."""

TUNED = """\
listener {port} 127.0.0.1
allow_anonymous true
set_tcp_nodelay true
max_inflight_messages 0
max_queued_messages 1000000
persistence false
log_dest stdout
log_type error
log_type warning
{user}"""


def tuned_config(port: int, workdir: Path) -> str:
    """The benchmarks' broker: Nagle off, no per-client limits, errors and warnings logged."""
    # As root, mosquitto would drop to user "mosquitto" (or "nobody"): keep it as the run is.
    return TUNED.format(port=port, user="user root\n" if os.geteuid() == 0 else "")


class Mosquitto:
    """One mosquitto process on 127.0.0.1:``port`` (a free one by default).

    Its configuration is ``config(port, workdir)`` followed by ``extra_config``; it runs
    in ``workdir``, a temporary directory of its own, and its output (``log_dest
    stdout``) goes to ``mosquitto.log`` there, which :meth:`log` reads, also once it stopped.
    As a context manager it is started on entry and stopped on exit.
    """

    def __init__(
        self,
        binary: str,
        port: int | None = None,
        extra_config: str = "",
        *,
        config: Config = tuned_config,
    ) -> None:
        self.binary = binary
        self.port = port or free_port()
        self._tmp = tempfile.TemporaryDirectory(prefix="argentic-tools-bench-")
        self.workdir = Path(self._tmp.name)
        self.config = config(self.port, self.workdir) + extra_config
        self.process: subprocess.Popen[bytes] | None = None
        self._log = ""

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def __enter__(self) -> "Mosquitto":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start mosquitto (again, after :meth:`kill`) and wait until it listens.

        BrokerError, with the end of its log, when it exits or does not listen in 10 s.
        """
        path = self.workdir / "mosquitto.conf"
        path.write_text(self.config)
        with (self.workdir / "mosquitto.log").open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "-c", str(path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,  # Ctrl-C reaches the runner only; it stops us
            )
        try:
            wait_for_port(self.port, self.process, timeout=10)
        except BrokerError as exc:
            self.stop()
            raise BrokerError(f"{exc}\n{self.log_tail()}") from None
        except BaseException:
            self.stop()
            raise

    def log(self) -> str:
        """Everything mosquitto wrote so far (kept once it has stopped)."""
        try:
            return (self.workdir / "mosquitto.log").read_text(errors="replace")
        except OSError:
            return self._log

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL, as a crash would end it: clients lose their connection without a word."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=5)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s; keeps the log, removes the temporary directory."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        self._log = self.log()
        self._tmp.cleanup()
