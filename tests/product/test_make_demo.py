"""``make demo`` as a newcomer runs it: a fresh clone, no mosquitto, nothing installed.

The clone is of the committed ``HEAD`` (what CI and a newcomer get). mosquitto is
taken off ``PATH``, so the demo must bring its own broker; the environment the demo
creates must hold the library, its demo extras and the ``argentic-tools`` command, not
the dev toolchain. The demo then serves its tools until Ctrl-C, and the line it prints
reaches them from another terminal. A second run in the same clone, ``make demo
BROKER=... EXIT=1``, uses a running broker instead and exits after its agent.
"""

import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.support.brokers import free_port, running_mosquitto
from tests.support.cli import TIMEOUT, lines, read_rest

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 600
"""Bound on the cold run: it downloads and installs the demo's dependencies."""

# What a login shell would pass on; nothing of the test's own environment (its venv,
# coverage, pytest's variables, make's flags) leaks into the newcomer's run.
KEPT_VARIABLES = ("HOME", "LANG", "LC_ALL", "TMPDIR", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")


def path_without_mosquitto() -> str:
    """``PATH`` without the folders that hold a ``mosquitto`` binary."""
    kept = [
        folder
        for folder in os.environ["PATH"].split(os.pathsep)
        if folder and not (Path(folder) / "mosquitto").exists()
    ]
    path = os.pathsep.join(kept)
    assert shutil.which("mosquitto", path=path) is None
    assert shutil.which("make", path=path) and shutil.which("python3", path=path)
    return path


def newcomer_env(**extra: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
    return {**env, "PATH": path_without_mosquitto(), "TERM": "dumb", **extra}


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("newcomer") / "argentic-tools"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(where)], check=True, timeout=120)
    return where


def make_demo_command(*arguments: str) -> list[str]:
    dashboard = f"127.0.0.1:{free_port()}"
    return ["make", "--no-print-directory", "demo", f"DASHBOARD={dashboard}", *arguments]


def make_demo(clone: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        make_demo_command(*arguments),
        cwd=clone,
        env=newcomer_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
    )


def imports(clone: Path, module: str) -> bool:
    python = clone / ".venv" / "bin" / "python"
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([str(python), "-c", probe], timeout=60).returncode == 0


async def make_demo_until_ctrl_c(clone: Path) -> tuple[str, list[str], str]:
    """Run ``make demo`` until it stays up; run the line it prints; Ctrl-C it.

    Returns its output, the output of the printed line (run in the clone as printed),
    and its stderr. Ctrl-C goes to make's whole process group, as a terminal sends it.
    """
    marker = b"From another terminal:\n"
    async with await anyio.open_process(
        make_demo_command(),
        cwd=clone,
        env=newcomer_env(),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    ) as make:
        assert make.stdout is not None
        seen = b""
        try:
            with anyio.fail_after(INSTALL_TIMEOUT):
                while not seen.partition(marker)[2].endswith(b"\n"):
                    seen += await make.stdout.receive()
            command = lines(seen)[-1]
            with anyio.fail_after(TIMEOUT):
                listed = await anyio.run_process(
                    shlex.split(command), check=False, cwd=clone, env=newcomer_env()
                )
            assert listed.returncode == 0, listed.stderr
        finally:
            os.killpg(make.pid, signal.SIGINT)
            with anyio.fail_after(TIMEOUT):
                await make.wait()
        seen += await read_rest(make.stdout)
        errors = await read_rest(make.stderr)
    return seen.decode(), [command.strip(), *lines(listed.stdout)], errors.decode()


@pytest.mark.anyio
async def test_make_demo_in_a_fresh_clone_without_mosquitto(clone: Path) -> None:
    stdout, listed, stderr = await make_demo_until_ctrl_c(clone)
    output = stdout.splitlines()
    # One progress line for the install, then the demo itself on its embedded broker.
    assert output[0] == "Installing the demo's dependencies into .venv (once)...", output[:5]
    assert "argentic-tools demo" in output[1], output[:5]
    assert any(line.startswith("Broker: embedded") for line in output)
    assert any(line.startswith("Dashboard: http://127.0.0.1:") for line in output)
    assert "tool_offline" in stdout
    # It stays up, says how to reach its tools, and Ctrl-C ends it cleanly.
    assert any(line.startswith("The tools and the dashboard (http://") for line in output)
    assert output[-1].startswith("Demo finished in "), output[-3:]
    assert "warning" not in (stdout + stderr).lower()
    # The printed line, pasted in the clone: make installed the command it names.
    command, *table = listed
    assert command.startswith(".venv/bin/argentic-tools list --broker mqtt://127.0.0.1:")
    assert (clone / ".venv" / "bin" / "argentic-tools").is_file()
    assert any("calculate" in line for line in table), table
    # The demo's environment: the library's dependencies and the demo extras, no dev
    # toolchain.
    for module in ("aiomqtt", "amqtt", "rich", "starlette"):
        assert imports(clone, module), module
    for module in ("pytest", "mypy", "ruff"):
        assert not imports(clone, module), f"{module} was installed"
    assert not (clone / ".venv" / "bin" / "pytest").exists()


def test_make_demo_with_a_running_broker(clone: Path) -> None:
    # After the first test, or cold when it runs alone: the stamp makes either work. The
    # broker is the test's own: the demo uses the default topics.
    with running_mosquitto() as mosquitto:
        done = make_demo(clone, f"BROKER={mosquitto.url}", "EXIT=1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{mosquitto.url} (it answered)" in done.stdout
    assert "tool_offline" in done.stdout
