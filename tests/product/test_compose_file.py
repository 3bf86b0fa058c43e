"""docker-compose.yml, the Dockerfile and mosquitto.conf agree with the repository.

No Docker engine runs the stack here; these checks catch the mistakes that would
only show up at `docker compose up`: a command naming a module that does not exist,
a mounted file that is missing, a broker that is not reachable from the other
containers. The tool commands themselves are tested in tests/product/tool_clients.
"""

import contextlib
import os
import pwd
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import anyio
import pytest
import yaml

from tests.support.brokers import free_port, wait_for_port
from tests.support.requirements import require_mosquitto

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
MOSQUITTO_CONF = REPO / "mosquitto.conf"
TOOL_CLIENTS = sorted(path.stem for path in (REPO / "tool_clients").glob("[!_]*.py"))
MODULE_COMMAND = re.compile(r"python -m tool_clients\.(\w+)")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = compose["services"]
    assert isinstance(found, dict)
    return found


def command_line(service: dict[str, Any]) -> str:
    command = service.get("command", "")
    return shlex.join(command) if isinstance(command, list) else str(command)


def tool_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in services.items() if name != "mosquitto"}


def bind_mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> host path of the service's ./relative bind mounts."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target, *_ = volume.split(":")
        if source.startswith("."):
            mounts[target] = source
    return mounts


def test_every_service_has_an_image_or_a_build(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        assert "image" in service or "build" in service, name


def test_every_tool_client_has_a_service(services: dict[str, dict[str, Any]]) -> None:
    assert TOOL_CLIENTS, "no tool client modules found"
    commands = {name: command_line(svc) for name, svc in tool_services(services).items()}
    assert sorted(commands) == TOOL_CLIENTS
    for name, command in commands.items():
        assert f"python -m tool_clients.{name} " in command + " ", (name, command)


def test_every_command_names_an_existing_module(services: dict[str, dict[str, Any]]) -> None:
    seen = 0
    for name, service in services.items():
        for module in MODULE_COMMAND.findall(command_line(service)):
            assert (REPO / "tool_clients" / f"{module}.py").is_file(), (name, module)
            seen += 1
    assert seen == len(TOOL_CLIENTS)


def test_tools_reach_the_broker_service(services: dict[str, dict[str, Any]]) -> None:
    for name, service in tool_services(services).items():
        assert "--broker mqtt://mosquitto:1883" in command_line(service), name
        depends_on = service.get("depends_on", [])
        assert "mosquitto" in depends_on, name


def test_tool_image_is_built_from_the_repository(services: dict[str, dict[str, Any]]) -> None:
    for name, service in tool_services(services).items():
        build = service["build"]
        context = build if isinstance(build, str) else build.get("context", ".")
        assert (REPO / context).resolve() == REPO, name
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.MULTILINE)
    assert re.search(r"^RUN pip install '?\.\[cli\]'?", dockerfile, re.MULTILINE)
    # Every file the Dockerfile copies must exist, or the build fails.
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), source


def test_files_tool_keeps_its_sandbox_in_a_volume(compose: dict[str, Any]) -> None:
    files = compose["services"]["files"]
    assert "--root /data" in command_line(files)
    volumes = [volume.split(":") for volume in files["volumes"]]
    named = [source for source, target, *_ in volumes if target == "/data"]
    assert named, "nothing is mounted on /data"
    assert named[0] in compose.get("volumes", {}), "the /data volume is not declared"


def test_broker_service_uses_the_repository_config(services: dict[str, dict[str, Any]]) -> None:
    mosquitto = services["mosquitto"]
    assert mosquitto["image"].startswith("eclipse-mosquitto:2")
    assert "1883:1883" in [str(port) for port in mosquitto["ports"]]
    mounts = bind_mounts(mosquitto)
    source = mounts.get("/mosquitto/config/mosquitto.conf")
    assert source is not None, "mosquitto.conf is not mounted"
    for target, host_path in mounts.items():
        assert (REPO / host_path).is_file(), f"{host_path} (mounted on {target}) does not exist"
    assert (REPO / source).resolve() == MOSQUITTO_CONF


