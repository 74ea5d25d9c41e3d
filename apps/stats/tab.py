"""What the Stats tab shows for one port's summary: its figures as rows, and a small chart.

Pure functions, no Django, so Node details can plug them in: it renders ``stats_rows()`` as
a table and embeds ``histogram_svg()`` as it is (every text in it is already escaped).
"""
from __future__ import annotations

from html import escape
from typing import Any

from apps.runs.engine.events import shape_text

WIDTH, HEIGHT = 360, 190
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 10, 46           # room for the axes' labels
LABEL_EVERY_CLASS_UP_TO = 16                         # more classes: label the first and the last only


def stats_rows(summary: dict) -> list[tuple[str, str]]:
    """(label, formatted value) pairs, in the order the tab lists them."""
    kind = summary.get("kind")
    if kind == "tensor":
        return _tensor_rows(summary)
    if kind == "tabular":
        return _table_rows(summary)
    return [("Type", str(summary.get("type", "unknown"))), ("Statistics", "None for this kind of value")]


def _tensor_rows(s: dict) -> list[tuple[str, str]]:
    rows = [("Shape", shape_text(s["shape"]) if s["shape"] else "scalar"), ("Dtype", s["dtype"]),
            ("Device", s["device"]), ("Count", _number(s["count"]))]
    if s.get("sampled"):
        rows.append(("Sampled", f"mean, std, quantiles and histogram from {_number(s['sample_size'])} elements"))
    rows += [("Mean", _number(s["mean"])), ("Std", _number(s["std"])),
             ("Min", _number(s["min"])), ("Max", _number(s["max"]))]
    rows += [(name, _number(value)) for name, value in s["quantiles"].items()]
    rows += [("NaN count", _number(s["nan_count"])), ("Inf count", _number(s["inf_count"])),
             ("Zero fraction", _percent(s["zero_frac"]))]
    if "value_counts" in s:
        rows.append(("Classes", _number(len(s["value_counts"]))))
    return rows


def _table_rows(s: dict) -> list[tuple[str, str]]:
    columns = _number(s["column_count"])
    if s.get("columns_truncated"):
        columns += f" (the first {len(s['columns'])} summarised)"
    rows = [("Rows", _number(s["rows"])), ("Columns", columns)]
    if s.get("sampled"):
        rows.append(("Sampled", "columns summarised from a seeded sample of rows"))
    for column in s["columns"]:
        parts = [column["dtype"], f"{_number(column['count'])} present", f"{_number(column['missing'])} missing",
                 f"{_number(column['unique'])} unique"]
        parts += [f"{name} {_number(column[name])}" for name in ("mean", "min", "max") if column[name] is not None]
        if column["top"]:
            top = column["top"][0]
            parts.append(f"most common {_number(top['value'])} ({_number(top['count'])}×)")
        rows.append((column["name"], " · ".join(parts)))
    return rows


def _number(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.6g}"


def _percent(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.4g} %"


# ---------------------------------------------------------------------------- the chart

def histogram_svg(summary: dict) -> str:
    """An SVG bar chart of the histogram or class balance, with labelled axes and a title.

    Returns "" when there is nothing to chart (no finite values, or not a tensor): the tab
    shows its message instead.
    """
    chart = _histogram_chart(summary) if summary.get("histogram", {}).get("bins") else None
    if summary.get("value_counts"):
        chart = _class_chart(summary)
    if chart is None:
        return ""
    title, bars, ticks, x_title = chart
    y_title = "count in sample" if summary.get("sampled") else "count"
    return _svg(title, bars, ticks, x_title, y_title)


def _histogram_chart(s: dict):
    edges, counts = s["histogram"]["edges"], s["histogram"]["counts"]
    bars = [(f"[{_number(edges[i])}, {_number(edges[i + 1])}{']' if i == len(counts) - 1 else ')'}: "
             f"{_number(c)}", c) for i, c in enumerate(counts)]
    middle = len(edges) // 2
    ticks = [(0.0, _number(edges[0])), (1.0, _number(edges[-1]))]
    if len(counts) > 1:
        ticks.insert(1, (middle / len(counts), _number(edges[middle])))
    title = f"Histogram of {_subject(s)}: {len(counts)} bin{'s' if len(counts) > 1 else ''}"
    if s.get("sampled"):
        title += f", from a {_number(s['sample_size'])}-element sample"
    return title, bars, ticks, "value"


def _class_chart(s: dict):
    classes = s["value_counts"]
    bars = [(f"{_number(c['value'])}: {_number(c['count'])}", c["count"]) for c in classes]
    k = len(classes)
    labelled = range(k) if k <= LABEL_EVERY_CLASS_UP_TO else (0, k - 1)
    ticks = [((i + 0.5) / k, _number(classes[i]["value"])) for i in labelled]
    title = f"Class balance of {_subject(s)}: {k} class{'es' if k > 1 else ''}"
    return title, bars, ticks, "class"


def _subject(s: dict) -> str:
    if s.get("port"):
        return f"{s['node_id']} · {s['port']}" if s.get("node_id") else str(s["port"])
    return "this port"


def _svg(title: str, bars: list[tuple[str, int]], ticks: list[tuple[float, str]], x_title: str, y_title: str) -> str:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bottom = TOP + plot_h
    tallest = max((count for _, count in bars), default=0) or 1
    step = plot_w / len(bars)
    gap = 1 if step > 3 else 0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="stats-chart" role="img" '
             f'aria-label="{escape(title)}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}">',
             f"<title>{escape(title)}</title>", '<g class="bars">']
    for i, (tip, count) in enumerate(bars):
        height = plot_h * count / tallest
        if count and height < 1:
            height = 1.0   # a non-empty bin stays visible
        parts.append(f'<rect class="bar" x="{LEFT + i * step + gap / 2:.1f}" y="{bottom - height:.1f}" '
                     f'width="{max(step - gap, 0.5):.1f}" height="{height:.1f}"><title>{escape(tip)}</title></rect>')
    parts.append("</g>")
    parts.append(f'<g class="axes"><line x1="{LEFT}" y1="{bottom}" x2="{LEFT + plot_w}" y2="{bottom}"/>'
                 f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/></g>')
    parts.append('<g class="ticks">')
    for fraction, label in ticks:
        x = LEFT + fraction * plot_w
        anchor = "start" if fraction == 0 else "end" if fraction == 1 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="{anchor}">{escape(label)}</text>')
    parts.append(f'<text x="{LEFT - 4}" y="{bottom}" text-anchor="end">0</text>')
    parts.append(f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{escape(_number(tallest))}</text>')
    parts.append("</g>")
    parts.append(f'<text class="axis-title" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">'
                 f"{escape(x_title)}</text>")
    parts.append(f'<text class="axis-title" x="12" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {TOP + plot_h / 2:.1f})">{escape(y_title)}</text>')
    parts.append("</svg>")
    return "".join(parts)
