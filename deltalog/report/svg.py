"""Charts as inline SVG text: no script, no fonts or images fetched, nothing but markup.

Each mark carries its numbers in ``data-*`` attributes and a ``<title>`` (the browser's own
tooltip), so the page can be read back by a test or a script, and hovered by a person.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

#: Colours of the marks (also used by the page's legend).
ADDED = "#2e7d32"
REMOVED = "#c62828"
NEUTRAL = "#1565c0"
SMALL = "#ef6c00"
GRID = "#d0d7de"
INK = "#24292f"
MUTED = "#57606a"
#: Colours for operations, in order of first appearance.
PALETTE = (
    "#1565c0",
    "#6a1b9a",
    "#00838f",
    "#ef6c00",
    "#2e7d32",
    "#ad1457",
    "#4e342e",
    "#558b2f",
    "#283593",
    "#9e9d24",
)


def attrs(values: Mapping[str, object]) -> str:
    """``key="value"`` pairs, escaped (``None`` values left out)."""
    return "".join(
        f' {k}="{escape(str(v), quote=True)}"' for k, v in values.items() if v is not None
    )


def _text(x: float, y: float, body: str, *, anchor: str = "start", cls: str = "label") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" class="{cls}">{escape(body)}</text>'
    )


@dataclass(frozen=True)
class Bar:
    """One column of a diverging bar chart: ``up`` above the axis, ``down`` below it."""

    label: str
    up: int
    down: int
    title: str
    data: Mapping[str, object] = field(default_factory=dict)
    band: str | None = None  # colour of the strip under the bar (the operation)


def _count(n: int) -> str:
    return f"{n:,}"


def diverging(
    bars: Sequence[Bar],
    *,
    up_label: str,
    down_label: str,
    scale: Callable[[int], str] = _count,
    height: int = 200,
) -> str:
    """Bars up (added, green) and down (removed, red) from one axis, a strip of colours below.

    ``scale`` formats the axis's end values (the bars' own numbers are in their titles).
    """
    width = 960
    left, right, top, strip = 70, 10, 14, 14
    plot_w = width - left - right
    plot_h = height - top - strip - 24
    half = plot_h / 2
    axis = top + half
    biggest = max([1, *(b.up for b in bars), *(b.down for b in bars)])
    step = plot_w / max(len(bars), 1)
    gap = 1 if step > 4 else 0
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(up_label)} and {escape(down_label)} per commit">',
        f'<line x1="{left}" x2="{width - right}" y1="{axis:.1f}" y2="{axis:.1f}" '
        f'stroke="{MUTED}"/>',
        _text(left - 6, top + 10, scale(biggest), anchor="end"),
        _text(left - 6, top + plot_h, scale(biggest), anchor="end"),
        _text(left - 6, axis - 4, up_label, anchor="end", cls="label added"),
        _text(left - 6, axis + 12, down_label, anchor="end", cls="label removed"),
    ]
    every = max(1, len(bars) // 12)
    for i, b in enumerate(bars):
        x = left + i * step
        w = max(step - gap, 0.5)
        hu = b.up / biggest * half
        hd = b.down / biggest * half
        out.append(f'<g class="column"{attrs(b.data)}><title>{escape(b.title)}</title>')
        out.append(
            f'<rect class="bar added" x="{x:.2f}" y="{axis - hu:.2f}" width="{w:.2f}" '
            f'height="{hu:.2f}" fill="{ADDED}" data-value="{b.up}"/>'
        )
        out.append(
            f'<rect class="bar removed" x="{x:.2f}" y="{axis:.2f}" width="{w:.2f}" '
            f'height="{hd:.2f}" fill="{REMOVED}" data-value="{b.down}"/>'
        )
        if b.band:
            out.append(
                f'<rect class="band" x="{x:.2f}" y="{top + plot_h + 4:.2f}" width="{w:.2f}" '
                f'height="{strip - 4}" fill="{b.band}"/>'
            )
        out.append("</g>")
        if i % every == 0:
            out.append(_text(x + w / 2, height - 4, b.label, anchor="middle"))
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Column:
    """One bar of a histogram."""

    label: str
    value: int
    title: str
    colour: str = NEUTRAL
    data: Mapping[str, object] = field(default_factory=dict)


def histogram(columns: Sequence[Column], *, height: int = 220) -> str:
    """Vertical bars with their value on top and their label below."""
    width = 960
    left, right, top, bottom = 10, 10, 20, 36
    plot_w = width - left - right
    plot_h = height - top - bottom
    biggest = max([1, *(c.value for c in columns)])
    step = plot_w / max(len(columns), 1)
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="histogram">',
        f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" '
        f'stroke="{MUTED}"/>',
    ]
    for i, c in enumerate(columns):
        x = left + i * step + 3
        w = step - 6
        h = c.value / biggest * plot_h
        y = top + plot_h - h
        out.append(f'<g class="bin"{attrs(c.data)}><title>{escape(c.title)}</title>')
        out.append(
            f'<rect x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" fill="{c.colour}"/>'
        )
        out.append("</g>")
        if c.value:
            out.append(_text(x + w / 2, y - 4, f"{c.value:,}", anchor="middle"))
        out.append(_text(x + w / 2, top + plot_h + 16, c.label, anchor="middle"))
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Row:
    """One bar of a horizontal bar chart."""

    label: str
    value: int
    shown: str
    title: str
    data: Mapping[str, object] = field(default_factory=dict)


def horizontal(rows: Sequence[Row], *, colour: str = NEUTRAL) -> str:
    """One bar per row, its label on the left and its shown value on the right."""
    width, row_h, label_w, value_w = 960, 20, 300, 170
    height = row_h * len(rows) + 8
    plot_w = width - label_w - value_w
    biggest = max([1, *(r.value for r in rows)])
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="bars">',
    ]
    for i, r in enumerate(rows):
        y = 4 + i * row_h
        w = max(r.value / biggest * plot_w, 1 if r.value else 0)
        label = r.label if len(r.label) <= 44 else r.label[:43] + "…"
        out.append(f'<g class="row"{attrs(r.data)}><title>{escape(r.title)}</title>')
        out.append(_text(label_w - 8, y + 14, label, anchor="end"))
        out.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.2f}" height="{row_h - 6}" '
            f'fill="{colour}"/>'
        )
        out.append(_text(label_w + w + 6, y + 14, r.shown))
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def share(part: int, whole: int, *, colour: str = NEUTRAL, label: str = "") -> str:
    """A bar filled in the proportion ``part / whole``."""
    fraction = part / whole if whole else 0.0
    return (
        f'<svg class="share" viewBox="0 0 300 16" role="img" aria-label="{escape(label)}"'
        f"{attrs({'data-part': part, 'data-whole': whole})}>"
        f"<title>{escape(label)}</title>"
        f'<rect x="0" y="2" width="300" height="12" rx="3" fill="{GRID}"/>'
        f'<rect x="0" y="2" width="{300 * fraction:.1f}" height="12" rx="3" fill="{colour}"/>'
        "</svg>"
    )
