"""Log levels as Argentic names them, log formats for collectors, and rate-limited drops.

:func:`configure_logging` is the one setup of a process's logging, used by every
long-running command and by :func:`~argentic_tools.serve_main`: ``plain`` writes one
dated record per line (``2026-11-28T22:37:02.123Z INFO logger message key=value``),
``json`` one JSON object per line, and ``auto`` the caller's terminal handler (rich, for
the command line) on a terminal and ``plain`` anywhere else (a file, a pipe, journald).
"""

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any, TextIO

LOG_FORMAT_VARIABLE = "ARGENTIC_TOOLS_LOG_FORMAT"
"""The environment variable that sets ``--log-format``'s default."""

LOG_FORMATS = ("auto", "plain", "json")
"""``--log-format``'s choices."""

# What every LogRecord has; any other attribute came from ``extra`` (a call's fields,
# an InstanceLogger's client id). uvicorn's ``color_message`` repeats the message.
_RECORD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",
    "taskName",
}


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


def _timestamp(record: logging.LogRecord) -> str:
    """The record's time as ISO 8601 UTC with milliseconds: ``2026-11-28T22:37:02.123Z``."""
    moment = datetime.fromtimestamp(record.created, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_fields(record: logging.LogRecord) -> dict[str, object]:
    """The fields a record was given through ``extra`` (client_id, tool, task_id, ...)."""
    return {
        key: value
        for key, value in record.__dict__.items()
        if key not in _RECORD_ATTRIBUTES and not key.startswith("_") and value is not None
    }


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _field_value(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if text and not any(char in text for char in ' "=\n\r'):
        return text
    return json.dumps(text)


class PlainFormatter(logging.Formatter):
    r"""One record per line: time (UTC), level, logger, message, then ``key=value`` fields.

    A message or a traceback over several lines stays on its line, its newlines written
    as ``\n``, so a collector that reads lines never splits a record.
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line."""
        parts = [_timestamp(record), record.levelname, record.name, record.getMessage()]
        fields = {**record_fields(record), **_trailer(self, record)}
        parts += [f"{key}={_field_value(value)}" for key, value in fields.items()]
        return _one_line(" ".join(parts))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time``, ``level``, ``logger``, ``message``, the fields.

    The fields are the record's ``extra`` (``client_id``, ``tool``, ``task_id``,
    ``trace_id``, ``user``, ...); an exception is ``exc``, its formatted traceback.
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON object, on one line."""
        entry: dict[str, object] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record_fields(record).items():
            entry.setdefault(key, value)
        entry.update(_trailer(self, record))
        return json.dumps(entry, default=str, ensure_ascii=False)


def _trailer(formatter: logging.Formatter, record: logging.LogRecord) -> dict[str, str]:
    """A record's exception (``exc``, its traceback) and stack (``stack``), when it has them."""
    exc = formatter.formatException(record.exc_info) if record.exc_info else record.exc_text
    return {key: value for key, value in (("exc", exc), ("stack", record.stack_info)) if value}


def default_log_format() -> str:
    """``$ARGENTIC_TOOLS_LOG_FORMAT`` when it names a format, else ``auto``."""
    value = os.environ.get(LOG_FORMAT_VARIABLE, "").strip().lower()
    return value if value in LOG_FORMATS else "auto"


def add_log_format_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--log-format auto|plain|json`` (default: ``$ARGENTIC_TOOLS_LOG_FORMAT``)."""
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=default_log_format(),
        help="how log records are written to stderr: auto (rich on a terminal, plain "
        "elsewhere), plain (one dated line per record) or json (one object per line); "
        f"${LOG_FORMAT_VARIABLE} sets the default",
    )


def log_handler(
    log_format: str,
    *,
    stream: TextIO | None = None,
    terminal: Callable[[], logging.Handler] | None = None,
) -> logging.Handler:
    """A handler writing ``log_format`` to ``stream`` (stderr).

    ``terminal`` makes the handler ``auto`` uses when ``stream`` is a terminal; without
    it, or off a terminal, ``auto`` is ``plain``.

    Raises:
        ValueError: ``log_format`` is not one of :data:`LOG_FORMATS`.

    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}; use one of {', '.join(LOG_FORMATS)}")
    out = sys.stderr if stream is None else stream
    if log_format == "auto" and terminal is not None and _is_terminal(out):
        return terminal()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
    return handler


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def configure_logging(
    level: "LogLevel | str | int",
    log_format: str = "auto",
    *,
    stream: TextIO | None = None,
    terminal: Callable[[], logging.Handler] | None = None,
) -> None:
    """Set up the process's logging: one handler on the root logger, at ``level``.

    Like :func:`logging.basicConfig`, it leaves a root logger that already has
    handlers (an application's own setup, pytest's capture) as it is.
    """
    handler = log_handler(log_format, stream=stream, terminal=terminal)
    handler.setLevel(parse_log_level(level))
    logging.basicConfig(level=parse_log_level(level), handlers=[handler])
