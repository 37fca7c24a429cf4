"""Small inline-SVG charts for the HTML report: grouped horizontal bars (with CI whiskers)
and histograms.

Hand-written on purpose: the report must be one self-contained file with no network, and a
plotting library would either need a CDN (Vega, Plotly's loader), embed megabytes of
JavaScript (plotly.js) or add a heavy dependency (matplotlib) for a handful of bar charts.
Native `<title>` elements give tooltips without any script.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

# Okabe-Ito-like palette, readable by colour-blind people, then a few more.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
    "#8C564B",
    "#7F7F7F",
    "#17BECF",
    "#BCBD22",
)
_FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="11"'
_CHAR_W = 6.2  # average glyph width at 11px, for label room


def colour(i: int) -> str:
    """The palette colour of series `i`."""
    return PALETTE[i % len(PALETTE)]


@dataclass(frozen=True, slots=True)
class Series:
    """One named series of a chart; `lows`/`highs` draw CI whiskers when given."""

    name: str
    values: Sequence[float | None]
    colour: str
    lows: Sequence[float | None] | None = None
    highs: Sequence[float | None] | None = None


def _fmt2(v: float) -> str:
    return f"{v:.2f}"


def _short(label: str, limit: int) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def _legend(series: Sequence[Series], x0: float, y: float) -> tuple[list[str], float]:
    """Legend items on rows; returns the elements and the height used."""
    out: list[str] = []
    x, row = x0, 0
    for s in series:
        w = 18 + len(s.name) * _CHAR_W + 14
        if x + w > x0 + 600 and x > x0:
            x, row = x0, row + 1
        yy = y + row * 16
        out.append(
            f'<rect x="{x:.1f}" y="{yy:.1f}" width="10" height="10" fill="{s.colour}"/>'
            f'<text x="{x + 14:.1f}" y="{yy + 9:.1f}">{escape(s.name)}</text>'
        )
        x += w
    return out, (row + 1) * 16 + 4 if series else 0


def grouped_hbars(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    domain: tuple[float, float] | None = (0.0, 1.0),
    fmt: Callable[[float], str] = _fmt2,
    width: int = 720,
    label: str = "",
) -> str:
    """Horizontal bars: one group per category, one bar per series, optional CI whiskers.
    `domain=None` fits the axis to the data (counts, differences); 0 is always shown."""
    values = [v for s in series for v in s.values if v is not None]
    whiskers = [w for s in series for w in (*(s.lows or []), *(s.highs or [])) if w is not None]
    if domain is None:
        everything = [0.0, *values, *whiskers]
        lo, hi = min(everything), max(everything)
        if hi == lo:
            hi = lo + 1.0
        if lo == 0 and all(float(v).is_integer() for v in values):
            hi = math.ceil(hi / 4) * 4  # counts: whole-number ticks
    else:
        lo, hi = domain
    label_chars = min(36, max((len(c) for c in categories), default=4))
    left = 12 + label_chars * _CHAR_W
    right = 64
    plot_w = max(120.0, width - left - right)
    legend, legend_h = _legend(series, left, 4) if len(series) > 1 else ([], 0)
    top = 8 + legend_h
    bar_h = 12 if len(series) > 1 else 14
    group_h = len(series) * (bar_h + 2) + 8
    height = top + len(categories) * group_h + 26

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return left + (v - lo) / (hi - lo) * plot_w

    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height:.0f}" viewBox="0 0 {width} {height:.0f}" role="img" '
        f'aria-label="{escape(label)}" {_FONT}>',
        *legend,
    ]
    axis_y = top + len(categories) * group_h
    for t in _ticks(lo, hi):
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{top - 4:.1f}" x2="{x(t):.1f}" y2="{axis_y:.1f}" '
            'stroke="#e3e3e3"/>'
            f'<text x="{x(t):.1f}" y="{axis_y + 14:.1f}" text-anchor="middle" '
            f'fill="#555">{escape(fmt(t))}</text>'
        )
    zero = x(0.0) if lo <= 0 <= hi else x(lo)
    if lo < 0 < hi:
        parts.append(
            f'<line x1="{zero:.1f}" y1="{top - 4:.1f}" x2="{zero:.1f}" y2="{axis_y:.1f}" '
            'stroke="#888" stroke-dasharray="3,2"/>'
        )
    for ci, cat in enumerate(categories):
        gy = top + ci * group_h
        mid = gy + (group_h - 8) / 2
        parts.append(
            f'<text x="{left - 6:.1f}" y="{mid + 4:.1f}" text-anchor="end">'
            f"<title>{escape(cat)}</title>{escape(_short(cat, 36))}</text>"
        )
        for si, s in enumerate(series):
            v = s.values[ci] if ci < len(s.values) else None
            y = gy + si * (bar_h + 2)
            if v is None:
                parts.append(
                    f'<text x="{left + 4:.1f}" y="{y + bar_h - 2:.1f}" fill="#999">n/a</text>'
                )
                continue
            x0, x1 = sorted((zero, x(v)))
            low = s.lows[ci] if s.lows and ci < len(s.lows) else None
            high = s.highs[ci] if s.highs and ci < len(s.highs) else None
            tip = f"{cat} — {s.name}: {fmt(v)}"
            if low is not None and high is not None:
                tip += f" (95% CI {fmt(low)} to {fmt(high)})"
            parts.append(
                f'<rect x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 1):.1f}" '
                f'height="{bar_h}" fill="{s.colour}" fill-opacity="0.85">'
                f"<title>{escape(tip)}</title></rect>"
            )
            if low is not None and high is not None:
                cy = y + bar_h / 2
                parts.append(
                    f'<path d="M{x(low):.1f},{cy:.1f}H{x(high):.1f}'
                    f"M{x(low):.1f},{cy - 4:.1f}V{cy + 4:.1f}"
                    f'M{x(high):.1f},{cy - 4:.1f}V{cy + 4:.1f}" stroke="#222" '
                    'stroke-width="1.3" fill="none"/>'
                )
            parts.append(
                f'<text x="{left + plot_w + 6:.1f}" y="{y + bar_h - 2:.1f}">{escape(fmt(v))}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    edges: Sequence[float],
    series: Sequence[Series],
    *,
    width: int = 360,
    height: int = 170,
    label: str = "",
) -> str:
    """Grouped vertical bars of counts per bin (`edges` has one more entry than bins)."""
    bins = len(edges) - 1
    left, right, bottom = 36, 8, 22
    legend, legend_h = _legend(series, left, 2) if len(series) > 1 else ([], 0)
    top = 8 + legend_h
    total_h = height + legend_h
    plot_w, plot_h = width - left - right, total_h - top - bottom
    peak = max((v or 0 for s in series for v in s.values), default=0) or 1
    slot = plot_w / max(bins, 1)
    bar_w = max(1.0, (slot - 2) / max(len(series), 1))
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{total_h}" viewBox="0 0 {width} {total_h}" role="img" '
        f'aria-label="{escape(label)}" {_FONT}>',
        *legend,
    ]
    for t in _ticks(0, peak, 3):
        y = top + plot_h - t / peak * plot_h
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{t:.0f}</text>'
        )
    for b in range(bins):
        for si, s in enumerate(series):
            count = s.values[b] or 0
            h = count / peak * plot_h
            x = left + b * slot + 1 + si * bar_w
            close = "]" if b == bins - 1 else ")"
            tip = f"{s.name}: {count:.0f} in [{edges[b]:g}, {edges[b + 1]:g}{close}"
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w:.1f}" '
                f'height="{h:.1f}" fill="{s.colour}" fill-opacity="0.85">'
                f"<title>{escape(tip)}</title></rect>"
            )
    for i in (0, bins // 2, bins):
        x = left + i * slot
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 14:.1f}" text-anchor="middle" '
            f'fill="#555">{edges[i]:g}</text>'
        )
    parts.append(
        f'<line x1="{left}" y1="{top + plot_h:.1f}" x2="{left + plot_w}" '
        f'y2="{top + plot_h:.1f}" stroke="#888"/></svg>'
    )
    return "".join(parts)


def line_chart(
    xs: Sequence[str],
    series: Sequence[Series],
    *,
    width: int = 720,
    height: int = 200,
    label: str = "",
) -> str:
    """One line per series over the categories `xs` (runs in time order), a dot per value
    with a tooltip; a missing value breaks the line. The y axis fits the data and always
    shows 0 for data in [0, 1]."""
    values = [v for s in series for v in s.values if v is not None]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if values and lo >= 0 and hi <= 1:
        lo, hi = 0.0, 1.0
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    left, right, bottom = 48, 44, 30
    legend, legend_h = _legend(series, left, 2) if len(series) > 1 else ([], 0)
    top = 10 + legend_h
    total_h = height + legend_h
    plot_w, plot_h = width - left - right, total_h - top - bottom
    step = plot_w / max(len(xs) - 1, 1)

    def x(i: int) -> float:
        return left + (i * step if len(xs) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h - (v - lo) / (hi - lo) * plot_h

    parts = [
        f'<svg class="chart trend" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{total_h}" viewBox="0 0 {width} {total_h}" role="img" '
        f'aria-label="{escape(label)}" {_FONT}>',
        *legend,
    ]
    for t in _ticks(lo, hi, 5):
        parts.append(
            f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + plot_w}" y2="{y(t):.1f}" '
            f'stroke="#e3e3e3"/><text x="{left - 4}" y="{y(t) + 4:.1f}" text-anchor="end" '
            f'fill="#555">{_fmt2(t)}</text>'
        )
    every = max(1, math.ceil(len(xs) / 8))  # at most ~8 x labels
    for i, name in enumerate(xs):
        if i % every == 0 or i == len(xs) - 1:
            parts.append(
                f'<text x="{x(i):.1f}" y="{top + plot_h + 16:.1f}" text-anchor="middle" '
                f'fill="#555">{escape(_short(name, 18))}</text>'
            )
    for s in series:
        run: list[str] = []
        segments: list[list[str]] = [run]
        for i, v in enumerate(s.values):
            if v is None:
                run = []
                segments.append(run)
                continue
            run.append(f"{x(i):.1f},{y(v):.1f}")
        for seg in segments:
            if len(seg) > 1:
                parts.append(
                    f'<polyline fill="none" stroke="{s.colour}" stroke-width="2" '
                    f'points="{" ".join(seg)}"/>'
                )
        for i, v in enumerate(s.values):
            if v is not None:
                tip = f"{s.name} · {xs[i]}: {v:.4g}"
                parts.append(
                    f'<circle class="pt" cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.5" '
                    f'fill="{s.colour}"><title>{escape(tip)}</title></circle>'
                )
    parts.append(
        f'<line x1="{left}" y1="{top + plot_h:.1f}" x2="{left + plot_w}" '
        f'y2="{top + plot_h:.1f}" stroke="#888"/></svg>'
    )
    return "".join(parts)
