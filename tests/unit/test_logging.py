"""Logging: drops at a bounded rate, levels by name or number, formats for collectors."""

import argparse
import io
import json
import logging
import re
import sys

import pytest

from argentic_tools._logging import (
    LOG_FORMAT_VARIABLE,
    DropLog,
    InstanceLogger,
    JsonFormatter,
    PlainFormatter,
    add_log_format_argument,
    default_log_format,
    log_handler,
    parse_log_level,
)


def test_drop_log_is_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.drops")
    drops = DropLog(logger, burst=3, period=3600)
    with caplog.at_level(logging.WARNING, logger="test.drops"):
        for index in range(100):
            drops.drop("t/x", f"bad message {index}")
    assert len(caplog.records) == 3
    assert "dropped message on 't/x': bad message 0" in caplog.text


def test_log_levels_parse_by_name_and_number() -> None:
    assert parse_log_level("debug") == logging.DEBUG
    assert parse_log_level(logging.ERROR) == logging.ERROR
    with pytest.raises(ValueError, match="unknown log level"):
        parse_log_level("chatty")


def _record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    logger = logging.getLogger("argentic_tools.manager")
    return logger.makeRecord(
        logger.name, logging.INFO, __file__, 1, message, args, None, extra=extra
    )


def _failed_record() -> logging.LogRecord:
    try:
        raise ZeroDivisionError("division by zero")
    except ZeroDivisionError:
        logger = logging.getLogger("argentic_tools.tool")
        return logger.makeRecord(
            logger.name, logging.ERROR, __file__, 1, "tool failed", (), sys.exc_info()
        )


def test_plain_format_writes_a_long_multiline_message_on_one_dated_line() -> None:
    text = "word " * 200 + "\nsecond line\r\nthird"
    line = PlainFormatter().format(_record("%s", text))
    assert "\n" not in line and "\r" not in line
    assert re.match(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO argentic_tools.manager word ", line
    )
    assert "word  " not in line.replace("word \\n", "")  # no padding added
    assert line.endswith("\\nsecond line\\r\\nthird")


def test_plain_format_writes_the_call_fields_and_the_traceback_on_the_same_line() -> None:
    line = PlainFormatter().format(_record("call failed", tool="add", task_id="t 1"))
    assert line.endswith('call failed tool=add task_id="t 1"')
    failed = PlainFormatter().format(_failed_record())
    assert "\n" not in failed
    assert 'exc="Traceback (most recent call last):' in failed
    assert "ZeroDivisionError: division by zero" in failed


def test_json_format_is_one_object_with_time_level_logger_message_and_the_call_fields() -> None:
    record = _record("call of %r", "add", client_id="c1", tool="add", task_id="t1", user="ann")
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "INFO"
    assert entry["logger"] == "argentic_tools.manager"
    assert entry["message"] == "call of 'add'"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"])
    assert {k: entry[k] for k in ("client_id", "tool", "task_id", "user")} == {
        "client_id": "c1",
        "tool": "add",
        "task_id": "t1",
        "user": "ann",
    }


def test_json_format_writes_an_exception_as_exc() -> None:
    entry = json.loads(JsonFormatter().format(_failed_record()))
    assert entry["message"] == "tool failed"
    assert entry["exc"].startswith("Traceback (most recent call last):")
    assert entry["exc"].endswith("ZeroDivisionError: division by zero")


def test_an_instance_logger_carries_its_client_id_into_the_json_record() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("test.instance.json")
    handler = log_handler("json", stream=stream)
    logger.addHandler(handler)
    try:
        InstanceLogger(logger, "INFO", {"client_id": "mgr-1"}).info("connected")
    finally:
        logger.removeHandler(handler)
    entry = json.loads(stream.getvalue())
    assert (entry["message"], entry["client_id"]) == ("connected", "mgr-1")


def test_auto_format_is_plain_off_a_terminal_and_the_terminal_handler_on_one() -> None:
    terminal_handler = logging.NullHandler()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    off = log_handler("auto", stream=io.StringIO(), terminal=lambda: terminal_handler)
    assert isinstance(off.formatter, PlainFormatter)
    assert log_handler("auto", stream=Terminal(), terminal=lambda: terminal_handler) is (
        terminal_handler
    )
    with pytest.raises(ValueError, match="unknown log format"):
        log_handler("xml")


def test_the_log_format_option_defaults_to_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(LOG_FORMAT_VARIABLE, "json")
    parser = argparse.ArgumentParser()
    add_log_format_argument(parser)
    assert parser.parse_args([]).log_format == "json"
    assert parser.parse_args(["--log-format", "plain"]).log_format == "plain"
    monkeypatch.setenv(LOG_FORMAT_VARIABLE, "nonsense")
    assert default_log_format() == "auto"
