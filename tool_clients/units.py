"""Unit conversion tool microservice: length, mass, time and temperature.

Linear units are stored as exact factors to a base unit of their dimension (metre,
kilogram, second); temperatures (Celsius, Fahrenheit, Kelvin) are affine and convert
through Celsius. Unit names are matched case-insensitively and accept common aliases
("km", "kilometre", "kilometers"...). Results are rounded to 12 significant digits to
hide binary floating-point noise (1 ft is reported as 12.0 in, not 12.000000000000002).

Run it with::

    python -m tool_clients.units --broker mqtt://127.0.0.1:1883
"""

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from argentic_tools import ToolError, serve_main, tool

__all__ = ["ABSOLUTE_ZERO_CELSIUS", "UNITS", "Unit", "convert_units", "main", "resolve_unit"]

ABSOLUTE_ZERO_CELSIUS = -273.15
SIGNIFICANT_DIGITS = 12


@dataclass(frozen=True)
class Unit:
    """A unit of measurement.

    Attributes:
        symbol: Canonical symbol reported in results (``km``, ``lb``, ``C``...).
        dimension: Physical quantity measured: length, mass, time or temperature.
        factor: Size of the unit in the base unit of its dimension (linear units only).
        aliases: Other accepted spellings (matched case-insensitively).

    """

    symbol: str
    dimension: str
    factor: float = 1.0
    aliases: tuple[str, ...] = ()


_POUND_KG = 0.45359237  # exact, international avoirdupois pound

UNITS: tuple[Unit, ...] = (
    # length, base metre
    Unit("mm", "length", 0.001, ("millimeter", "millimeters", "millimetre", "millimetres")),
    Unit("cm", "length", 0.01, ("centimeter", "centimeters", "centimetre", "centimetres")),
    Unit("m", "length", 1.0, ("meter", "meters", "metre", "metres")),
    Unit("km", "length", 1000.0, ("kilometer", "kilometers", "kilometre", "kilometres")),
    Unit("in", "length", 0.0254, ("inch", "inches")),
    Unit("ft", "length", 0.3048, ("foot", "feet")),
    Unit("yd", "length", 0.9144, ("yard", "yards")),
    Unit("mi", "length", 1609.344, ("mile", "miles")),
    Unit("nmi", "length", 1852.0, ("nautical mile", "nautical miles")),
    # mass, base kilogram
    Unit("mg", "mass", 1e-6, ("milligram", "milligrams")),
    Unit("g", "mass", 0.001, ("gram", "grams", "gramme", "grammes")),
    Unit("kg", "mass", 1.0, ("kilogram", "kilograms", "kilo", "kilos")),
    Unit("t", "mass", 1000.0, ("tonne", "tonnes", "metric ton", "metric tons")),
    Unit("oz", "mass", _POUND_KG / 16, ("ounce", "ounces")),
    Unit("lb", "mass", _POUND_KG, ("lbs", "pound", "pounds")),
    Unit("st", "mass", _POUND_KG * 14, ("stone", "stones")),
    # time, base second
    Unit("ms", "time", 0.001, ("millisecond", "milliseconds")),
    Unit("s", "time", 1.0, ("sec", "secs", "second", "seconds")),
    Unit("min", "time", 60.0, ("minute", "minutes")),
    Unit("h", "time", 3600.0, ("hr", "hrs", "hour", "hours")),
    Unit("d", "time", 86400.0, ("day", "days")),
    Unit("wk", "time", 604800.0, ("week", "weeks")),
    # temperature, affine (converted through Celsius)
    Unit("C", "temperature", aliases=("°C", "degC", "celsius", "centigrade")),
    Unit("F", "temperature", aliases=("°F", "degF", "fahrenheit")),
    Unit("K", "temperature", aliases=("kelvin", "kelvins")),
)
"""All supported units."""

_LOOKUP: dict[str, Unit] = {
    spelling.casefold(): unit for unit in UNITS for spelling in (unit.symbol, *unit.aliases)
}
_DIMENSIONS: tuple[str, ...] = tuple(dict.fromkeys(unit.dimension for unit in UNITS))
KNOWN_UNITS_TEXT = "; ".join(
    f"{dimension}: {', '.join(u.symbol for u in UNITS if u.dimension == dimension)}"
    for dimension in _DIMENSIONS
)


