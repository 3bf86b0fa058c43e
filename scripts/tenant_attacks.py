"""What one tenant can read of another's on the secured broker, before and after tenants.

    python scripts/tenant_attacks.py               # both setups, 20 calls by bob each
    python scripts/tenant_attacks.py --calls 100

Each setup runs its own mosquitto on a free loopback port with mosquitto.acl, users
alice and bob (two agents) and calculator (the tool's user, serving ``calculate`` as
tool id ``calculator`` in this process):

- ``client-id``: what docs/security.md advised before tenants: the ``user agent``
  block copied for alice and bob, plus ``pattern read agent/tools/response/+/%c``;
  plain managers (their inbox is their client id).
- ``user``: the tenants' blocks of docs/security.md, managers with ``tenant=True``.

Alice (a) subscribes to ``#`` while bob makes ``--calls`` calls, (b) sends
``--calls`` tasks naming bob's inbox as ``reply_to``, on every call topic she might
write, and (c) connects with bob's client id while the tool answers bob ``--calls``
times. One line per setup: how many of bob's tasks she read, how many forged tasks
were answered into bob's inbox, how many of bob's results she received holding his
client id, and whether bob's calls still succeed afterwards.
"""

import argparse
import asyncio
import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import aiomqtt

from argentic_tools import Messager, TaskMessage, ToolManager, ToolService, tool
from argentic_tools._protocol.messages import encode

ROOT = Path(__file__).resolve().parents[1]
USERS = ("alice", "bob", "calculator")
WAIT = 1.0
"""Seconds alice listens after the last message she could have received."""

CLIENT_ID_BLOCKS = """
pattern read agent/tools/response/+/%c
user alice
topic write agent/tools/call/#
topic read agent/tools/register/#
topic readwrite agent/status/info/#

user bob
topic write agent/tools/call/#
topic read agent/tools/register/#
topic readwrite agent/status/info/#
"""


