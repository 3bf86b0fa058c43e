"""Clock tool microservice: the current date and time in any IANA time zone.

Time zones come from :mod:`zoneinfo`, i.e. the system time-zone database (or the
``tzdata`` package when installed). ``UTC`` always works, even without a database.

Run it with::

    python -m tool_clients.clock --broker mqtt://127.0.0.1:1883
"""

import datetime as dt
import functools
import zoneinfo
from typing import Annotated

from pydantic import Field

from argentic_tools import ToolError, serve_main, tool

__all__ = ["current_time", "describe_time", "load_zone", "main"]

MAX_ZONE_LENGTH = 64
_UTC_NAMES = frozenset({"utc", "z"})


@functools.cache
def _zones_by_casefold() -> dict[str, str]:
    try:
        names = zoneinfo.available_timezones()
    except OSError:  # pragma: no cover - unreadable database
        names = set()
    return {name.casefold(): name for name in names}


def load_zone(name: str) -> dt.tzinfo:
    """Return the time zone called ``name`` (an IANA name such as "Europe/Paris").

    Raises:
        ToolError: If no such zone exists; the message names it and, when the name only
            differs by case from a known zone, suggests the right spelling.

    """
    key = name.strip()
    if key.casefold() in _UTC_NAMES:
        return dt.UTC
    if key and len(key) <= MAX_ZONE_LENGTH:
        try:
            return zoneinfo.ZoneInfo(key)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            pass
    suggestion = _zones_by_casefold().get(key.casefold())
    hint = f"; did you mean '{suggestion}'?" if suggestion else ""
    raise ToolError(
        f"unknown timezone '{name}': use an IANA time zone name such as 'UTC', "
        f"'Europe/Paris' or 'America/New_York'{hint}"
    )


def describe_time(now: dt.datetime, zone: dt.tzinfo, zone_name: str) -> dict[str, str]:
    """Describe the aware instant ``now`` as seen in ``zone``.

    Returns:
        A dict with ``timestamp`` (ISO 8601 with offset), ``timezone``, ``utc_offset``
        ("+HH:MM"), ``date``, ``time``, ``weekday`` and ``abbreviation``.

    """
    local = now.astimezone(zone)
    offset = local.utcoffset() or dt.timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return {
        "timestamp": local.isoformat(timespec="seconds"),
        "timezone": zone_name,
        "utc_offset": f"{sign}{hours:02d}:{mins:02d}",
        "date": local.date().isoformat(),
        "time": local.strftime("%H:%M:%S"),
        "weekday": local.strftime("%A"),
        "abbreviation": local.tzname() or "",
    }


@tool(
    tags=["time"],
    examples=[
        {
            "input": {"timezone": "Europe/Paris"},
            "output": {
                "timestamp": "2025-01-01T13:45:00+01:00",
                "timezone": "Europe/Paris",
                "utc_offset": "+01:00",
                "date": "2025-01-01",
                "time": "13:45:00",
                "weekday": "Wednesday",
                "abbreviation": "CET",
            },
        }
    ],
)
def current_time(
    timezone: Annotated[
        str,
        Field(description="IANA time zone name, e.g. 'UTC', 'Europe/Paris', 'Asia/Tokyo'."),
    ] = "UTC",
) -> dict[str, str]:
    """Get the current date and time in a time zone.

    Use this whenever you need today's date or the current time; do not guess them.
    Daylight-saving time is taken into account.

    Args:
        timezone: IANA time zone name (Region/City), defaults to "UTC".

    Returns:
        A dict with the ISO 8601 "timestamp", the "timezone", the "utc_offset"
        ("+HH:MM"), the local "date", "time" and "weekday", and the zone
        "abbreviation" (e.g. "CET").

    """
    zone = load_zone(timezone)
    name = "UTC" if zone is dt.UTC else timezone.strip()
    return describe_time(dt.datetime.now(dt.UTC), zone, name)


def main(argv: list[str] | None = None) -> None:
    """Serve the clock tool until SIGTERM or SIGINT."""
    serve_main(
        [current_time],
        argv,
        prog="python -m tool_clients.clock",
        description="Serve the 'current_time' tool (time-zone aware clock) over MQTT.",
    )


if __name__ == "__main__":
    main()
