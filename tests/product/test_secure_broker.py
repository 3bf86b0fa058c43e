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

import shlex
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import anyio
import pytest

from argentic_tools import Messager, TaskResultMessage, ToolManager
from tests.support.brokers import free_port, uncovered_env
from tests.support.clients import CONFIRM
from tests.support.requirements import require_mosquitto
from tests.support.secure_broker import (
    ACL,
    CALLS,
    derive_config,
    stop_processes,
    wait_until_listening,
    write_tenant_acl,
)

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 10
STARTUP = 30
"""Seconds the tool processes get to start and register (cold imports, a busy machine)."""

PASSWORDS = {
    user: f"{user}-secret"
    for user in (
        "agent",
        "calculator",
        "units",
        "weather",
        "files",
        "clock",
        "slow",
        "alice",
        "bob",
    )
}


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


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[SecureBroker]:
    with running_secure_broker(tmp_path, ACL) as broker:
        yield broker


@pytest.fixture
def tenant_broker(tmp_path: Path) -> Iterator[SecureBroker]:
    """The shipped configuration with the tenants' blocks of docs/security.md."""
    with running_secure_broker(tmp_path, write_tenant_acl(tmp_path / "tenants.acl")) as broker:
        yield broker


@contextmanager
def running_secure_broker(tmp_path: Path, acl: Path) -> Iterator[SecureBroker]:
    binary = require_mosquitto()
    password_file = tmp_path / "passwd"
    write_password_file(password_file)
    port = free_port()
    config = tmp_path / "mosquitto.conf"
    config.write_text(derive_config(port, password_file, acl=acl))
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
        await client.subscribe("agent/tools/register/#", qos=1)
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

        await calculator.publish(
            "agent/tools/register/calculator/calc-1", b"register calculator", qos=1
        )
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
        assert [code if isinstance(code, int) else code.value for code in granted] == [1]
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


def read_acl() -> dict[str, set[tuple[str, str]]]:
    """User name -> {(access, topic)} from mosquitto.acl."""
    rules: dict[str, set[tuple[str, str]]] = {}
    user = None
    for raw in ACL.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[0] == "pattern":
            assert len(words) == 3, line
            rules.setdefault("*", set()).add((words[1], words[2]))
            continue
        if words[0] == "user":
            user = words[1]
            assert user not in rules, f"user {user} appears twice"
            rules[user] = set()
        else:
            assert words[0] == "topic" and len(words) == 3, line
            assert user is not None, f"rule outside a user block: {line}"
            rules[user].add((words[1], words[2]))
    return rules


def test_acl_gives_each_tool_only_its_own_topics() -> None:
    rules = read_acl()
    # Every user writes registrations only under its own name, and reads only its own
    # confirmations.
    assert rules.pop("*") == {
        ("write", "agent/tools/register/%u/#"),
        ("read", "agent/status/info/%c"),
    }
    assert rules.pop("health") == {("read", "$SYS/broker/uptime")}
    assert rules.pop("agent") == {
        ("write", "agent/tools/call/#"),
        ("read", "agent/tools/register/#"),
        ("read", "agent/tools/response/#"),
        ("readwrite", "agent/status/info/#"),
    }
    tool_clients = sorted(path.stem for path in (REPO / "tool_clients").glob("[!_]*.py"))
    assert sorted(rules) == tool_clients
    for user, granted in rules.items():
        shared = {("read", "agent/status/info")}
        assert shared <= granted, user
        own = granted - shared
        calls: set[str] = set()
        answers: set[str] = set()
        for access, topic in own:
            # A tool reads its tasks from the agent and from each tenant below its call
            # topic, and answers on its response topic and each caller's reply topic.
            topic = topic.removesuffix("/#")
            level, _, tool_id = topic.rpartition("/")
            assert (access, level) in {
                ("read", "agent/tools/call"),
                ("write", "agent/tools/response"),
            }, f"{user} may {access} {topic}"
            assert tool_id and not set(tool_id) & {"+", "#"}, (user, topic)
            (calls if access == "read" else answers).add(tool_id)
        assert calls, user
        assert calls == answers, user
        for tool_id in calls:
            assert tool_id == user or tool_id.startswith(f"{user}."), (user, tool_id)


