"""Shared helpers for benchmark sections: a measurement row and a table printer.

A section returns ``Measurement`` rows; each names what was measured, its value,
and the baseline measured in the same run. ``ratio`` is value / baseline, so for
times "lower is better" and for rates "higher is better" (``higher_is_better``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Measurement:
    name: str
    value: float
    unit: str
    baseline_name: str | None = None
    baseline_value: float | None = None
    higher_is_better: bool = False
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline_value in (None, 0):
            return None
        assert self.baseline_value is not None
        return self.value / self.baseline_value

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "ratio": self.ratio}


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def times_ms(fn: Callable[[], object], runs: int) -> list[float]:
    """Wall-clock milliseconds of ``runs`` calls of ``fn``."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[k]


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def format_table(rows: Sequence[Measurement], title: str) -> str:
    header = ("measurement", "value", "baseline (same run)", "baseline value", "ratio")
    body = [
        (
            r.name,
            _fmt(r.value, r.unit),
            r.baseline_name or "-",
            _fmt(r.baseline_value, r.unit),
            "-" if r.ratio is None else f"{r.ratio:.2f}x" + (" (higher=better)" if r.higher_is_better else ""),
        )
        for r in rows
    ]
    widths = [max(len(str(c)) for c in col) for col in zip(header, *body, strict=False)]
    lines = [f"## {title}", " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) for row in body]
    notes = [f"  * {r.name}: {r.note}" for r in rows if r.note]
    return "\n".join(lines + notes) + "\n"
