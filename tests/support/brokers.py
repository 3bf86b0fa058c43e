"""Spawn real brokers for tests and benchmarks: mosquitto on a free loopback port, or amqtt."""

import contextlib
import gc
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MOSQUITTO_CANDIDATES = ("mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")


def find_mosquitto() -> str | None:
    """Return the path of the mosquitto binary, or None when it is not installed."""
    for candidate in MOSQUITTO_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 10.0) -> None:
    """Block until something accepts TCP connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on 127.0.0.1:{port}") from None
            time.sleep(0.02)


MOSQUITTO_DEFAULTS = "max_queued_messages 1000\nmax_inflight_messages 20\n"
"""Mosquitto's own per-client limits (1,000 queued, 20 in flight, the rest dropped), which
the shipped mosquitto.conf does not change and the test brokers otherwise raise."""


@dataclass
class Mosquitto:
    """A mosquitto process on 127.0.0.1 that tests can stop, kill and restart on the same port."""

    binary: str
    port: int
    workdir: Path
    extra_config: str = ""
    anonymous: bool = True
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.workdir / "mosquitto.conf"

    def write_config(self) -> None:
        self.config_path.write_text(
            f"listener {self.port} 127.0.0.1\n"
            f"allow_anonymous {'true' if self.anonymous else 'false'}\n"
            "set_tcp_nodelay true\n"
            # As root, mosquitto would switch to its own user and lose access to files
            # (password files, certificates) in the test's private temporary directories.
            + ("user root\n" if os.geteuid() == 0 else "")
            + "max_queued_messages 100000\n"
            "max_inflight_messages 0\n"
            f"{self.extra_config}\n"
        )

    def start(self) -> None:
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("mosquitto is already running")
        self.write_config()
        log = (self.workdir / "mosquitto.log").open("ab")
        self.process = subprocess.Popen(
            [self.binary, "-c", str(self.config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
        )
        log.close()
        try:
            wait_for_port(self.port)
        except TimeoutError:
            self.stop()
            raise

    def stop(self) -> None:
        """Terminate the broker (SIGTERM, then SIGKILL) and wait for it to exit."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None

    def kill(self) -> None:
        """SIGKILL the broker: no clean shutdown, every client loses its connection at once."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def running_mosquitto(
    extra_config: str = "", port: int | None = None, *, anonymous: bool = True
) -> Iterator[Mosquitto]:
    """Start a private mosquitto on a free loopback port for the duration of the block."""
    binary = find_mosquitto()
    if binary is None:
        raise RuntimeError(
            "mosquitto is not installed; run `make test` (it installs Debian's mosquitto) "
            "or `apt-get install mosquitto`"
        )
    with tempfile.TemporaryDirectory(prefix="argentic-tools-mosquitto-") as tmp:
        broker = Mosquitto(binary, port or free_port(), Path(tmp), extra_config, anonymous)
        broker.start()
        try:
            yield broker
        finally:
            broker.stop()


def child_env() -> dict[str, str]:
    """Environment for tool subprocesses: unbuffered output, coverage picked up when active."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def uncovered_env() -> dict[str, str]:
    """:func:`child_env` without coverage, for process trees that measure nothing new.

    The soak and the benchmark start a dozen processes each, all running code the rest
    of the suite measures; coverage in each of them cost more than the tests themselves.
    """
    env = child_env()
    env.pop("COVERAGE_PROCESS_CONFIG", None)
    return env


class ThreadedEmbeddedBroker:
    """The embedded amqtt broker on its own event loop thread, shaped like :class:`Mosquitto`.

    Lets synchronous fixtures hand the same ``url``/``port`` to tests whichever broker runs.
    """

    def __init__(self) -> None:
        import asyncio
        import threading

        from argentic_tools._broker import EmbeddedBroker

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.broker = EmbeddedBroker()
        asyncio.run_coroutine_threadsafe(self.broker.start(), self._loop).result(timeout=30)
        self.port = self.broker.port

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def stop(self) -> None:
        import asyncio

        asyncio.run_coroutine_threadsafe(self.broker.stop(), self._loop).result(timeout=30)
        asyncio.run_coroutine_threadsafe(self._finish_leftovers(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        # amqtt does not close every accepted connection on shutdown; with the loop closed,
        # their finalizers would warn in whichever test runs the garbage collector next.
        # Collect them here, where they belong, and keep amqtt's leak out of other tests.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()

    async def _finish_leftovers(self) -> None:
        """Cancel what amqtt left running on this loop and let it close its connections."""
        import asyncio

        current = asyncio.current_task()
        leftovers = [t for t in asyncio.all_tasks() if t is not current]
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.wait(leftovers, timeout=10)
