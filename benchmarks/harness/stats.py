"""Small statistics helpers: percentiles, medians with ranges, formatting."""

import math
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (``pct`` in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * pct / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    clean = [v for v in values if not math.isnan(v)]
    return statistics.median(clean) if clean else math.nan


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def fmt_range(values: Sequence[float], digits: int = 2) -> str:
    """``median (min-max)`` over repetitions, or the single value."""
    clean = [v for v in values if not math.isnan(v)]
    if not clean:
        return "n/a"
    if len(clean) == 1:
        return fmt(clean[0], digits)
    return f"{fmt(median(clean), digits)} ({fmt(min(clean), digits)}-{fmt(max(clean), digits)})"


def ratio(a: float | None, b: float | None) -> float:
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    return a / b
