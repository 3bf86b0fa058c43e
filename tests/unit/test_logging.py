"""Logging: dropped messages are logged at a bounded rate; log levels parse by name or number."""

import logging

import pytest

from argentic_tools._logging import DropLog, parse_log_level


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
