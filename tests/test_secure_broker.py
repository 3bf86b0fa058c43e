"""mosquitto-secure.conf and mosquitto.acl, enforced by a real mosquitto.

The broker runs the shipped configuration with only what cannot work in a test
rewritten: the listener moves to a free loopback port, the password file to
tmp_path, the ACL path to the repository's mosquitto.acl, and persistence is off.

Mosquitto never tells a client that a publish was denied: it acknowledges it and
drops it. It also accepts subscriptions to topics the user may not read and then
delivers nothing on them. Non-delivery is therefore shown by ordering: the denied
message goes first, an allowed marker second, and the marker must be the first and
only message to arrive.
"""

import os
import pwd
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import anyio
import pytest

from .brokers import find_mosquitto, free_port, wait_for_port

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parent.parent
SECURE_CONF = REPO / "mosquitto-secure.conf"
ACL = REPO / "mosquitto.acl"
TIMEOUT = 10

PASSWORDS = {
    "agent": "agent-secret",
    "calculator": "calculator-secret",
    "weather": "weather-secret",
}


def derive_config(port: int, password_file: Path) -> str:
    """The shipped secure configuration, rewritten to run inside a test."""
    replacements = {
        "listener 1883": f"listener {port} 127.0.0.1",
        "password_file": f"password_file {password_file}",
        "acl_file": f"acl_file {ACL}",
        "persistence true": "persistence false",
        "persistence_location": None,
    }
    seen: set[str] = set()
    lines = []
    for line in SECURE_CONF.read_text().splitlines():
        for start, replacement in replacements.items():
            if line == start or line.startswith(start + " "):
                seen.add(start)
                line = replacement
                break
        if line is not None:
            lines.append(line)
    # Fail loudly when the shipped file changes shape, instead of testing something else.
    assert seen == set(replacements), f"not found in {SECURE_CONF.name}: {set(replacements) - seen}"
    # Started as root, mosquitto switches to the `mosquitto` user before it reads the
    # password file, which that user cannot reach under tmp_path: stay who we are.
    lines.append(f"user {pwd.getpwuid(os.geteuid()).pw_name}")
    return "\n".join(lines) + "\n"


def write_password_file(path: Path) -> None:
    binary = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    create = ["-c"]
    for user, password in PASSWORDS.items():
        subprocess.run([binary, "-b", *create, str(path), user, password], check=True)
        create = []


@dataclass
class SecureBroker:
    port: int

    def client(self, user: str | None, password: str | None = None) -> aiomqtt.Client:
        if user is not None and password is None:
            password = PASSWORDS[user]
        return aiomqtt.Client(
            "127.0.0.1", self.port, username=user, password=password, timeout=TIMEOUT
        )


def wait_until_listening(process: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"mosquitto exited:\n{log_path.read_text()}")
        try:
            wait_for_port(port, timeout=0.1)
        except TimeoutError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"mosquitto does not listen:\n{log_path.read_text()}") from None
        else:
            return


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[SecureBroker]:
    binary = find_mosquitto()
    if binary is None:
        message = "mosquitto is not installed (run `make test`, which installs it)"
        if os.environ.get("ARGENTIC_TOOLS_REQUIRE_MOSQUITTO") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    password_file = tmp_path / "passwd"
    write_password_file(password_file)
    port = free_port()
    config = tmp_path / "mosquitto.conf"
    config.write_text(derive_config(port, password_file))
    log_path = tmp_path / "mosquitto.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [binary, "-c", str(config)], stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    try:
        wait_until_listening(process, port, log_path)
        yield SecureBroker(port)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
async def agent(secure_broker: SecureBroker) -> AsyncIterator[aiomqtt.Client]:
    """The ToolManager's connection, listening to registrations and results."""
    async with secure_broker.client("agent") as client:
        await client.subscribe("agent/tools/register", qos=1)
        await client.subscribe("agent/tools/response/#", qos=1)
        yield client


async def next_message(client: aiomqtt.Client) -> aiomqtt.Message:
    with anyio.fail_after(TIMEOUT):
        return await anext(client.messages)