def resolve_unit(name: str) -> Unit:
    """Return the unit named ``name`` (symbol or alias, case-insensitive).

    Raises:
        ToolError: If the unit is unknown; the message lists the known units.

    """
    unit = _LOOKUP.get(name.strip().casefold())
    if unit is None:
        raise ToolError(f"unknown unit '{name}'; known units are {KNOWN_UNITS_TEXT}")
    return unit


def _to_celsius(value: float, unit: Unit) -> float:
    if unit.symbol == "F":
        return (value - 32.0) * 5.0 / 9.0
    if unit.symbol == "K":
        return value + ABSOLUTE_ZERO_CELSIUS
    return value


def _from_celsius(celsius: float, unit: Unit) -> float:
    if unit.symbol == "F":
        return celsius * 9.0 / 5.0 + 32.0
    if unit.symbol == "K":
        return celsius - ABSOLUTE_ZERO_CELSIUS
    return celsius


def _tidy(value: float) -> float:
    """Round to :data:`SIGNIFICANT_DIGITS` significant digits (drops float noise)."""
    if value == 0:
        return 0.0  # also normalises -0.0
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


@tool(
    tags=["units", "math"],
    examples=[
        {
            "input": {"value": 5, "from_unit": "km", "to_unit": "mi"},
            "output": {"value": 3.10685596119, "from_unit": "km", "to_unit": "mi"},
        },
        {
            "input": {"value": 100, "from_unit": "C", "to_unit": "F"},
            "output": {"value": 212.0, "from_unit": "C", "to_unit": "F"},
        },
    ],
)
def convert_units(
    value: Annotated[float, Field(description="The quantity to convert, e.g. 12.5.")],
    from_unit: Annotated[
        str, Field(description="Unit of the given value, e.g. 'km', 'lb', 'F' or 'hours'.")
    ],
    to_unit: Annotated[
        str, Field(description="Unit to convert to; must measure the same quantity.")
    ],
) -> dict[str, float | str]:
    """Convert a quantity between units of length, mass, time or temperature.

    Known units (symbols; full names such as "kilometers", "pounds" or "fahrenheit" also
    work, case-insensitively): length: mm, cm, m, km, in, ft, yd, mi, nmi; mass: mg, g,
    kg, t (metric tonne), oz, lb, st; time: ms, s, min, h, d, wk; temperature: C, F, K.
    Both units must measure the same quantity. Results are rounded to 12 significant
    digits.

    Args:
        value: The quantity to convert.
        from_unit: Unit of the given value.
        to_unit: Unit to convert to.

    Returns:
        A dict with the converted "value" and the canonical "from_unit" and
        "to_unit" symbols.

    """
    if not math.isfinite(value):
        raise ToolError(f"value must be a finite number, got {value!r}")
    source = resolve_unit(from_unit)
    target = resolve_unit(to_unit)
    if source.dimension != target.dimension:
        raise ToolError(
            f"cannot convert '{from_unit}' ({source.dimension}) to '{to_unit}' "
            f"({target.dimension}): the units measure different quantities"
        )
    if source.dimension == "temperature":
        celsius = _to_celsius(value, source)
        if celsius < ABSOLUTE_ZERO_CELSIUS - 1e-9:
            raise ToolError(f"{value} {source.symbol} is below absolute zero")
        result = _from_celsius(celsius, target)
    else:
        result = value * source.factor / target.factor
    if not math.isfinite(result):
        raise ToolError(f"converting {value} {source.symbol} to {target.symbol} overflows")
    return {"value": _tidy(result), "from_unit": source.symbol, "to_unit": target.symbol}


def main(argv: list[str] | None = None) -> None:
    """Serve the unit conversion tool until SIGTERM or SIGINT."""
    serve_main(
        [convert_units],
        argv,
        prog="python -m tool_clients.units",
        description="Serve the 'convert_units' tool (length, mass, time, temperature) over MQTT.",
    )


if __name__ == "__main__":
    main()
