"""Every example tool service in ``tool_clients/`` as a real process behind a real mosquitto.

One process per client: each test starts it exactly as a user would (``python -m
tool_clients.X --broker ... --topic-prefix ...``), calls its tools through a ToolManager,
then stops it with SIGTERM and expects exit status 0 and the tools unregistered.
"""

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import anyio
import pytest

from argentic_tools import (
    TaskErrorMessage,
    TaskStatus,
    ToolInfo,
    ToolManager,
    ToolResult,
    Topics,
)
from tests.support.brokers import Mosquitto
from tests.support.observers import spy_on_calls
from tests.support.processes import ToolProcess

pytestmark = pytest.mark.anyio


async def call(manager: ToolManager, name: str, arguments: dict[str, Any], **kw: Any) -> ToolResult:
    with anyio.fail_after(15):
        return await manager.execute_tool(name, arguments, **kw)


async def ok(manager: ToolManager, name: str, arguments: dict[str, Any]) -> Any:
    """Call a tool that must succeed; return its result."""
    result = await call(manager, name, arguments)
    assert result.ok, result
    return result.result


async def failure(manager: ToolManager, name: str, arguments: dict[str, Any]) -> TaskErrorMessage:
    """Call a tool that must fail; return the error."""
    result = await call(manager, name, arguments)
    assert isinstance(result, TaskErrorMessage), result
    return result


async def registered(proc: ToolProcess, manager: ToolManager, *names: str) -> list[ToolInfo]:
    """Wait (bounded) for the process to register ``names``; on failure show its output."""
    try:
        return [await manager.wait_for_tool(name, timeout=20) for name in names]
    except TimeoutError:
        await anyio.to_thread.run_sync(proc.terminate)
        pytest.fail(f"{proc.args} did not register {names}; its output:\n{proc.output()}")


async def examples_hold(manager: ToolManager, info: ToolInfo) -> None:
    """Every example a tool registers is what calling it returns."""
    assert info.examples, f"{info.name} registers no examples"
    for example in info.examples:
        assert await ok(manager, info.name, example["input"]) == example["output"], example


async def stop_cleanly(proc: ToolProcess, manager: ToolManager, infos: list[ToolInfo]) -> None:
    code = await anyio.to_thread.run_sync(proc.terminate)
    assert code == 0, proc.output()
    for info in infos:
        await manager.wait_for_tool_removed(info.id, timeout=10)


async def test_calculator_client_evaluates_and_refuses_division_by_zero_and_huge_exponents(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager
) -> None:
    with ToolProcess("tool_clients.calculator", mosquitto.url, prefix) as proc:
        (info,) = await registered(proc, manager, "calculate")
        assert info.tags == ("math",)
        assert info.input_schema["required"] == ["expression"]
        await examples_hold(manager, info)
        assert await ok(manager, "calculate", {"expression": "7 / 2 + 7 // 2"}) == 6.5
        assert await ok(manager, "calculate", {"expression": "2 ** 64"}) == 2**64

        zero = await failure(manager, "calculate", {"expression": "1 / (3 - 3)"})
        assert zero.error_code == "execution_error"
        assert zero.error == "Tool 'calculate' failed: division by zero in '1 / (3 - 3)'"

        huge = await failure(manager, "calculate", {"expression": "2 ** 100000"})
        assert huge.error_code == "execution_error"
        assert "exponent 100000 is too large (limit is 10000)" in huge.error
        tower = await failure(manager, "calculate", {"expression": "9 ** 9 ** 9"})
        assert "too large" in tower.error

        unsafe = await failure(manager, "calculate", {"expression": "__import__('os')"})
        assert "unknown function '__import__'" in unsafe.error
        # The process is unharmed by all of the above.
        assert await ok(manager, "calculate", {"expression": "sqrt(16) + 2 ** 3"}) == 12.0
        await stop_cleanly(proc, manager, [info])


