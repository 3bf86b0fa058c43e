"""Log levels as Argentic names them, and rate-limited logging of dropped messages."""

import logging
import time
from enum import IntEnum


class LogLevel(IntEnum):
    """Logging levels accepted wherever a ``log_level`` is taken."""

    DEBUG = logging.DEBUG
    INFO = logging.INFO
    WARNING = logging.WARNING
    ERROR = logging.ERROR
    CRITICAL = logging.CRITICAL


def parse_log_level(level: "LogLevel | str | int") -> LogLevel:
    """Turn ``"debug"``, ``"INFO"``, ``logging.WARNING`` or a LogLevel into a LogLevel.

    Raises:
        ValueError: The level is not one of the five names.

    """
    if isinstance(level, LogLevel):
        return level
    if isinstance(level, int):
        return LogLevel(level)
    try:
        return LogLevel[level.strip().upper()]
    except KeyError:
        names = ", ".join(member.name for member in LogLevel)
        raise ValueError(f"unknown log level {level!r}; use one of {names}") from None


class DropLog:
    """Logs rejected messages once each, with a rate limit so a flood cannot fill a disk.

    At most ``burst`` lines are written per ``period`` seconds; the rest are
    counted and reported in one summary line when the next period starts.
    """

    def __init__(self, logger: logging.Logger, burst: int = 20, period: float = 60.0) -> None:
        self._logger = logger
        self._burst = burst
        self._period = period
        self._window_start = 0.0
        self._in_window = 0
        self._suppressed = 0

    def drop(self, topic: str, reason: str, level: int = logging.WARNING) -> None:
        """Record that a message on ``topic`` was dropped because of ``reason``."""
        if not self._logger.isEnabledFor(level):
            return
        now = time.monotonic()
        if now - self._window_start >= self._period:
            if self._suppressed:
                self._logger.warning(
                    "%d more dropped messages were not logged in the last %.0f s",
                    self._suppressed,
                    self._period,
                )
            self._window_start = now
            self._in_window = 0
            self._suppressed = 0
        if self._in_window >= self._burst:
            self._suppressed += 1
            return
        self._in_window += 1
        self._logger.log(level, "dropped message on %r: %s", topic, reason)
