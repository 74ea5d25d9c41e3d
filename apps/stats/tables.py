"""Summaries of tables: a columnar dict, a list of records or a list of primitives, one
fixed-size summary per column (reference §6). Pure Python, no Django."""
from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import numpy as np

TABLE_MAX_COLUMNS = 64
TABLE_MAX_ROWS = 200_000
TABLE_TOP = 10
TEXT_MAX = 100                # longest text kept among a column's top values


def _num(x: float | None) -> float | None:
    """A float for JSON: None when missing or not finite."""
    return float(x) if x is not None and math.isfinite(x) else None


def is_table(value: Any) -> bool:
    """A columnar dict of equal-length lists, a list of records or a list of primitives."""
    if isinstance(value, dict):
        columns = list(value.values())
        return (bool(columns) and all(isinstance(c, (list, tuple)) for c in columns)
                and len({len(c) for c in columns}) == 1)
    if isinstance(value, (list, tuple)):
        return all(isinstance(row, dict) for row in value) or all(_is_primitive(v) for v in value)
    return False


def _is_primitive(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str, np.generic))


def table_summary(value: dict | list | tuple, *, seed: int = 0) -> dict:
    """Per-column summaries; past TABLE_MAX_ROWS rows, of a seeded sample of rows."""
    rows = len(next(iter(value.values()))) if isinstance(value, dict) else len(value)
    sampled = rows > TABLE_MAX_ROWS
    picked = sorted(random.Random(seed).sample(range(rows), TABLE_MAX_ROWS)) if sampled else range(rows)
    columns = _columns(value, picked)
    names = list(columns)
    return {"kind": "tabular", "rows": rows, "column_count": len(names),
            "columns_truncated": len(names) > TABLE_MAX_COLUMNS, "sampled": sampled,
            "columns": [_column_summary(name, columns[name]) for name in names[:TABLE_MAX_COLUMNS]]}


def _columns(value: dict | list | tuple, picked) -> dict[str, list]:
    if isinstance(value, dict):
        return {str(name): [cells[i] for i in picked] for name, cells in value.items()}
    if value and isinstance(value[0], dict):
        records = [{str(k): v for k, v in value[i].items()} for i in picked]
        names = dict.fromkeys(name for record in records for name in record)
        return {name: [record.get(name) for record in records] for name in names}
    return {"value": [value[i] for i in picked]}


def _column_summary(name: str, cells: list) -> dict:
    present = [v.item() if isinstance(v, np.generic) else v for v in cells if not _is_missing(v)]
    numeric = bool(present) and all(isinstance(v, (int, float)) for v in present)
    finite = [v for v in present if numeric and (isinstance(v, int) or math.isfinite(v))]
    counts = Counter(_key(v) for v in present)   # keyed by type too: 1, 1.0 and True stay apart
    return {
        "name": name, "dtype": _column_dtype(present), "count": len(present), "missing": len(cells) - len(present),
        "unique": len(counts),
        "top": [{"value": _json_cell(v), "count": c} for (_, v), c in counts.most_common(TABLE_TOP)],
        "mean": _mean(finite),
        "min": _json_cell(min(finite)) if finite else None,
        "max": _json_cell(max(finite)) if finite else None,
    }


def _mean(numbers: list) -> float | None:
    try:
        return _num(math.fsum(numbers) / len(numbers)) if numbers else None
    except OverflowError:  # Python ints beyond float range
        return None


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))


def _key(v: Any) -> tuple[str, Any]:
    try:
        hash(v)
        return type(v).__name__, v
    except TypeError:
        return type(v).__name__, repr(v)[:TEXT_MAX]


def _json_cell(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**64:
        return str(v)[:TEXT_MAX]   # JSON encoders stop at 64 bits
    if isinstance(v, (bool, int, float)):
        return v
    return (v if isinstance(v, str) else repr(v))[:TEXT_MAX]


def _column_dtype(present: list) -> str:
    kinds = {"bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float" if isinstance(v, float)
             else "str" if isinstance(v, str) else "object" for v in present}
    if not kinds:
        return "empty"
    if kinds == {"int", "float"}:
        return "float"
    return kinds.pop() if len(kinds) == 1 else "mixed"