async def test_units_client_converts_length_and_temperature_and_names_unknown_units(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager
) -> None:
    with ToolProcess("tool_clients.units", mosquitto.url, prefix) as proc:
        (info,) = await registered(proc, manager, "convert_units")
        await examples_hold(manager, info)
        assert await ok(
            manager, "convert_units", {"value": 5, "from_unit": "km", "to_unit": "mi"}
        ) == {
            "value": 3.10685596119,
            "from_unit": "km",
            "to_unit": "mi",
        }
        assert await ok(
            manager, "convert_units", {"value": 37, "from_unit": "celsius", "to_unit": "°F"}
        ) == {"value": 98.6, "from_unit": "C", "to_unit": "F"}

        unknown = await failure(
            manager, "convert_units", {"value": 1, "from_unit": "parsec", "to_unit": "km"}
        )
        assert unknown.error_code == "execution_error"
        assert "unknown unit 'parsec'" in unknown.error
        assert "length: mm, cm, m, km" in unknown.error

        mixed = await failure(
            manager, "convert_units", {"value": 1, "from_unit": "km", "to_unit": "kg"}
        )
        assert "the units measure different quantities" in mixed.error

        missing = await failure(manager, "convert_units", {"value": 1, "from_unit": "km"})
        assert missing.error_code == "invalid_arguments"
        assert "'to_unit' is a required property" in missing.error
        await stop_cleanly(proc, manager, [info])


async def test_weather_client_returns_a_forecast_per_day_and_fails_for_error_city(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager
) -> None:
    with ToolProcess("tool_clients.weather", mosquitto.url, prefix) as proc:
        (info,) = await registered(proc, manager, "get_weather")
        # The documented example (Paris, one day, metric) is exactly what comes back.
        await examples_hold(manager, info)

        oslo = {"city": "Oslo", "days": 3, "units": "imperial"}
        weather = await ok(manager, "get_weather", oslo)
        assert set(weather) == {"city", "units", "forecast"}
        assert (weather["city"], weather["units"]) == ("Oslo", "imperial")
        assert [day["date"] for day in weather["forecast"]] == [
            "2025-01-01",
            "2025-01-02",
            "2025-01-03",
        ]
        for day in weather["forecast"]:
            assert set(day) == {
                "date",
                "condition",
                "temperature_high",
                "temperature_low",
                "precipitation_chance",
            }
            assert isinstance(day["condition"], str)
            assert day["temperature_low"] <= day["temperature_high"]
            assert 0 <= day["precipitation_chance"] <= 100
        # Deterministic: the same question gets the same answer.
        assert await ok(manager, "get_weather", oslo) == weather

        broken = await failure(manager, "get_weather", {"city": "error_city"})
        assert broken.error_code == "execution_error"
        assert (
            broken.error
            == "Tool 'get_weather' failed: Weather service unavailable for 'error_city'"
        )

        too_long = await failure(manager, "get_weather", {"city": "Oslo", "days": 8})
        assert too_long.error_code == "invalid_arguments"
        assert "$.days" in too_long.error
        await stop_cleanly(proc, manager, [info])


async def test_files_client_round_trips_text_in_its_sandbox_and_refuses_escapes(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager, tmp_path: Path
) -> None:
    root = tmp_path / "sandbox"
    outside = tmp_path / "escape.txt"
    with ToolProcess("tool_clients.files", mosquitto.url, prefix, "--root", str(root)) as proc:
        infos = await registered(proc, manager, "write_file", "read_file", "list_files")
        await examples_hold(manager, infos[0])  # write_file's example writes notes/todo.txt

        written = await ok(manager, "write_file", {"path": "notes/hello.txt", "content": "héllo\n"})
        assert written == {"path": "notes/hello.txt", "bytes_written": 7}
        assert (root / "notes" / "hello.txt").read_text(encoding="utf-8") == "héllo\n"
        assert await ok(manager, "read_file", {"path": "notes/hello.txt"}) == "héllo\n"
        assert await ok(manager, "list_files", {}) == {
            "path": ".",
            "entries": [{"name": "notes", "type": "directory", "size": None}],
            "truncated": False,
        }
        assert await ok(manager, "list_files", {"path": "notes"}) == {
            "path": "notes",
            "entries": [
                {"name": "hello.txt", "type": "file", "size": 7},
                {"name": "todo.txt", "type": "file", "size": 9},
            ],
            "truncated": False,
        }

        for name, arguments in [
            ("write_file", {"path": "../escape.txt", "content": "out"}),
            ("read_file", {"path": "../escape.txt"}),
            ("list_files", {"path": "notes/../.."}),
        ]:
            escaped = await failure(manager, name, arguments)
            assert escaped.error_code == "execution_error"
            assert "must not contain '..'" in escaped.error, escaped.error
        for name, arguments in [
            ("write_file", {"path": str(outside), "content": "out"}),
            ("read_file", {"path": "/etc/hostname"}),
        ]:
            absolute = await failure(manager, name, arguments)
            assert "is absolute; use a path relative to the sandbox root" in absolute.error
        assert not outside.exists()

        missing = await failure(manager, "read_file", {"path": "notes/nope.txt"})
        assert "file 'notes/nope.txt' does not exist" in missing.error
        await stop_cleanly(proc, manager, infos)