def acl_text(setup: str) -> str:
    """mosquitto.acl with the agent block replaced by the tenants of ``setup``."""
    text = (ROOT / "mosquitto.acl").read_text()
    agent = re.search(r"^user agent\n(?:topic .*\n)+", text, re.M)
    assert agent is not None
    if setup == "user":
        doc = (ROOT / "docs" / "security.md").read_text()
        blocks = re.search(r"^```text\n(user .*?)^```", doc, re.M | re.S)
        assert blocks is not None
        tenants = blocks.group(1)
    else:
        tenants = CLIENT_ID_BLOCKS
    return text[: agent.start()] + tenants + text[agent.end() :]


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def broker(setup: str) -> Iterator[int]:
    """A mosquitto with the three users and the ACL of ``setup``; yields its port."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        passwd = folder / "passwd"
        binary = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
        for n, user in enumerate(USERS):
            create = ["-c"] if n == 0 else []
            subprocess.run([binary, "-b", *create, str(passwd), user, user], check=True)  # noqa: S603
        (folder / "acl").write_text(acl_text(setup))
        port = free_port()
        (folder / "conf").write_text(
            f"listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {passwd}\n"
            f"acl_file {folder / 'acl'}\nset_tcp_nodelay true\n"
            # Started as root, mosquitto would become `mosquitto`, who cannot read tmp.
            f"user {pwd.getpwuid(os.geteuid()).pw_name}\n"
        )
        mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        process = subprocess.Popen(  # noqa: S603
            [mosquitto, "-c", str(folder / "conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("mosquitto does not listen")
                time.sleep(0.05)
            yield port
        finally:
            process.terminate()
            process.wait(timeout=10)


def client(port: int, user: str, identifier: str | None = None) -> aiomqtt.Client:
    """A raw connection as ``user`` (whose password is its name)."""
    return aiomqtt.Client(
        "127.0.0.1", port, username=user, password=user, identifier=identifier, timeout=10
    )


async def collect(spy: aiomqtt.Client, needle: bytes) -> int:
    """Messages containing ``needle`` until none has come for WAIT seconds."""
    count = 0
    while True:
        try:
            async with asyncio.timeout(WAIT):
                message = await anext(spy.messages)
        except TimeoutError:
            return count
        if needle in bytes(message.payload):
            count += 1


async def run(setup: str, calls: int) -> str:
    """The three attacks on one setup; returns its line."""
    tenant = setup == "user"

    @tool(name="calculate")
    def calculate(expression: str) -> str:
        """Echo the expression."""
        return f"calculator: {expression}"

    with broker(setup) as port:

        def url(user: str) -> str:
            return f"mqtt://{user}:{user}@127.0.0.1:{port}"

        async with (
            ToolService(url("calculator"), [calculate], tool_ids={"calculate": "calculator"}),
            Messager(url("bob"), client_id="bob-agent", will_topic=None) as bob_bus,
            ToolManager(bob_bus, tenant=tenant) as bob,
        ):
            await bob.wait_for_tool("calculate", timeout=10)
            bobs_inbox = f"agent/tools/response/calculator/{bob.inbox}"
            # (a) alice reads bob's tasks
            async with client(port, "alice") as spy:
                await spy.subscribe("#", qos=1)
                for n in range(calls):
                    await bob.execute_tool("calculate", {"expression": f"bob-secret-{n}"})
                read = await collect(spy, b"bob-secret")
            # (b) forged reply_to naming bob's inbox
            # Another connection of bob's reads the inbox (with the client-id ACL,
            # the inbox of its own client id: the manager's is the same attack).
            view_inbox = bobs_inbox if tenant else "agent/tools/response/calculator/bob-view"
            async with (
                client(port, "alice") as mallory,
                client(port, "bob", "bob-view") as view,
            ):
                await view.subscribe(view_inbox, qos=1)
                for n in range(calls):
                    forged = TaskMessage(
                        source="bob-agent",
                        task_id=f"forged-{n}",
                        tool_id="calculator",
                        tool_name="calculate",
                        arguments={"expression": "forged"},
                        reply_to=view_inbox,
                    )
                    for level in ("", "/alice", "/bob"):
                        await mallory.publish(
                            f"agent/tools/call/calculator{level}", encode(forged), qos=1
                        )
                redirected = await collect(view, b"forged")
        # (c) alice holds bob's client id while the tool answers bob (bob's manager is
        # closed, as it is between its reconnections)
        async with client(port, "alice", "bob-agent") as thief, client(port, "calculator") as t:
            await thief.subscribe("#", qos=1)
            for n in range(calls):
                await t.publish(bobs_inbox, f"bob-result-{n}".encode(), qos=1)
            stolen = await collect(thief, b"bob-result")
        # bob's calls after one takeover
        async with (
            ToolService(url("calculator"), [calculate], tool_ids={"calculate": "calculator"}),
            Messager(url("bob"), client_id="bob-agent", will_topic=None) as bob_bus,
            ToolManager(bob_bus, tenant=tenant) as bob,
        ):
            await bob.wait_for_tool("calculate", timeout=10)
            with contextlib.suppress(aiomqtt.MqttError):
                async with client(port, "alice", "bob-agent"):
                    pass
            results = [
                await bob.execute_tool("calculate", {"expression": "after"}, timeout=10)
                for _ in range(calls)
            ]
            ok = sum(result.ok for result in results)
    return (
        f"{setup:9}  bob's tasks alice read: {read}/{calls}  forged tasks answered into "
        f"bob's inbox: {redirected}/{calls}  bob's results alice got with his client id: "
        f"{stolen}/{calls}  bob's calls after a takeover: {ok}/{calls} ok"
    )


def main() -> None:
    """Run the setups asked for, one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--setup", choices=("client-id", "user"), action="append")
    args = parser.parse_args()
    for setup in args.setup or ("client-id", "user"):
        print(asyncio.run(run(setup, args.calls)), flush=True)


if __name__ == "__main__":
    main()
