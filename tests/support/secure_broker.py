"""The shipped secure mosquitto configuration, rewritten to run inside a test, and what runs
on it: shared by the tests of mosquitto-secure.conf and of docker-compose.secure.yml."""

import os
import pwd
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from .brokers import wait_for_port
from .processes import ROOT

SECURE_CONF = ROOT / "mosquitto-secure.conf"
ACL = ROOT / "mosquitto.acl"
SECURITY_DOC = ROOT / "docs" / "security.md"
TIMEOUT = 10
"""Bound on the broker starting to listen, and on a process stopping."""


def derive_config(
    port: int, password_file: Path, *, stay_who_we_are: bool = True, acl: Path = ACL
) -> str:
    """The shipped secure configuration, rewritten to run inside a test.

    With ``stay_who_we_are`` false, a broker started as root becomes the `mosquitto`
    user before it reads the password file, as it does in the image.
    """
    replacements = {
        "listener 1883": f"listener {port} 127.0.0.1",
        "password_file": f"password_file {password_file}",
        "acl_file": f"acl_file {acl}",
        "persistence true": "persistence false",
        "persistence_location": None,
    }
    seen: set[str] = set()
    lines = []
    for line in SECURE_CONF.read_text().splitlines():
        kept: str | None = line
        for start, replacement in replacements.items():
            if line == start or line.startswith(start + " "):
                seen.add(start)
                kept = replacement
                break
        if kept is not None:
            lines.append(kept)
    # Fail loudly when the shipped file changes shape, instead of testing something else.
    assert seen == set(replacements), f"not found in {SECURE_CONF.name}: {set(replacements) - seen}"
    if stay_who_we_are:
        # Started as root, mosquitto switches to the `mosquitto` user before it reads
        # the password file, which that user cannot reach under tmp_path.
        lines.append(f"user {pwd.getpwuid(os.geteuid()).pw_name}")
    return "\n".join(lines) + "\n"


def tenant_blocks() -> str:
    """The tenants' ACL blocks docs/security.md shows (its fenced block of ``user`` lines)."""
    blocks = re.findall(r"^```text\n(user .*?)^```", SECURITY_DOC.read_text(), re.M | re.S)
    assert len(blocks) == 1, f"expected one block of tenant users in {SECURITY_DOC.name}"
    return str(blocks[0])


def write_tenant_acl(path: Path) -> Path:
    """mosquitto.acl set up for tenants as docs/security.md says.

    The `agent` block is replaced by the tenants' blocks.
    """
    text = ACL.read_text()
    agent = re.search(r"^user agent\n(?:topic .*\n)+", text, re.M)
    assert agent is not None, f"no `user agent` block in {ACL.name}"
    path.write_text(text[: agent.start()] + tenant_blocks() + text[agent.end() :])
    return path


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


# One call per tool, by tool id: it proves the tool can read its call topic and write
# its response topic under the ACL.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("calculator", {"expression": "6*7"}),
    ("units", {"value": 1, "from_unit": "km", "to_unit": "m"}),
    ("weather", {"city": "Paris"}),
    ("clock", {}),
    ("files.write_file", {"path": "note.txt", "content": "hi"}),
    ("files.read_file", {"path": "note.txt"}),
    ("files.list_files", {}),
    ("slow.sleep", {"seconds": 0}),
    ("slow.echo", {"message": "hi"}),
]


def stop_process(process: subprocess.Popen[bytes]) -> None:
    stop_processes([process])


def stop_processes(processes: list[subprocess.Popen[bytes]]) -> None:
    """Stop every process in ``processes``: all are signalled first, so their shutdowns
    (each unregisters its tools) overlap instead of running one after another."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=TIMEOUT)
