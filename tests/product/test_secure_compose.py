"""docker-compose.secure.yml, followed step by step with a real mosquitto.

No Docker engine runs here, so the test does what compose would do, with only the
container paths and the broker address mapped to this machine:

1. ``scripts/secure-broker.sh new-env`` makes the passwords (.env.secure);
2. the broker service's own command writes the password file and starts mosquitto
   with mosquitto-secure.conf and mosquitto.acl; run as root, mosquitto becomes the
   `mosquitto` user before it reads the file, as in the image;
3. the service's health check, as compose runs it, passes with the password and
   fails without it;
4. every tool service's command and environment, compose variables filled in from
   .env.secure, registers its tools, and a manager logged in as `agent` calls each.
"""

import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from argentic_tools import Messager, TaskResultMessage, ToolManager
from tests.support.brokers import find_mosquitto, free_port, uncovered_env
from tests.support.requirements import require_mosquitto
from tests.support.secure_broker import (
    CALLS,
    derive_config,
    stop_process,
    stop_processes,
    wait_until_listening,
)

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
SECURE_COMPOSE = REPO / "docker-compose.secure.yml"
SCRIPT = REPO / "scripts" / "secure-broker.sh"
ACL = REPO / "mosquitto.acl"
TIMEOUT = 10
STARTUP = 30
"""Seconds the tool processes get to start and register (cold imports, a busy machine)."""

# ${NAME}, ${NAME:?message} and $$ (a literal $): the forms the file uses.
COMPOSE_VARIABLE = re.compile(r"\$(?:\$|\{(\w+)(?::\?[^}]*)?\})")


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """``value`` with compose's variable substitution applied to every string in it."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        assert env.get(name), f"{name} is not in .env.secure"
        return env[name]

    return COMPOSE_VARIABLE.sub(substitute, value)


def new_env() -> dict[str, str]:
    """The passwords `scripts/secure-broker.sh new-env` prints, as compose reads them."""
    output = subprocess.run(
        ["sh", str(SCRIPT), "new-env", str(ACL)],
        check=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    ).stdout
    env = dict(line.split("=", 1) for line in output.splitlines())
    return env


@dataclass
class Stack:
    port: int
    env: dict[str, str]
    services: dict[str, dict[str, Any]]
    password_file: Path


def broker_argv(command: list[str], paths: dict[str, str]) -> list[str]:
    """The broker service's command with its container paths mapped to this machine."""
    mosquitto = find_mosquitto()
    assert mosquitto is not None
    argv = [paths.get(arg, arg) for arg in command]
    assert argv[0] == "sh" and "mosquitto" in argv, argv
    argv[argv.index("mosquitto")] = mosquitto
    unmapped = [arg for arg in argv if arg.startswith("/mosquitto/")]
    assert not unmapped, f"no mapping for {unmapped}"
    return argv