def test_mounted_config_listens_for_other_containers() -> None:
    config = MOSQUITTO_CONF.read_text()
    # No bind address: other containers connect over the compose network.
    assert re.search(r"^listener 1883\s*$", config, re.MULTILINE)
    assert re.search(r"^set_tcp_nodelay true\s*$", config, re.MULTILINE)
    assert re.search(r"^allow_anonymous true\s*$", config, re.MULTILINE)


@contextlib.contextmanager
def shipped_mosquitto(tmp_path: Path) -> Iterator[tuple[int, list[str]]]:
    """Mosquitto on the repository's mosquitto.conf: its port, and its log once it stopped.

    Only what cannot work here changes: loopback and a free port instead of every
    interface on 1883, and a data directory the test may write.
    """
    binary = require_mosquitto()
    port = free_port()
    config = re.sub(
        r"^listener 1883\s*$",
        f"listener {port} 127.0.0.1",
        MOSQUITTO_CONF.read_text(),
        flags=re.MULTILINE,
    )
    config = re.sub(
        r"^persistence_location .*$",
        f"persistence_location {tmp_path}/",
        config,
        flags=re.MULTILINE,
    )
    assert f"listener {port} 127.0.0.1" in config
    config_path = tmp_path / "mosquitto.conf"
    # Started as root, mosquitto would switch to the `mosquitto` user, which cannot
    # write under tmp_path: stay who we are.
    config_path.write_text(f"{config}\nuser {pwd.getpwuid(os.geteuid()).pw_name}\n")
    process = subprocess.Popen(
        [binary, "-c", str(config_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    log: list[str] = []
    try:
        deadline = time.monotonic() + 10
        while process.poll() is None:
            try:
                wait_for_port(port, timeout=0.1)
                break
            except TimeoutError:
                assert time.monotonic() < deadline, "mosquitto does not listen"
        assert process.poll() is None, process.communicate()[0].decode()
        yield port, log
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
        log.append(output.decode())


def test_mosquitto_accepts_the_config(tmp_path: Path) -> None:
    """Mosquitto exits on any unknown or malformed option, so starting it is the check."""
    with shipped_mosquitto(tmp_path) as (_, output):
        pass
    log = output[0]
    assert "Error" not in log, log
    assert (tmp_path / "mosquitto.db").is_file(), log


async def publish_oversized(port: int) -> None:
    """Publish 4 MiB at QoS 1: no PUBACK comes (the broker drops the client), so it fails."""
    # aiomqtt notices the lost connection only when its own timeout runs out: keep it short.
    with anyio.fail_after(10):
        async with aiomqtt.Client("127.0.0.1", port, timeout=1) as publisher:
            await publisher.publish("big/one", b"x" * (4 * 1024 * 1024), qos=1)


@pytest.mark.anyio
async def test_the_shipped_config_refuses_an_oversized_message_before_anyone_receives_it(
    tmp_path: Path,
) -> None:
    """A peer cannot make every subscriber buffer a huge payload: the broker drops it."""
    with shipped_mosquitto(tmp_path) as (port, log):
        received: list[int] = []
        async with aiomqtt.Client("127.0.0.1", port) as subscriber:
            await subscriber.subscribe("big/#", qos=1)
            with pytest.raises(aiomqtt.MqttError):
                await publish_oversized(port)
            # A payload the library accepts (1 MiB) still goes through, and is the first.
            async with aiomqtt.Client("127.0.0.1", port) as publisher:
                await publisher.publish("big/ok", b"y" * (1024 * 1024), qos=1)
            with anyio.fail_after(10):
                async for message in subscriber.messages:
                    received.append(len(bytes(message.payload)))
                    break
    assert received == [1024 * 1024]
    assert "disconnected due to oversize packet" in log[0], log[0]