def documented_commands() -> dict[str, list[str]]:
    """User name -> the tool client command written above its block in mosquitto.acl."""
    commands = {}
    comment: list[str] = []
    for line in ACL.read_text().splitlines():
        if line.startswith("#"):
            comment.append(line.removeprefix("#").strip())
            continue
        if line.startswith("user ") and line not in ("user agent", "user health"):
            text = " ".join(comment).replace("\\ ", "")
            assert "python -m " in text, f"no command above {line!r}"
            commands[line.split()[1]] = shlex.split(text[text.index("python -m ") :])
        comment = []
    return commands


@pytest.fixture
def documented_tools(secure_broker: SecureBroker, tmp_path: Path) -> Iterator[None]:
    """Every tool client, started with the command mosquitto.acl documents for it."""
    with ExitStack() as stack:
        started: list[subprocess.Popen[bytes]] = []
        stack.callback(stop_processes, started)  # all at once, after the last is started
        for user, command in documented_commands().items():
            argv = [
                arg.replace("PASSWORD", PASSWORDS[user])
                .replace("HOST:1883", f"127.0.0.1:{secure_broker.port}")
                .replace("/data", str(tmp_path / "sandbox"))
                for arg in command
            ]
            assert argv[:2] == ["python", "-m"], argv
            log = stack.enter_context((tmp_path / f"{user}.log").open("wb"))
            process = subprocess.Popen(
                [sys.executable, *argv[1:]],
                cwd=REPO,
                env=uncovered_env(),  # the tool clients are measured by their own tests
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            started.append(process)
        yield


@pytest.mark.usefixtures("documented_tools")
async def test_documented_tool_commands_work_under_the_acl(
    secure_broker: SecureBroker,
) -> None:
    url = f"mqtt://agent:{PASSWORDS['agent']}@127.0.0.1:{secure_broker.port}"
    # The agent's Last Will goes to the registration topic by default, which the
    # ACL does not let it write: mosquitto would drop it, so do not ask for one.
    async with Messager(url, will_topic=None) as messager, ToolManager(messager) as manager:
        for tool_id, _ in CALLS:  # six processes starting cold on a busy machine
            await manager.wait_for_tool(tool_id, timeout=STARTUP)
        for tool_id, arguments in CALLS:
            result = await manager.execute_tool(tool_id, arguments, timeout=TIMEOUT)
            assert isinstance(result, TaskResultMessage), result
            assert result.tool_id == tool_id


# -- ownership: no user can retire, replace or impersonate another user's tool -------------


def url_of(secure_broker: SecureBroker, user: str) -> str:
    return f"mqtt://{user}:{PASSWORDS[user]}@127.0.0.1:{secure_broker.port}"


async def test_no_other_user_can_retire_or_take_over_a_tool(
    secure_broker: SecureBroker,
) -> None:
    from argentic_tools import (
        ClientOfflineMessage,
        RegistrationError,
        ToolService,
        UnregisterToolMessage,
        tool,
    )
    from argentic_tools._protocol.messages import encode

    @tool(name="calculate")
    def calculate(expression: str) -> str:
        """Pretend to evaluate an expression."""
        return f"calculator: {expression}"

    @tool(name="calculate")
    def rogue(expression: str) -> str:
        """The same name and schema, served by another user."""
        return f"rogue saw {expression}"

    async with (
        Messager(url_of(secure_broker, "agent"), will_topic=None) as messager,
        ToolManager(messager) as manager,
        ToolService(
            url_of(secure_broker, "calculator"), [calculate], tool_ids={"calculate": "calculator"}
        ),
    ):
        info = await manager.wait_for_tool("calculate", timeout=TIMEOUT)
        assert info.owner == "calculator"
        victim = info.source
        assert victim is not None
        # Forgeries by the units user: on the shared topic, on the victim's own topic
        # (mosquitto drops both), and on the forger's own topic naming the victim.
        async with secure_broker.client("units") as forger:
            for topic in (
                "agent/tools/register",
                f"agent/tools/register/calculator/{victim}",
                f"agent/tools/register/units/{victim}",
            ):
                for forged in (
                    ClientOfflineMessage(source=victim),
                    UnregisterToolMessage(tool_id="calculator", source=victim),
                ):
                    await forger.publish(topic, encode(forged), qos=1)
        # A rogue registering the same name under its own user is refused.
        with pytest.raises(RegistrationError, match="belongs to broker user 'calculator'"):
            async with ToolService(
                url_of(secure_broker, "units"),
                [rogue],
                tool_ids={"calculate": "units"},
                confirm_timeout=CONFIRM,
            ):
                pass
        # Every call still reaches the real tool, and only it.
        for n in range(10):
            result = await manager.execute_tool("calculate", {"expression": f"{n}+{n}"})
            assert result.ok, result
            assert result.result == f"calculator: {n}+{n}"
        assert [i["name"] for i in manager.tools_by_id.values()] == ["calculate"]


async def test_a_name_reserved_for_a_user_is_refused_to_everyone_else(
    secure_broker: SecureBroker,
) -> None:
    from argentic_tools import RegistrationError, ToolService, tool

    @tool(name="calculate")
    def squatter(expression: str) -> str:
        """Registers first, under a name reserved for someone else."""
        return expression

    async with (
        Messager(url_of(secure_broker, "agent"), will_topic=None) as messager,
        ToolManager(messager, name_owners={"calculate": "calculator"}) as manager,
    ):
        with pytest.raises(RegistrationError, match="reserved for broker user 'calculator'"):
            async with ToolService(
                url_of(secure_broker, "units"),
                [squatter],
                tool_ids={"calculate": "units"},
                confirm_timeout=CONFIRM,
            ):
                pass
        assert manager.get_tool_names() == []


# -- tenants: two agent users and a tool's user, as docs/security.md sets them up ----------


@asynccontextmanager
async def tenants_and_calculator(
    broker: SecureBroker,
) -> AsyncIterator[tuple[ToolManager, ToolManager]]:
    """Managers of tenants alice and bob, and the calculator tool run by its own user."""
    from argentic_tools import ToolService, tool

    @tool(name="calculate")
    def calculate(expression: str) -> str:
        """Echo the expression, so a result shows whose task it was."""
        return f"calculator: {expression}"

    async with (
        ToolService(
            url_of(broker, "calculator"), [calculate], tool_ids={"calculate": "calculator"}
        ),
        Messager(url_of(broker, "alice"), client_id="alice-agent", will_topic=None) as alice_bus,
        Messager(url_of(broker, "bob"), client_id="bob-agent", will_topic=None) as bob_bus,
        ToolManager(alice_bus, tenant=True) as alice,
        ToolManager(bob_bus, tenant=True) as bob,
    ):
        for manager in (alice, bob):
            await manager.wait_for_tool("calculate", timeout=TIMEOUT)
        yield alice, bob


async def calculate(manager: ToolManager, expression: str) -> None:
    result = await manager.execute_tool("calculate", {"expression": expression}, timeout=TIMEOUT)
    assert result.ok, result
    assert result.result == f"calculator: {expression}"


async def messages_until(client: aiomqtt.Client, marker: bytes) -> list[aiomqtt.Message]:
    """Every message ``client`` receives up to and including the first containing ``marker``."""
    seen = []
    with anyio.fail_after(TIMEOUT):
        async for message in client.messages:
            seen.append(message)
            assert isinstance(message.payload, bytes)
            if marker in message.payload:
                return seen
    raise AssertionError("the connection closed")


async def test_a_tenant_cannot_read_another_tenants_tasks(tenant_broker: SecureBroker) -> None:
    async with (
        tenants_and_calculator(tenant_broker) as (alice, bob),
        tenant_broker.client("alice") as spy,
    ):
        await spy.subscribe("#", qos=1)
        await calculate(bob, "bob-secret")
        # Alice's own call comes after Bob's: its result on her inbox is the marker.
        await calculate(alice, "alice-marker")
        seen = await messages_until(spy, b"alice-marker")

    assert [m.topic.value for m in seen if b"bob-secret" in bytes(m.payload)] == []
    assert seen[-1].topic.value == "agent/tools/response/calculator/alice"


async def test_a_task_from_one_tenant_is_answered_only_to_that_tenant(
    tenant_broker: SecureBroker,
) -> None:
    from argentic_tools import TaskMessage
    from argentic_tools._protocol.messages import encode

    bobs_inbox = "agent/tools/response/calculator/bob"

    def forged(task_id: str, expression: str) -> bytes:
        return encode(
            TaskMessage(
                source="bob-agent",
                task_id=task_id,
                tool_id="calculator",
                tool_name="calculate",
                arguments={"expression": expression},
                reply_to=bobs_inbox,
            )
        )

    async with (
        tenants_and_calculator(tenant_broker) as (_, bob),
        tenant_broker.client("alice") as mallory,
        tenant_broker.client("bob") as bobs_view,
    ):
        await mallory.subscribe("agent/tools/response/#", qos=1)
        await bobs_view.subscribe(bobs_inbox, qos=1)
        # On the shared call topic and on Bob's level: mosquitto drops both.
        await mallory.publish("agent/tools/call/calculator", forged("f1", "forged-1"), qos=1)
        await mallory.publish("agent/tools/call/calculator/bob", forged("f2", "forged-2"), qos=1)
        # On her own level: the tool runs it, and answers her.
        await mallory.publish("agent/tools/call/calculator/alice", forged("f3", "forged-3"), qos=1)
        answered = await messages_until(mallory, b"forged-3")
        await calculate(bob, "bob-marker")
        bob_got = await messages_until(bobs_view, b"bob-marker")

    assert [m.topic.value for m in answered] == ["agent/tools/response/calculator/alice"]
    assert [bytes(m.payload).count(b"forged") for m in bob_got] == [0]


async def test_a_tenant_taking_another_tenants_client_id_receives_none_of_its_results(
    tenant_broker: SecureBroker,
) -> None:
    def thief() -> aiomqtt.Client:
        """Alice, connecting with the client id of Bob's manager."""
        return aiomqtt.Client(
            "127.0.0.1",
            tenant_broker.port,
            identifier="bob-agent",
            username="alice",
            password=PASSWORDS["alice"],
            timeout=TIMEOUT,
        )

    # Holding the id, she waits for what reaches it: the tool answers Bob's inbox.
    # (Bob's manager is not connected yet, or it would take its id straight back.)
    async with thief() as spy, tenant_broker.client("calculator") as calculator:
        await spy.subscribe("#", qos=1)
        await calculator.publish("agent/tools/response/calculator/bob", b"bob-result", qos=1)
        await calculator.publish("agent/tools/response/calculator/alice", b"alice-marker", qos=1)
        stolen = await messages_until(spy, b"alice-marker")
    assert [m.payload for m in stolen] == [b"alice-marker"]

    async with tenants_and_calculator(tenant_broker) as (_, bob):
        await calculate(bob, "before")
        # Taking the id disconnects Bob's manager, which connects again; its calls go on.
        await take_client_id(tenant_broker.port, "bob-agent", "alice")
        await calculate(bob, "after")


async def take_client_id(port: int, client_id: str, user: str) -> None:
    """Connect as ``user`` with ``client_id`` (a bare MQTT 3.1.1 CONNECT), and leave.

    A raw socket, because the client it displaces connects again at once and takes the
    id back, which may cut a full client off while it is still setting up.
    """

    def field(text: str) -> bytes:
        data = text.encode()
        return len(data).to_bytes(2, "big") + data

    flags = 0b1100_0010  # user name, password, clean session
    body = field("MQTT") + bytes([4, flags]) + (60).to_bytes(2, "big")
    body += field(client_id) + field(user) + field(PASSWORDS[user])
    assert len(body) < 128  # the remaining length fits one byte
    with anyio.fail_after(TIMEOUT):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(bytes([0x10, len(body)]) + body)
            connack = await stream.receive(4)
    assert connack == b"\x20\x02\x00\x00", connack  # accepted