def assert_only(
    client: aiomqtt.Client, message: aiomqtt.Message, topic: str, payload: bytes
) -> None:
    assert (message.topic.value, message.payload) == (topic, payload)
    assert len(client.messages) == 0, "more messages are waiting"


async def test_tool_response_reaches_the_agent(
    secure_broker: SecureBroker, agent: aiomqtt.Client
) -> None:
    async with secure_broker.client("calculator") as calculator:
        await calculator.publish("agent/tools/response/calculator", b"42", qos=1)

    message = await next_message(agent)
    assert_only(agent, message, "agent/tools/response/calculator", b"42")


async def test_the_whole_protocol_is_allowed(
    secure_broker: SecureBroker, agent: aiomqtt.Client
) -> None:
    async with secure_broker.client("calculator") as calculator:
        await calculator.subscribe("agent/tools/call/calculator", qos=1)
        await calculator.subscribe("agent/status/info", qos=1)

        await calculator.publish("agent/tools/register", b"register calculator", qos=1)
        assert (await next_message(agent)).payload == b"register calculator"

        await agent.publish("agent/status/info", b"registered calculator", qos=1)
        assert (await next_message(calculator)).payload == b"registered calculator"

        await agent.publish("agent/tools/call/calculator", b"task", qos=1)
        assert (await next_message(calculator)).payload == b"task"

        await calculator.publish("agent/tools/response/calculator", b"result", qos=1)
        message = await next_message(agent)

    # The agent reads the status topic it writes too; that copy is not asserted on.
    assert (message.topic.value, message.payload) == ("agent/tools/response/calculator", b"result")


async def test_a_tool_cannot_answer_for_another_tool(
    secure_broker: SecureBroker, agent: aiomqtt.Client
) -> None:
    async with secure_broker.client("calculator") as calculator:
        await calculator.publish("agent/tools/response/weather", b"forged", qos=1)
        await calculator.publish("agent/tools/response/calculator", b"marker", qos=1)

    message = await next_message(agent)
    assert_only(agent, message, "agent/tools/response/calculator", b"marker")


async def test_a_tool_cannot_call_another_tool(secure_broker: SecureBroker) -> None:
    async with (
        secure_broker.client("weather") as weather,
        secure_broker.client("calculator") as calculator,
        secure_broker.client("agent") as agent,
    ):
        await weather.subscribe("agent/tools/call/weather", qos=1)
        # The PUBACK means mosquitto has routed (here: dropped) the message, so
        # anything it queued for `weather` would come before the agent's marker.
        await calculator.publish("agent/tools/call/weather", b"forged task", qos=1)
        await agent.publish("agent/tools/call/weather", b"marker", qos=1)

        message = await next_message(weather)
        assert_only(weather, message, "agent/tools/call/weather", b"marker")


async def test_a_tool_cannot_read_another_tools_tasks(secure_broker: SecureBroker) -> None:
    async with (
        secure_broker.client("calculator") as calculator,
        secure_broker.client("agent") as agent,
    ):
        # Mosquitto 2.0 grants the subscription, then applies the read ACL on delivery.
        granted = await calculator.subscribe("agent/tools/#", qos=1)
        assert [code.value for code in granted] == [1]
        await agent.publish("agent/tools/call/weather", b"weather task", qos=1)
        await agent.publish("agent/tools/call/calculator", b"marker", qos=1)

        message = await next_message(calculator)
        assert_only(calculator, message, "agent/tools/call/calculator", b"marker")


@pytest.mark.parametrize(
    ("user", "password"),
    [("calculator", "wrong-password"), ("stranger", "calculator-secret"), (None, None)],
    ids=["wrong-password", "unknown-user", "anonymous"],
)
async def test_bad_credentials_are_refused(
    secure_broker: SecureBroker, user: str | None, password: str | None
) -> None:
    with pytest.raises(aiomqtt.MqttCodeError) as refused:
        async with secure_broker.client(user, password):
            pass
    assert "Not authorized" in str(refused.value)
