"""Pure-logic tests of the offline weather tool (called directly, no broker)."""

import datetime as dt

import pytest

from argentic_tools import ToolError
from tool_clients.weather import BASE_DATE, CONDITIONS, MAX_DAYS, get_weather


def test_get_weather_is_deterministic_for_the_same_arguments() -> None:
    assert get_weather("Paris", 7, "metric") == get_weather("Paris", 7, "metric")


def test_get_weather_matches_known_output_across_runs() -> None:
    # Pinned value: the forecast must not change between runs, machines or Python versions.
    assert get_weather("Paris") == {
        "city": "Paris",
        "units": "metric",
        "forecast": [
            {
                "date": "2025-01-01",
                "condition": "cloudy",
                "temperature_high": 2.3,
                "temperature_low": -3.5,
                "precipitation_chance": 29,
            }
        ],
    }


def test_get_weather_ignores_case_and_extra_whitespace_of_city() -> None:
    reference = get_weather("New York", 3)["forecast"]
    assert get_weather("  new   YORK ", 3)["forecast"] == reference
    assert get_weather("  new   YORK ", 3)["city"] == "new YORK"


def test_get_weather_differs_between_cities() -> None:
    assert get_weather("Paris", 7)["forecast"] != get_weather("London", 7)["forecast"]


def test_get_weather_longer_forecast_extends_the_shorter_one() -> None:
    short = get_weather("Oslo", 3)["forecast"]
    long = get_weather("Oslo", 7)["forecast"]
    assert long[:3] == short


@pytest.mark.parametrize("days", range(1, MAX_DAYS + 1))
def test_get_weather_returns_one_entry_per_consecutive_day_from_base_date(days: int) -> None:
    forecast = get_weather("Tokyo", days)["forecast"]
    assert [entry["date"] for entry in forecast] == [
        (BASE_DATE + dt.timedelta(days=offset)).isoformat() for offset in range(days)
    ]
    assert forecast[0]["date"] == "2025-01-01"


CITIES = ["Paris", "London", "Oslo", "Cairo", "Lima", "Reykjavik", "Moscow"]


@pytest.mark.parametrize("city", CITIES)
def test_get_weather_entries_are_well_formed(city: str) -> None:
    result = get_weather(city, MAX_DAYS)
    assert set(result) == {"city", "units", "forecast"}
    for entry in result["forecast"]:
        assert set(entry) == {
            "date",
            "condition",
            "temperature_high",
            "temperature_low",
            "precipitation_chance",
        }
        assert entry["condition"] in CONDITIONS
        assert entry["temperature_low"] <= entry["temperature_high"]
        assert -30 <= entry["temperature_low"] <= 45
        assert isinstance(entry["precipitation_chance"], int)
        assert 0 <= entry["precipitation_chance"] <= 100


def test_get_weather_imperial_is_metric_converted_to_fahrenheit() -> None:
    metric = get_weather("Berlin", 5, "metric")
    imperial = get_weather("Berlin", 5, "imperial")
    assert imperial["units"] == "imperial"
    for celsius, fahrenheit in zip(metric["forecast"], imperial["forecast"], strict=True):
        assert fahrenheit["condition"] == celsius["condition"]
        assert fahrenheit["precipitation_chance"] == celsius["precipitation_chance"]
        for key in ("temperature_high", "temperature_low"):
            assert fahrenheit[key] == pytest.approx(celsius[key] * 9 / 5 + 32, abs=0.2)


def test_get_weather_snow_only_when_cold() -> None:
    for city in ["Tokyo", "Oslo", "Moscow", "Helsinki", "Montreal", "Denver", "Lima", "Quito"]:
        for entry in get_weather(city, MAX_DAYS)["forecast"]:
            if entry["condition"] == "snow":
                assert entry["temperature_high"] <= 1.0


def test_get_weather_error_city_raises_service_unavailable() -> None:
    with pytest.raises(ToolError) as excinfo:
        get_weather("error_city")
    assert str(excinfo.value) == "Weather service unavailable for 'error_city'"


def test_get_weather_error_city_is_matched_case_insensitively() -> None:
    with pytest.raises(ToolError, match="Weather service unavailable"):
        get_weather(" ERROR_CITY ", 3, "imperial")


@pytest.mark.parametrize("days", [0, -1, MAX_DAYS + 1, 100])
def test_get_weather_rejects_days_out_of_range(days: int) -> None:
    with pytest.raises(ToolError, match="days must be between 1 and 7"):
        get_weather("Paris", days)


def test_get_weather_rejects_unknown_units() -> None:
    with pytest.raises(ToolError, match="units must be"):
        get_weather("Paris", 1, "kelvin")  # type: ignore[arg-type]


@pytest.mark.parametrize("city", ["", "   ", "\t\n"])
def test_get_weather_rejects_empty_city(city: str) -> None:
    with pytest.raises(ToolError, match="city must not be empty"):
        get_weather(city)


def test_get_weather_rejects_overlong_city() -> None:
    with pytest.raises(ToolError, match="too long"):
        get_weather("x" * 500)