@pytest.fixture
def stack() -> Iterator[Stack]:
    require_mosquitto()
    env = new_env()
    services = interpolate(yaml.safe_load(SECURE_COMPOSE.read_text())["services"], env)
    as_root = os.geteuid() == 0
    # A folder the `mosquitto` user can enter (pytest's own are private to root).
    workdir = Path(tempfile.mkdtemp(prefix="argentic-secure-compose-"))
    workdir.chmod(0o711)
    try:
        port = free_port()
        password_file = workdir / "passwd"
        config = workdir / "mosquitto.conf"
        config.write_text(derive_config(port, password_file, stay_who_we_are=not as_root))
        config.chmod(0o644)
        paths = {
            "/mosquitto/setup/secure-broker.sh": str(SCRIPT),
            "/mosquitto/config/mosquitto.acl": str(ACL),
            "/mosquitto/config/passwd": str(password_file),
            "/mosquitto/config/mosquitto.conf": str(config),
        }
        broker = services["mosquitto"]
        assert broker["env_file"] == ".env.secure"
        log_path = workdir / "mosquitto.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                broker_argv(broker["command"], paths),
                env={"PATH": os.environ["PATH"], **env},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_until_listening(process, port, log_path)
            yield Stack(port, env, services, password_file)
        finally:
            stop_process(process)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def health_check(stack: Stack, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the broker service's health check as compose does, against the test's port."""
    kind, command = stack.services["mosquitto"]["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    assert "-h 127.0.0.1 " in command
    command = command.replace("-h 127.0.0.1 ", f"-h 127.0.0.1 -p {stack.port} ")
    return subprocess.run(
        ["sh", "-c", command],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_new_env_gives_every_acl_user_a_password() -> None:
    users = re.findall(r"^user (\S+)$", ACL.read_text(), re.MULTILINE)
    env = new_env()
    assert sorted(env) == sorted(f"{user.upper()}_PASSWORD" for user in users)
    assert "HEALTH_PASSWORD" in env and "AGENT_PASSWORD" in env
    for password in env.values():
        assert re.fullmatch(r"[0-9a-f]{32}", password), password
    assert len(set(env.values())) == len(env)


def test_the_broker_refuses_to_start_without_every_password(tmp_path: Path) -> None:
    env = new_env()
    del env["CLOCK_PASSWORD"]
    done = subprocess.run(
        ["sh", str(SCRIPT), "start", str(ACL), str(tmp_path / "passwd"), "true"],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 1
    assert "not set: CLOCK_PASSWORD" in done.stderr
    assert not (tmp_path / "passwd").exists()


def test_the_password_file_is_private_and_readable_by_the_broker(stack: Stack) -> None:
    mode = stack.password_file.stat()
    assert stat.S_IMODE(mode.st_mode) == 0o600
    if os.geteuid() == 0:
        assert pwd.getpwuid(mode.st_uid).pw_name == "mosquitto"
    # The broker runs on it: the health user logs in below.
    assert health_check(stack, stack.env).returncode == 0


def test_the_health_check_authenticates(stack: Stack) -> None:
    done = health_check(stack, stack.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("seconds"), done.stdout
    wrong = health_check(stack, {**stack.env, "HEALTH_PASSWORD": "not-the-password"})
    assert wrong.returncode != 0
    # The agent's password does not open the health user's door either.
    other = health_check(stack, {**stack.env, "HEALTH_PASSWORD": stack.env["AGENT_PASSWORD"]})
    assert other.returncode != 0


def test_the_secure_fleet_is_the_plain_fleet() -> None:
    plain = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    secure = yaml.safe_load(SECURE_COMPOSE.read_text())["services"]
    assert sorted(secure) == sorted(plain)
    for name, service in secure.items():
        if name != "mosquitto":
            assert service["depends_on"]["mosquitto"]["condition"] == "service_healthy", name
            assert "--broker" not in service["command"], name


@pytest.fixture
def tool_services(stack: Stack, tmp_path: Path) -> Iterator[None]:
    """Every tool service, run as compose would run it, against the test's broker."""
    sandbox = tmp_path / "sandbox"
    with ExitStack() as processes:
        started: list[subprocess.Popen[bytes]] = []
        processes.callback(stop_processes, started)  # all at once, after the last is started
        for name, service in stack.services.items():
            if name == "mosquitto":
                continue
            argv = [str(sandbox) if arg == "/data" else arg for arg in service["command"]]
            assert argv[:2] == ["python", "-m"], argv
            broker = service["environment"]["ARGENTIC_TOOLS_BROKER"]
            assert broker.endswith("@mosquitto:1883"), broker
            environment = {
                **service["environment"],
                "ARGENTIC_TOOLS_BROKER": broker.replace(
                    "@mosquitto:1883", f"@127.0.0.1:{stack.port}"
                ),
            }
            log = processes.enter_context((tmp_path / f"{name}.log").open("wb"))
            process = subprocess.Popen(
                [sys.executable, *argv[1:]],
                cwd=REPO,
                env={**uncovered_env(), **environment},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            started.append(process)
        yield


@pytest.mark.usefixtures("tool_services")
async def test_every_tool_service_registers_and_answers(stack: Stack) -> None:
    url = f"mqtt://agent:{stack.env['AGENT_PASSWORD']}@127.0.0.1:{stack.port}"
    # The ACL does not let the agent write a Last Will on the registration topic.
    async with Messager(url, will_topic=None) as messager, ToolManager(messager) as manager:
        for tool_id, _ in CALLS:  # six processes starting cold on a busy machine
            await manager.wait_for_tool(tool_id, timeout=STARTUP)
        for tool_id, arguments in CALLS:
            with anyio.fail_after(TIMEOUT * 2):
                result = await manager.execute_tool(tool_id, arguments, timeout=TIMEOUT)
            assert isinstance(result, TaskResultMessage), result
            assert result.tool_id == tool_id
    # The command line as docs/security.md shows it: credentials in the environment.
    with anyio.fail_after(STARTUP * 2):
        listed = await anyio.run_process(
            [
                str(Path(sys.executable).parent / "argentic-tools"),
                *("list", "--json", "--wait", str(STARTUP)),
                *(f"--expect={tool_id}" for tool_id, _ in CALLS),
            ],
            env={**uncovered_env(), "ARGENTIC_TOOLS_BROKER": url},
            check=False,
        )
    assert listed.returncode == 0, listed.stderr.decode()
    assert sorted(row["id"] for row in json.loads(listed.stdout)) == sorted(
        tool_id for tool_id, _ in CALLS
    )


def test_new_env_prints_nothing_for_an_acl_it_cannot_use(tmp_path: Path) -> None:
    bad = tmp_path / "bad.acl"
    bad.write_text("user 1tool\n")  # no variable name starts with a digit
    for acl in (bad, tmp_path / "missing.acl"):
        done = subprocess.run(
            ["sh", str(SCRIPT), "new-env", str(acl)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.returncode == 1, acl
        assert done.stdout == "", acl  # > .env.secure keeps nothing half-written
        assert done.stderr.strip(), acl
