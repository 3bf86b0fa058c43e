"""Logs a collector can read: stderr to a file holds one whole record per line.

Real processes on a real mosquitto: ``argentic-tools serve`` and a tool process
started with ``serve_main``, their stderr a file, a tool that raises called once.
"""

import contextlib
import json
import re
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.support.brokers import Mosquitto, child_env
from tests.support.cli import TIMEOUT, cli, connection, run_cli
from tests.support.processes import ROOT, python_cmd

pytestmark = pytest.mark.anyio

PLAIN_RECORD = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+ \S"
)
"""A whole plain record: ISO 8601 UTC time, level, logger, message."""


@contextlib.asynccontextmanager
async def logging_to(
    path: Path, command: list[str], env: dict[str, str] | None = None
) -> AsyncIterator[None]:
    """Run ``command`` with its stderr written to ``path``; SIGTERM it when the block ends."""
    environment = child_env()
    environment.update(env or {})
    with path.open("wb") as log:
        process = await anyio.open_process(
            command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            yield
        finally:
            process.terminate()
            with anyio.fail_after(TIMEOUT):
                await process.wait()
            await process.aclose()


async def crash_once(mosquitto: Mosquitto, prefix: str) -> None:
    """Call the test tool that raises, once the process has registered it."""
    completed = await run_cli("call", "crash", "--wait", "20", *connection(mosquitto.url, prefix))
    assert completed.returncode == 1, completed.stderr


def serve_crash(prefix: str, mosquitto: Mosquitto, *options: str) -> list[str]:
    spec = "tests.support.tool_proc:crash"
    return cli("serve", spec, *connection(mosquitto.url, prefix), *options)


def records(path: Path) -> list[str]:
    text = path.read_text()
    assert text.endswith("\n"), text
    return text.splitlines()


async def test_serve_to_a_file_writes_one_dated_record_per_line(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    prefix = f"logs{uuid.uuid4().hex[:10]}"
    path = tmp_path / "serve.log"
    async with logging_to(path, serve_crash(prefix, mosquitto)):
        await crash_once(mosquitto, prefix)
    lines = records(path)
    assert lines
    for line in lines:
        assert PLAIN_RECORD.match(line), line
    crash = [line for line in lines if "raised ZeroDivisionError" in line]
    assert len(crash) == 1, lines
    assert " WARNING argentic_tools.tool " in crash[0]
    assert " tool=crash task_id=" in crash[0]


@pytest.mark.parametrize(
    ("options", "env"),
    [(("--log-format", "json"), {}), ((), {"ARGENTIC_TOOLS_LOG_FORMAT": "json"})],
    ids=["option", "environment"],
)
async def test_serve_with_json_logs_writes_one_object_per_line_with_the_call_fields(
    mosquitto: Mosquitto, tmp_path: Path, options: tuple[str, ...], env: dict[str, str]
) -> None:
    prefix = f"logs{uuid.uuid4().hex[:10]}"
    path = tmp_path / "serve.log"
    async with logging_to(path, serve_crash(prefix, mosquitto, *options), env):
        await crash_once(mosquitto, prefix)
    entries = [json.loads(line) for line in records(path)]
    assert entries
    for entry in entries:
        assert {"time", "level", "logger", "message"} <= entry.keys(), entry
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"])
    crash = [entry for entry in entries if "raised ZeroDivisionError" in entry["message"]]
    assert len(crash) == 1, entries
    assert crash[0]["level"] == "WARNING"
    assert crash[0]["tool"] == "crash"
    assert crash[0]["task_id"]


async def test_a_serve_main_process_takes_the_log_format_option(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    prefix = f"logs{uuid.uuid4().hex[:10]}"
    path = tmp_path / "tool.log"
    command = python_cmd(
        "-m", "tests.support.tool_proc", *connection(mosquitto.url, prefix), "--log-format", "json"
    )
    async with logging_to(path, command):
        await crash_once(mosquitto, prefix)
    entries = [json.loads(line) for line in records(path)]
    assert any(entry.get("tool") == "crash" for entry in entries), entries
    for entry in entries:
        assert {"time", "level", "logger", "message"} <= entry.keys(), entry