async def test_clock_client_tells_utc_time_and_names_an_unknown_zone(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager
) -> None:
    with ToolProcess("tool_clients.clock", mosquitto.url, prefix) as proc:
        (info,) = await registered(proc, manager, "current_time")
        now = await ok(manager, "current_time", {})
        assert set(now) == {
            "timestamp",
            "timezone",
            "utc_offset",
            "date",
            "time",
            "weekday",
            "abbreviation",
        }
        assert (now["timezone"], now["utc_offset"], now["abbreviation"]) == ("UTC", "+00:00", "UTC")
        stamp = dt.datetime.fromisoformat(now["timestamp"])
        assert stamp.utcoffset() == dt.timedelta(0)
        # The parts agree with the timestamp they come from (no comparison with our clock).
        assert now["date"] == stamp.date().isoformat()
        assert now["time"] == stamp.strftime("%H:%M:%S")
        assert now["weekday"] == stamp.strftime("%A")
        assert (await ok(manager, "current_time", {"timezone": "utc"}))["timezone"] == "UTC"

        unknown = await failure(manager, "current_time", {"timezone": "Mars/Olympus_Mons"})
        assert unknown.error_code == "execution_error"
        assert "unknown timezone 'Mars/Olympus_Mons'" in unknown.error
        await stop_cleanly(proc, manager, [info])


async def test_slow_client_times_out_a_long_sleep_while_echo_still_answers(
    mosquitto: Mosquitto, prefix: str, manager: ToolManager
) -> None:
    # A short grace period: a sleep still running when SIGTERM arrives gets cancelled.
    with ToolProcess("tool_clients.slow", mosquitto.url, prefix, "--grace-period", "0.5") as proc:
        infos = await registered(proc, manager, "sleep", "echo")
        for info in infos:
            await examples_hold(manager, info)
        assert await ok(manager, "sleep", {"seconds": 0}) == {"slept": 0.0}

        slow = await call(manager, "sleep", {"seconds": 30}, timeout=0.3)
        assert isinstance(slow, TaskErrorMessage)
        assert slow.status == TaskStatus.TIMEOUT
        assert slow.error_code == "timeout"
        assert "Tool 'sleep' timed out" in slow.error
        assert manager.pending_calls == 0

        negative = await failure(manager, "sleep", {"seconds": -1})
        assert negative.error_code == "invalid_arguments"

        # A sleep that reached the tool does not hold up other calls: echo answers while
        # the sleep's own call is still waiting for its result.
        sleep_id = infos[0].id
        async with spy_on_calls(mosquitto.url, Topics.with_prefix(prefix), sleep_id) as spy:
            sleeping = asyncio.create_task(
                manager.execute_tool("sleep", {"seconds": 30}, call_id="long", timeout=60)
            )
            assert await spy.wait_for_calls(1) == ["long"]
        assert await ok(manager, "echo", {"message": "still here"}) == "still here"
        assert not sleeping.done()
        await stop_cleanly(proc, manager, infos)
        # The sleep outlived the half-second grace period: the tool cancelled it and said so.
        with anyio.fail_after(15):
            ended = await sleeping
        assert isinstance(ended, TaskErrorMessage)
        assert (ended.call_id, ended.status, ended.error_code) == (
            "long",
            TaskStatus.CANCELLED,
            "cancelled",
        )
