"""Weather tool microservice: a deterministic, offline forecast simulator.

No network access and no randomness: every number is derived from SHA-256 digests of the
normalised city name (case and surrounding/duplicate whitespace are ignored) and of the
day index, so the same arguments always produce the same forecast on every machine and
every run. Forecast dates do not depend on the wall clock either: day ``n`` (1-based) of
every forecast is ``BASE_DATE + (n - 1) days``, i.e. forecasts always start on
2025-01-01. This makes the tool suitable for demos and reproducible tests.

The special city ``error_city`` always fails, to exercise error handling end to end.

Run it with::

    python -m tool_clients.weather --broker mqtt://127.0.0.1:1883
"""

import datetime as dt
import hashlib
from typing import Annotated, Any, Literal

from pydantic import Field

from argentic_tools import ToolError, serve_main, tool

__all__ = ["BASE_DATE", "CONDITIONS", "ERROR_CITY", "MAX_DAYS", "get_weather", "main"]

BASE_DATE = dt.date(2025, 1, 1)
"""Date of the first forecast day (fixed, so results never depend on the clock)."""

MAX_DAYS = 7
MAX_CITY_LENGTH = 100
ERROR_CITY = "error_city"

CONDITIONS: tuple[str, ...] = (
    "sunny",
    "partly cloudy",
    "cloudy",
    "fog",
    "showers",
    "rain",
    "thunderstorms",
    "snow",
)
"""Every condition the simulator can report."""

_PRECIPITATION_RANGES: dict[str, tuple[int, int]] = {
    "sunny": (0, 10),
    "partly cloudy": (5, 20),
    "cloudy": (15, 40),
    "fog": (10, 30),
    "showers": (40, 70),
    "rain": (60, 90),
    "thunderstorms": (70, 100),
    "snow": (60, 90),
}


def _fractions(seed: str) -> list[float]:
    """Return eight deterministic numbers in ``[0, 1)`` derived from ``seed``."""
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    return [int.from_bytes(digest[i : i + 4], "big") / 2**32 for i in range(0, 32, 4)]


def _condition(wetness: float, fog_roll: float, high_c: float) -> str:
    if wetness > 0.78:
        if high_c <= 1.0:
            return "snow"
        return "thunderstorms" if high_c >= 22.0 else "rain"
    if wetness > 0.62:
        return "snow" if high_c <= 1.0 else "showers"
    if wetness > 0.45:
        return "fog" if fog_roll > 0.8 else "cloudy"
    if wetness > 0.28:
        return "partly cloudy"
    return "sunny"


def _celsius_to_fahrenheit(celsius: float) -> float:
    return celsius * 9.0 / 5.0 + 32.0


def _normalise_city(city: str) -> str:
    return " ".join(city.split())


@tool(
    tags=["weather"],
    examples=[
        {
            "input": {"city": "Paris", "days": 1, "units": "metric"},
            "output": {
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
            },
        }
    ],
)
def get_weather(
    city: Annotated[str, Field(description="City name, e.g. 'Paris' or 'New York'.")],
    days: Annotated[
        int, Field(ge=1, le=MAX_DAYS, description="Number of forecast days, from 1 to 7.")
    ] = 1,
    units: Annotated[
        Literal["metric", "imperial"],
        Field(description="'metric' for degrees Celsius, 'imperial' for degrees Fahrenheit."),
    ] = "metric",
) -> dict[str, Any]:
    """Get the daily weather forecast for a city (simulated, offline data).

    Returns one entry per day with the date (YYYY-MM-DD), a condition (sunny, partly
    cloudy, cloudy, fog, showers, rain, thunderstorms or snow), the high and low
    temperatures (degrees Celsius for metric, Fahrenheit for imperial) and the chance of
    precipitation in percent. The data is simulated and reproducible: forecasts always
    start on 2025-01-01 and the same city always gets the same weather.

    Args:
        city: Name of the city.
        days: Number of days to forecast (1 to 7).
        units: Unit system for temperatures: "metric" or "imperial".

    Returns:
        A dict with "city", "units" and a "forecast" list of daily entries.

    """
    name = _normalise_city(city)
    if not name:
        raise ToolError("city must not be empty")
    if len(name) > MAX_CITY_LENGTH:
        raise ToolError(f"city name is too long ({len(name)} characters, limit {MAX_CITY_LENGTH})")
    if isinstance(days, bool) or not 1 <= days <= MAX_DAYS:
        raise ToolError(f"days must be between 1 and {MAX_DAYS}, got {days!r}")
    if units not in ("metric", "imperial"):
        raise ToolError(f"units must be 'metric' or 'imperial', got {units!r}")
    key = name.casefold()
    if key == ERROR_CITY:
        raise ToolError(f"Weather service unavailable for '{name}'")

    climate = _fractions(f"climate|{key}")
    base_c = -5.0 + 30.0 * climate[0]  # typical mid-day temperature of the city
    daily_swing = 4.0 + 8.0 * climate[1]  # typical high/low spread
    humidity = climate[2]

    forecast: list[dict[str, Any]] = []
    for index in range(days):
        roll = _fractions(f"day|{key}|{index}")
        mid_c = base_c + (roll[0] - 0.5) * 8.0
        swing = daily_swing * (0.7 + 0.6 * roll[1])
        high_c = mid_c + swing / 2
        low_c = mid_c - swing / 2
        condition = _condition(0.5 * humidity + 0.5 * roll[2], roll[3], high_c)
        lowest, highest = _PRECIPITATION_RANGES[condition]
        precipitation = lowest + int(roll[4] * (highest - lowest + 1))
        if units == "imperial":
            high, low = _celsius_to_fahrenheit(high_c), _celsius_to_fahrenheit(low_c)
        else:
            high, low = high_c, low_c
        forecast.append(
            {
                "date": (BASE_DATE + dt.timedelta(days=index)).isoformat(),
                "condition": condition,
                "temperature_high": round(high, 1),
                "temperature_low": round(low, 1),
                "precipitation_chance": precipitation,
            }
        )
    return {"city": name, "units": units, "forecast": forecast}


def main(argv: list[str] | None = None) -> None:
    """Serve the weather tool until SIGTERM or SIGINT."""
    serve_main(
        [get_weather],
        argv,
        prog="python -m tool_clients.weather",
        description="Serve the 'get_weather' tool (deterministic offline forecasts) over MQTT.",
    )


if __name__ == "__main__":
    main()
