"""Pure-logic tests of the clock tool (called directly, no broker)."""

import datetime as dt
import re
import zoneinfo

import pytest

from argentic_tools import ToolError
from tool_clients.clock import current_time, describe_time, load_zone

INSTANT = dt.datetime(2025, 7, 14, 12, 30, 5, tzinfo=dt.UTC)


def test_current_time_defaults_to_utc() -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    result = current_time()
    after = dt.datetime.now(dt.UTC)
    assert result["timezone"] == "UTC"
    assert result["utc_offset"] == "+00:00"
    stamp = dt.datetime.fromisoformat(result["timestamp"])
    assert before <= stamp <= after


def test_current_time_in_named_zone_has_matching_offset() -> None:
    result = current_time("Asia/Tokyo")
    assert result["timezone"] == "Asia/Tokyo"
    assert result["utc_offset"] == "+09:00"
    assert result["timestamp"].endswith("+09:00")
    assert result["abbreviation"] == "JST"


def test_current_time_returns_documented_keys() -> None:
    assert set(current_time("Europe/Paris")) == {
        "timestamp",
        "timezone",
        "utc_offset",
        "date",
        "time",
        "weekday",
        "abbreviation",
    }


def test_describe_time_applies_daylight_saving_time() -> None:
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    summer = describe_time(INSTANT, paris, "Europe/Paris")
    winter = describe_time(INSTANT.replace(month=1), paris, "Europe/Paris")
    assert summer["utc_offset"] == "+02:00"
    assert summer["abbreviation"] == "CEST"
    assert summer["timestamp"] == "2025-07-14T14:30:05+02:00"
    assert winter["utc_offset"] == "+01:00"
    assert winter["abbreviation"] == "CET"


def test_describe_time_formats_negative_and_fractional_offsets() -> None:
    new_york = describe_time(INSTANT, zoneinfo.ZoneInfo("America/New_York"), "America/New_York")
    assert new_york["utc_offset"] == "-04:00"
    assert new_york["date"] == "2025-07-14"
    assert new_york["time"] == "08:30:05"
    assert new_york["weekday"] == "Monday"
    kolkata = describe_time(INSTANT, zoneinfo.ZoneInfo("Asia/Kolkata"), "Asia/Kolkata")
    assert kolkata["utc_offset"] == "+05:30"
    st_johns = describe_time(
        INSTANT.replace(month=1), zoneinfo.ZoneInfo("America/St_Johns"), "America/St_Johns"
    )
    assert st_johns["utc_offset"] == "-03:30"


def test_describe_time_crosses_the_date_line() -> None:
    late = dt.datetime(2025, 12, 31, 23, 0, tzinfo=dt.UTC)
    result = describe_time(late, zoneinfo.ZoneInfo("Pacific/Auckland"), "Pacific/Auckland")
    assert result["date"] == "2026-01-01"


@pytest.mark.parametrize("name", ["UTC", "utc", " UTC ", "Z"])
def test_load_zone_accepts_utc_spellings_without_database(name: str) -> None:
    assert load_zone(name) is dt.UTC


def test_current_time_rejects_unknown_zone_naming_it() -> None:
    with pytest.raises(ToolError, match=re.escape("unknown timezone 'Mars/Olympus_Mons'")):
        current_time("Mars/Olympus_Mons")


@pytest.mark.parametrize("name", ["", "   ", "../../etc/passwd", "/etc/localtime", "a" * 500])
def test_current_time_rejects_invalid_zone_keys(name: str) -> None:
    with pytest.raises(ToolError, match="unknown timezone"):
        current_time(name)


def test_current_time_suggests_correct_case_for_misspelled_zone() -> None:
    with pytest.raises(ToolError, match=re.escape("did you mean 'Europe/Paris'?")):
        current_time("europe/paris")
