"""Log levels as Argentic names them, and rate-limited logging of dropped messages."""

import logging
import sys
import time
from enum import IntEnum
from typing import Any


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

    def __init__(
        self, logger: "logging.Logger | InstanceLogger", burst: int = 20, period: float = 60.0
    ) -> None:
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


class InstanceLogger(logging.LoggerAdapter[logging.Logger]):
    """One object's view of a module logger, with a level of its own.

    Setting the level of a manager or a connection changes what that object
    logs, not the process's logging configuration: two managers in one process
    keep their own levels, and no logger is created per object (named loggers
    are never freed). Records carry ``extra`` (e.g. the MQTT client id).
    """

    def __init__(
        self,
        logger: logging.Logger,
        level: "LogLevel | str | int" = LogLevel.INFO,
        extra: dict[str, object] | None = None,
    ) -> None:
        super().__init__(logger, extra or {})
        self.level = parse_log_level(level)

    def setLevel(self, level: "LogLevel | str | int") -> None:  # noqa: N802 - logging's name
        """Change this object's level."""
        self.level = parse_log_level(level)

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - logging's name
        """True when a record at ``level`` would be emitted by this object."""
        return (
            level >= self.level
            and not self.logger.disabled
            and not (logging.root.manager.disable >= level)
        )

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        """Emit a record at ``level`` when this object's level allows it."""
        if not self.isEnabledFor(level):
            return
        msg, options = self.process(msg, kwargs)
        exc_info = options.get("exc_info")
        if exc_info is True or (exc_info and not isinstance(exc_info, tuple | BaseException)):
            exc_info = sys.exc_info()
        elif isinstance(exc_info, BaseException):
            exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
        record = self.logger.makeRecord(
            self.logger.name,
            level,
            "(unknown file)",
            0,
            msg,
            args,
            exc_info or None,
            extra=options.get("extra"),
        )
        self.logger.handle(record)
