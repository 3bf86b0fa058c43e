"""Pure-logic tests of the unit conversion tool (called directly, no broker)."""

import pytest

from argentic_tools import ToolError
from tool_clients.units import UNITS, convert_units, resolve_unit


@pytest.mark.parametrize(
    ("value", "from_unit", "to_unit", "expected"),
    [
        (1, "km", "m", 1000.0),
        (1, "mi", "km", 1.609344),
        (1, "ft", "in", 12.0),
        (3, "ft", "yd", 1.0),
        (1, "nmi", "m", 1852.0),
        (250, "cm", "m", 2.5),
        (1, "kg", "lb", 2.20462262185),
        (16, "oz", "lb", 1.0),
        (1, "st", "lb", 14.0),
        (1, "t", "kg", 1000.0),
        (500, "mg", "g", 0.5),
        (2, "h", "min", 120.0),
        (1, "d", "s", 86400.0),
        (1, "wk", "d", 7.0),
        (1500, "ms", "s", 1.5),
    ],
)
def test_convert_units_converts_linear_units(
    value: float, from_unit: str, to_unit: str, expected: float
) -> None:
    result = convert_units(value, from_unit, to_unit)
    assert result["value"] == pytest.approx(expected, rel=1e-11)


@pytest.mark.parametrize(
    ("value", "from_unit", "to_unit", "expected"),
    [
        (100, "C", "F", 212.0),
        (0, "C", "F", 32.0),
        (-40, "C", "F", -40.0),
        (212, "F", "C", 100.0),
        (98.6, "F", "C", 37.0),
        (0, "K", "C", -273.15),
        (300, "K", "C", 26.85),
        (0, "C", "K", 273.15),
        (32, "F", "K", 273.15),
        (0, "K", "F", -459.67),
        (20, "C", "C", 20.0),
    ],
)
def test_convert_units_converts_temperatures_affinely(
    value: float, from_unit: str, to_unit: str, expected: float
) -> None:
    assert convert_units(value, from_unit, to_unit)["value"] == expected


def test_convert_units_returns_value_and_canonical_unit_symbols() -> None:
    assert convert_units(5, "Kilometers", "MILES") == {
        "value": 3.10685596119,
        "from_unit": "km",
        "to_unit": "mi",
    }


@pytest.mark.parametrize(
    ("alias", "symbol"),
    [
        ("meter", "m"),
        ("metres", "m"),
        ("Feet", "ft"),
        ("lbs", "lb"),
        ("pounds", "lb"),
        ("°C", "C"),
        ("celsius", "C"),
        ("Fahrenheit", "F"),
        ("kelvin", "K"),
        ("hours", "h"),
        ("  minute  ", "min"),
        ("nautical miles", "nmi"),
    ],
)
def test_resolve_unit_accepts_aliases_case_insensitively(alias: str, symbol: str) -> None:
    assert resolve_unit(alias).symbol == symbol


def test_convert_units_hides_float_noise() -> None:
    assert convert_units(0.1, "m", "cm")["value"] == 10.0
    assert convert_units(1, "ft", "in")["value"] == 12.0


def test_convert_units_round_trip_is_stable() -> None:
    there = convert_units(42.0, "lb", "kg")["value"]
    assert isinstance(there, float)
    back = convert_units(there, "kg", "lb")["value"]
    assert back == pytest.approx(42.0, rel=1e-11)


def test_convert_units_rejects_unknown_unit_listing_known_ones() -> None:
    with pytest.raises(ToolError) as excinfo:
        convert_units(1, "furlong", "m")
    message = str(excinfo.value)
    assert "unknown unit 'furlong'" in message
    for unit in UNITS:
        assert unit.symbol in message
    assert "length:" in message
    assert "temperature:" in message


def test_convert_units_rejects_unknown_target_unit() -> None:
    with pytest.raises(ToolError, match="unknown unit 'parsec'"):
        convert_units(1, "m", "parsec")


@pytest.mark.parametrize(
    ("from_unit", "to_unit", "dimensions"),
    [
        ("kg", "m", ("mass", "length")),
        ("C", "s", ("temperature", "time")),
        ("h", "km", ("time", "length")),
    ],
)
def test_convert_units_rejects_incompatible_dimensions(
    from_unit: str, to_unit: str, dimensions: tuple[str, str]
) -> None:
    with pytest.raises(ToolError, match="different quantities") as excinfo:
        convert_units(1, from_unit, to_unit)
    message = str(excinfo.value)
    assert f"'{from_unit}' ({dimensions[0]})" in message
    assert f"'{to_unit}' ({dimensions[1]})" in message


@pytest.mark.parametrize(("value", "unit"), [(-1, "K"), (-300, "C"), (-500, "F")])
def test_convert_units_rejects_temperatures_below_absolute_zero(value: float, unit: str) -> None:
    with pytest.raises(ToolError, match="below absolute zero"):
        convert_units(value, unit, "C")


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_convert_units_rejects_non_finite_values(value: float) -> None:
    with pytest.raises(ToolError, match="finite"):
        convert_units(value, "m", "km")


def test_convert_units_rejects_overflowing_result() -> None:
    with pytest.raises(ToolError, match="overflows"):
        convert_units(1e308, "km", "mm")


def test_every_unit_symbol_is_unique_and_resolvable() -> None:
    symbols = [unit.symbol for unit in UNITS]
    assert len(symbols) == len(set(symbols))
    for unit in UNITS:
        assert resolve_unit(unit.symbol) is unit
