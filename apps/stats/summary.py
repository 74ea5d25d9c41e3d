"""Fixed-size summaries of captured values: what the stats endpoint answers (reference §6).

``summarise(value, threshold=..., sample_size=...)`` turns a tensor, a table or a scalar into
a small JSON-safe dict, never the values themselves. Pure Python + torch/numpy, no Django.

Tensors. Count, min, max, NaN/Inf counts, the zero fraction and the class balance are
always exact. Mean, std (population), the quantiles and the 64-bin histogram are exact up
to ``threshold`` elements and come from a seeded sample of ``sample_size`` elements above
it. NaN and ±Inf are counted and left out of everything else. Quantiles follow numpy's
default ('linear') method over the finite values; histogram bins are numpy's: 64 equal
bins from min to max, each [left, right) but the last [left, right]. float16 and bfloat16
are summarised in float32, integers in float64 (as numpy does).

Speed (DESIGN.md, "Performance notes"). The data is walked in cache-sized chunks, so the
always-exact figures and the moments cost one trip through memory. Quantiles and histogram
counts are order statistics found without a full sort: one pass counts the values in
32768 fine bins, which tells the bin holding each wanted rank and each histogram edge; a
second pass gathers only those few bins' values, and only they are sorted (a crowded bin
is split again the same way). The passes are single-threaded numpy: faster here than
torch's kernels for bincount and masked selects, and steady on a busy server, where
torch's thread team stalls when a core is taken (one summary uses one core; the cache's
pool runs a few at once). Buffers are reused: fresh memory costs page faults.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .tables import is_table, table_summary

QUANTILES = (("p1", 1), ("p5", 5), ("p25", 25), ("p50", 50), ("p75", 75), ("p95", 95), ("p99", 99))
HISTOGRAM_BINS = 64
MAX_CLASSES = 64              # integer tensors with at most this many distinct values get a class balance
CHUNK = 1 << 18               # elements per step of a pass: 1 MiB of float32 stays in cache
FINE_BINS = 1 << 15           # bins of the histogram that locates order statistics
SORT_AT_MOST = 1 << 16        # this many values or fewer are simply sorted
MAX_PIECES = 16               # a chunk with more NaN/Inf than this is compacted, not split into views
DIRECT_COUNT_SPAN = 1 << 20   # integer ranges this narrow are counted value by value

INTEGER_DTYPES = {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                  torch.uint16, torch.uint32, torch.uint64}


def summarise(value: Any, *, threshold: int, sample_size: int, seed: int = 0) -> dict:
    """A JSON-safe, fixed-size summary of a captured value (see the module docstring)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        value = torch.from_numpy(np.ascontiguousarray(value))
    elif isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        value = _scalar_tensor(value)
    if isinstance(value, torch.Tensor):
        return tensor_summary(value, threshold=threshold, sample_size=sample_size, seed=seed)
    if is_table(value):
        return table_summary(value, seed=seed)
    return {"kind": "unsupported", "type": type(value).__name__}


def _scalar_tensor(value: Any) -> Any:
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64)
    try:
        return torch.tensor(value)
    except (OverflowError, RuntimeError, ValueError):  # an int beyond int64 stays unsupported
        return value


def _num(x: float | None) -> float | None:
    """A float for JSON: None when missing or not finite."""
    return float(x) if x is not None and math.isfinite(x) else None


# ---------------------------------------------------------------------------- tensors

def tensor_summary(tensor: torch.Tensor, *, threshold: int, sample_size: int, seed: int = 0) -> dict:
    dtype = tensor.dtype
    if tensor.layout != torch.strided or tensor.is_meta or not (dtype.is_floating_point or dtype in INTEGER_DTYPES):
        return {"kind": "unsupported", "type": f"tensor ({dtype}, {tensor.layout}, {tensor.device})"}
    head = {"kind": "tensor", "shape": list(tensor.shape), "dtype": str(dtype), "device": str(tensor.device),
            "count": tensor.numel()}
    flat = tensor.detach().reshape(-1).cpu()
    if dtype in (torch.uint16, torch.uint32, torch.uint64):  # few torch ops take these
        flat = flat.to(torch.int64)
    elif dtype.is_floating_point and dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        flat = flat.to(torch.float32)   # float8 and the like: numpy has no such dtype
    if dtype in INTEGER_DTYPES:
        balance = _class_balance(flat)
        if balance is not None:
            return head | _from_value_counts(balance)
    with np.errstate(over="ignore", invalid="ignore"):   # overflow is detected and handled where it matters
        return head | _numeric_summary(flat, threshold=threshold, sample_size=sample_size, seed=seed)


def _numeric_summary(flat: torch.Tensor, *, threshold: int, sample_size: int, seed: int) -> dict:
    n = flat.numel()
    integer = flat.dtype in INTEGER_DTYPES
    dtype = np.float64 if integer or flat.dtype == torch.float64 else np.float32
    sampled = n > threshold and 0 < sample_size < n
    scan = _scan(flat, dtype, keep=not sampled, sampler=_Sampler(n, sample_size, seed) if sampled else None)
    values = _sample_values(np.concatenate(scan.sample)) if sampled else scan.values()
    out = {
        "sampled": sampled, "sample_size": sample_size if sampled else None,
        "mean": _num(values.mean), "std": _num(values.std), "min": _num(scan.lo), "max": _num(scan.hi),
        "quantiles": dict.fromkeys(name for name, _ in QUANTILES),
        "nan_count": scan.nan, "inf_count": scan.inf, "zero_frac": scan.zeros / n if n else None,
        "histogram": {"bins": 0, "edges": [], "counts": []},
    }
    if not values.n:
        return out
    if integer:  # exact extremes, even beyond 2**53
        out["min"], out["max"] = int(flat.numpy().min()), int(flat.numpy().max())
    edges = _histogram_edges(scan.lo, scan.hi, dtype)
    ranks, lerps = _quantile_ranks(values.n)
    at_rank, below = _order_statistics(values, ranks, edges[1:-1])
    out["quantiles"] = {name: _num(_lerp(at_rank[i], at_rank[j], t, dtype)) for name, (i, j, t) in lerps.items()}
    out["histogram"] = _histogram(edges, below, values.n)
    return out


@dataclass
class _Moments:
    """Count, mean and sum of squared deviations, merged chunk by chunk (Chan et al.)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, chunk: np.ndarray, scratch: np.ndarray, lo: float, hi: float) -> None:
        """Add a chunk of finite values lying in [lo, hi]."""
        k = chunk.size
        if not k:
            return
        if lo == hi:   # a constant chunk (zero padding, masks): nothing to add up
            self._merge(k, lo, 0.0)
            return
        # The corrected two-pass algorithm: a rough mean, then the deviations from it give
        # both the correction to the mean and the squares. numpy's pairwise sums keep the
        # float32 rounding to about 1e-6 of the spread, at a fraction of float64's cost.
        total = float(chunk.sum())
        if not math.isfinite(total):  # float32 overflowed: add in float64
            total = float(chunk.sum(dtype=np.float64))
        rough = chunk.dtype.type(total / k)
        deviations = np.subtract(chunk, rough, out=scratch[:k])
        if chunk.dtype == np.float32 and (max(-lo, hi) > 1e18 or hi - lo < 1e-18):
            deviations = deviations.astype(np.float64)  # squares would overflow or underflow float32
        drift = float(deviations.sum())
        chunk_mean = float(rough) + drift / k
        chunk_m2 = max(float(np.square(deviations, out=deviations).sum()) - drift * drift / k, 0.0)
        self._merge(k, chunk_mean, chunk_m2)

    def _merge(self, k: int, chunk_mean: float, chunk_m2: float) -> None:
        merged = self.n + k
        delta = chunk_mean - self.mean
        self.mean += delta * k / merged
        self.m2 += chunk_m2 + delta * delta * self.n * k / merged
        self.n = merged

    @property
    def std(self) -> float | None:
        return math.sqrt(self.m2 / self.n) if self.n else None


@dataclass
class _Values:
    """The finite values (in chunks) that mean, std, quantiles and histogram come from."""

    chunks: list[np.ndarray]
    n: int
    lo: float | None
    hi: float | None
    mean: float | None = None
    std: float | None = None


@dataclass
class _Scan:
    """What one pass over every element gives: the always-exact figures."""

    nan: int = 0
    inf: int = 0
    zeros: int = 0
    lo: float | None = None   # finite minimum
    hi: float | None = None   # finite maximum
    chunks: list[np.ndarray] = field(default_factory=list)   # the finite values, when kept
    moments: _Moments = field(default_factory=_Moments)
    sample: list[np.ndarray] = field(default_factory=list)   # sampled elements, in order

    def widen(self, lo: float, hi: float) -> None:
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def values(self) -> _Values:
        m = self.moments
        return _Values(self.chunks, m.n, self.lo, self.hi, m.mean if m.n else None, m.std)


def _scan(flat: torch.Tensor, dtype: type, *, keep: bool, sampler: _Sampler | None) -> _Scan:
    """One pass in chunks: extremes, NaN/Inf/zero counts, the sample, and (``keep``) the finite values."""
    scan = _Scan()
    scratch = np.empty(min(CHUNK, flat.numel()), dtype=dtype)
    flags = np.empty(scratch.size, dtype=bool)
    raw = _as_numpy(flat)
    for start in range(0, flat.numel(), CHUNK):
        chunk = _widen(raw[start:start + CHUNK], dtype)   # a view when already that dtype
        scan.zeros += int(np.count_nonzero(np.equal(chunk, 0, out=flags[:chunk.size])))  # faster than on floats
        if sampler is not None:   # a stratum may reach a little past the chunk: index the whole array
            scan.sample.append(_widen(raw[sampler.positions_before(start + chunk.size)], dtype))
        lo, hi = float(chunk.min()), float(chunk.max())   # NaN or ±Inf when there are any
        pieces = [chunk] if math.isfinite(lo) and math.isfinite(hi) else _finite_pieces(chunk, scan, flags)
        for piece in pieces:
            if piece is not chunk:
                lo, hi = float(piece.min()), float(piece.max())
            scan.widen(lo, hi)
            if keep:
                scan.chunks.append(piece)
                scan.moments.add(piece, scratch, lo, hi)
    return scan


def _as_numpy(flat: torch.Tensor) -> np.ndarray:
    """The tensor's memory as numpy; bfloat16 (which numpy lacks) as its raw 16 bits."""
    return flat.view(torch.int16).numpy() if flat.dtype == torch.bfloat16 else flat.numpy()


def _widen(part: np.ndarray, dtype: type) -> np.ndarray:
    if part.dtype == np.int16 and dtype == np.float32:   # bfloat16 bits: the top half of a float32
        return (part.astype(np.int32) << 16).view(np.float32)
    return part.astype(dtype, copy=False)


def _finite_pieces(chunk: np.ndarray, scan: _Scan, flags: np.ndarray) -> list[np.ndarray]:
    """Count a chunk's NaN and ±Inf; its finite values as the views between them.

    Views, not a copy: there are few such values as a rule, and fresh memory for a copy
    costs more (page faults) than the copy itself. Many of them: one compacted copy.
    """
    not_finite = np.logical_not(np.isfinite(chunk, out=flags[:chunk.size]), out=flags[:chunk.size])
    bad = np.flatnonzero(not_finite)
    nan = int(np.isnan(chunk[bad]).sum())
    scan.nan += nan
    scan.inf += bad.size - nan
    if bad.size > MAX_PIECES:
        return [np.delete(chunk, bad)] if bad.size < chunk.size else []
    bounds = [-1, *bad.tolist(), chunk.size]
    return [chunk[a + 1:b] for a, b in zip(bounds, bounds[1:]) if b - a > 1]


class _Sampler:
    """A seeded stratified sample: ``size`` equal strata over [0, n), one position drawn in each.

    Stratified rather than independent draws: as random for each element, a little more
    accurate, and in order, so the scan picks the sample up from cache as it passes. Drawn
    a chunk at a time: small arrays, no big allocation (whose page faults cost more here
    than the drawing).
    """

    def __init__(self, n: int, size: int, seed: int):
        self.n, self.size, self.stride = n, size, n / size
        self.random = np.random.default_rng(seed)
        self.drawn = 0   # strata drawn so far

    def positions_before(self, end: int) -> np.ndarray:
        """The positions drawn in the strata that start before ``end`` (not drawn yet)."""
        upto = self.size if end >= self.n else min(self.size, math.ceil(end / self.stride))
        positions = np.arange(self.drawn, upto, dtype=np.float64)
        positions += self.random.random(positions.size, dtype=np.float32)   # 24 bits are plenty within a stratum
        positions *= self.stride
        self.drawn = upto
        return np.minimum(positions.astype(np.int64), self.n - 1)


def _sample_values(sample: np.ndarray) -> _Values:
    sample = sample[np.isfinite(sample)]
    if not sample.size:
        return _Values([], 0, None, None)
    lo, hi = float(sample.min()), float(sample.max())
    values = _Values([sample[i:i + CHUNK] for i in range(0, sample.size, CHUNK)], sample.size, lo, hi)
    moments, scratch = _Moments(), np.empty(min(CHUNK, sample.size), dtype=sample.dtype)
    for chunk in values.chunks:
        moments.add(chunk, scratch, lo, hi)
    values.mean, values.std = moments.mean, moments.std
    return values


def _quantile_ranks(n: int) -> tuple[list[int], dict[str, tuple[int, int, float]]]:
    """The ranks the quantiles need, and per quantile (position of lower, of upper, weight).

    As numpy's 'linear': virtual index (n - 1) * q, interpolating its floor and the next.
    """
    lerps = {}
    for name, percent in QUANTILES:
        virtual = (n - 1) * (percent / 100)
        lower = min(math.floor(virtual), n - 1)
        lerps[name] = (lower, min(lower + 1, n - 1), virtual - lower)
    ranks = sorted({r for i, j, _ in lerps.values() for r in (i, j)})
    return ranks, {name: (ranks.index(i), ranks.index(j), t) for name, (i, j, t) in lerps.items()}


def _lerp(a: float, b: float, t: float, dtype: type) -> float:
    """numpy's _lerp: the difference taken in the data's dtype, the rest in float64."""
    diff = float(dtype(b) - dtype(a))
    if not math.isfinite(diff):
        diff = b - a
    value = b - diff * (1 - t) if t >= 0.5 else a + diff * t
    return value if math.isfinite(value) else a * (1 - t) + b * t


def _histogram_edges(lo: float, hi: float, dtype: type) -> list[float]:
    """numpy's edges (a linspace from min to max, computed in the data's dtype); constant data: one bin."""
    if lo == hi:
        return [lo, hi]
    edges = np.linspace(dtype(lo), dtype(hi), HISTOGRAM_BINS + 1)
    if not np.isfinite(edges).all():  # the span overflows: work on halves in float64
        edges = (np.linspace(lo / 2, hi / 2, HISTOGRAM_BINS + 1) * 2).astype(dtype)
        edges[0], edges[-1] = lo, hi
    return np.maximum.accumulate(edges).tolist()   # never decreasing, even across subnormals


def _histogram(edges: list[float], below: list[int], n: int) -> dict:
    """Bin counts from how many values lie below each inner edge; the last bin holds the maximum too."""
    cumulative = [0, *below, n]
    counts = [cumulative[i + 1] - cumulative[i] for i in range(len(edges) - 1)]
    return {"bins": len(counts), "edges": edges, "counts": counts}


# --------------------------------------------------------------- order statistics

class _FineBins:
    """A monotone map from values in [lo, hi] to bins 0 … FINE_BINS (the maximum may land on the last).

    Monotone (x <= y gives bin(x) <= bin(y)) is all that correctness needs: every value in
    a lower bin is below every value in a higher one. Each step is one IEEE operation with
    a fixed operand, so a value lands in the same bin in a big chunk or a small array.
    """

    def __init__(self, lo: float, hi: float, dtype: type):
        largest = float(np.finfo(dtype).max)
        span = hi - lo                    # a Python float: never overflows for float32 data
        self.halve = span > largest       # x - lo would overflow the dtype: work on halves
        if self.halve:
            lo, span = lo / 2, span / 2
        self.lo = dtype(lo)
        self.scale = dtype(min(FINE_BINS / span, largest))
        self.dtype = dtype
        self.count = FINE_BINS + 1
        self._position = np.empty(CHUNK, dtype=dtype)   # reused: fresh memory costs page faults
        self._index = np.empty(CHUNK, dtype=np.intp)

    def index(self, values: np.ndarray) -> np.ndarray:
        """Bin numbers; for a chunk, in a reused buffer, valid until the next call."""
        k = values.size
        position = self._position[:k] if k <= CHUNK else np.empty(k, self.dtype)
        index = self._index[:k] if k <= CHUNK else np.empty(k, np.intp)
        np.subtract(values * self.dtype(0.5) if self.halve else values, self.lo, out=position)
        np.multiply(position, self.scale, out=position)
        np.copyto(index, position, casting="unsafe")   # truncates: positions are >= 0
        return index


def _order_statistics(values: _Values, ranks: list[int], thresholds: list[float]) -> tuple[list[float], list[int]]:
    """The values at ``ranks`` (0-based, in sorted order) and, per threshold, how many values lie below it."""
    inside = [t for t in thresholds if values.lo < t <= values.hi]
    if values.lo == values.hi or not (ranks or inside):
        return [values.lo] * len(ranks), [0 if t <= values.lo else values.n for t in thresholds]
    if values.n <= SORT_AT_MOST:
        return _by_sorting(np.concatenate(values.chunks), ranks, thresholds)
    dtype = values.chunks[0].dtype.type
    bins = _FineBins(values.lo, values.hi, dtype)

    # Pass 1: how many values each fine bin holds, hence the bin of every wanted rank.
    counts = np.zeros(bins.count, dtype=np.int64)
    for chunk in values.chunks:
        counts += np.bincount(bins.index(chunk), minlength=bins.count)
    ends = np.cumsum(counts)
    rank_bins = np.searchsorted(ends, ranks, side="right").tolist()
    threshold_bins = dict(zip(inside, bins.index(np.array(inside, dtype=dtype)).tolist()))
    wanted = sorted(set(rank_bins) | set(threshold_bins.values()))
    sizes = dict(zip(wanted, counts[wanted].tolist()))
    starts = dict(zip(wanted, (ends[wanted] - counts[wanted]).tolist()))
    if max(sizes.values()) == values.n:   # one bin holds everything (a tiny span): just sort
        return _by_sorting(np.concatenate(values.chunks), ranks, thresholds)
    ties = _heavy_ties(values, bins, {b for b in wanted if sizes[b] > SORT_AT_MOST})
    if ties:   # ReLU zeros, masked scores: a value so frequent that gathering its bin would cost
        return _around_ties(values, ranks, thresholds, ties)

    # Pass 2: only the wanted bins' values. Small bins are sorted together (bins follow
    # each other in value order); a crowded bin is split again on its own.
    gathered, gathered_bins = _gather_bins(values.chunks, bins, wanted)
    small = [b for b in wanted if sizes[b] <= SORT_AT_MOST]
    crowded = {b: _split_again(gathered[gathered_bins == b],
                               [r - starts[b] for r, rb in zip(ranks, rank_bins) if rb == b],
                               [t for t, tb in threshold_bins.items() if tb == b])
               for b in wanted if sizes[b] > SORT_AT_MOST}
    ordered = np.sort(gathered[np.isin(gathered_bins, small)])
    offsets = dict(zip(small, np.cumsum([0] + [sizes[b] for b in small]).tolist()))

    at_rank = []
    for r, b in zip(ranks, rank_bins):
        local = r - starts[b]
        at_rank.append(crowded[b][0][local] if b in crowded else float(ordered[offsets[b] + local]))
    # Below a threshold in bin b: all values of lower bins, plus those of bin b under it.
    small_thresholds = [t for t, b in threshold_bins.items() if b not in crowded]
    under = np.searchsorted(ordered, np.array(small_thresholds, dtype=dtype)).tolist()
    below_small = {t: starts[b] + u - offsets[b]
                   for t, u, b in zip(small_thresholds, under, (threshold_bins[t] for t in small_thresholds))}
    below = []
    for t in thresholds:
        if t <= values.lo or t > values.hi:
            below.append(0 if t <= values.lo else values.n)
        elif t in below_small:
            below.append(below_small[t])
        else:
            b = threshold_bins[t]
            below.append(starts[b] + crowded[b][1][t])
    return at_rank, below


def _heavy_ties(values: _Values, bins: _FineBins, crowded: set[int]) -> dict[float, tuple[int, int]]:
    """Of the minimum, the maximum and zero, those in a crowded bin that repeat more than
    SORT_AT_MOST times: value -> (how many times, how many values lie below it)."""
    dtype = values.chunks[0].dtype.type
    candidates = [v for v in {values.lo, values.hi, 0.0} if values.lo <= v <= values.hi]
    in_crowd = bins.index(np.array(candidates, dtype=dtype)).tolist()
    candidates = [v for v, b in zip(candidates, in_crowd) if b in crowded]
    if not candidates:
        return {}
    equal, below = dict.fromkeys(candidates, 0), dict.fromkeys(candidates, 0)
    flags = np.empty(max(c.size for c in values.chunks), dtype=bool)
    for chunk in values.chunks:
        for v in candidates:
            equal[v] += int(np.count_nonzero(np.equal(chunk, v, out=flags[:chunk.size])))
            if values.lo < v:
                below[v] += int(np.count_nonzero(np.less(chunk, v, out=flags[:chunk.size])))
    return {v: (equal[v], below[v]) for v in candidates if equal[v] > SORT_AT_MOST}


def _around_ties(values: _Values, ranks: list[int], thresholds: list[float],
                 ties: dict[float, tuple[int, int]]) -> tuple[list[float], list[int]]:
    """Order statistics with a few heavily repeated values set aside: the other values are
    handled as usual, and each repeated value goes back in as a block at its place."""
    blocks = [(v, count, below) for v, (count, below) in ties.items()]   # block v: ranks below … below+count-1
    rest = []
    for chunk in values.chunks:
        keep = np.ones(chunk.size, dtype=bool)
        for v in ties:
            keep &= chunk != v
        if keep.any():
            rest.append(chunk[keep])
    others = _Values(rest, sum(c.size for c in rest), min((float(c.min()) for c in rest), default=None),
                     max((float(c.max()) for c in rest), default=None))
    in_block, other_ranks = {}, []
    for r in ranks:
        block = [v for v, count, below in blocks if below <= r < below + count]
        if block:
            in_block[r] = block[0]
        else:   # the same value's rank among the others: minus the blocks before it
            other_ranks.append(r - sum(count for _, count, below in blocks if below + count <= r))
    at, under = _order_statistics(others, other_ranks, thresholds) if others.n else ([], [0] * len(thresholds))
    found = iter(at)
    return ([in_block[r] if r in in_block else next(found) for r in ranks],
            [u + sum(count for v, count, _ in blocks if v < t) for u, t in zip(under, thresholds)])


def _gather_bins(chunks: list[np.ndarray], bins: _FineBins, wanted: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The values lying in the wanted fine bins, and their bin numbers."""
    lookup = np.zeros(bins.count, dtype=bool)
    lookup[wanted] = True
    values, numbers = [], []
    hits = np.empty(min(CHUNK, max(c.size for c in chunks)), dtype=bool)
    for chunk in chunks:
        index = bins.index(chunk)
        hit = np.take(lookup, index, out=hits[:index.size]) if index.size <= hits.size else lookup[index]
        values.append(chunk[hit])
        numbers.append(index[hit])
    return np.concatenate(values), np.concatenate(numbers)


def _split_again(sub: np.ndarray, ranks: list[int], thresholds: list[float]) -> tuple[dict, dict]:
    """Order statistics inside one crowded fine bin, by the same method on its values alone."""
    chunks = [sub[i:i + CHUNK] for i in range(0, sub.size, CHUNK)]
    at_rank, below = _order_statistics(_Values(chunks, sub.size, float(sub.min()), float(sub.max())),
                                       ranks, thresholds)
    return dict(zip(ranks, at_rank)), dict(zip(thresholds, below))


def _by_sorting(values: np.ndarray, ranks: list[int], thresholds: list[float]) -> tuple[list[float], list[int]]:
    ordered = np.sort(values)
    below = np.searchsorted(ordered, np.array(thresholds, dtype=values.dtype)).tolist()
    return ordered[ranks].tolist(), below


# ------------------------------------------------------------ integer class balance

def _class_balance(flat: torch.Tensor) -> list[tuple[Any, int]] | None:
    """Exact (value, count) pairs in value order when there are at most MAX_CLASSES values, else None."""
    values = flat.numpy()
    n = values.size
    if values.dtype == np.bool_:
        trues = int(np.count_nonzero(values))
        return [(v, c) for v, c in ((False, n - trues), (True, trues)) if c]
    if not n:
        return []
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < DIRECT_COUNT_SPAN:
        counts = np.zeros(hi - lo + 1, dtype=np.int64)
        for start in range(0, n, CHUNK):
            counts += np.bincount(values[start:start + CHUNK].astype(np.int64) - lo, minlength=hi - lo + 1)
        present = np.flatnonzero(counts)
        if present.size > MAX_CLASSES:
            return None
        return [(lo + v, c) for v, c in zip(present.tolist(), counts[present].tolist())]
    # A wide range: a few far-apart labels are possible but rare. A prefix usually settles it.
    if np.unique(values[:SORT_AT_MOST]).size > MAX_CLASSES:
        return None
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size > MAX_CLASSES:
        return None
    return list(zip(distinct.tolist(), counts.tolist()))


def _from_value_counts(balance: list[tuple[Any, int]]) -> dict:
    """Every figure, exactly, from the class counts: no sampling needed however big the tensor."""
    n = sum(c for _, c in balance)
    out = {"sampled": False, "sample_size": None, "mean": None, "std": None, "min": None, "max": None,
           "quantiles": dict.fromkeys(name for name, _ in QUANTILES),
           "nan_count": 0, "inf_count": 0, "zero_frac": None,
           "value_counts": [{"value": v, "count": c} for v, c in balance]}
    if not n:
        return out
    mean = sum(int(v) * c for v, c in balance) / n
    variance = sum(c * (int(v) - mean) ** 2 for v, c in balance) / n
    ends = np.cumsum([c for _, c in balance]).tolist()
    ranks, lerps = _quantile_ranks(n)
    at_rank = [float(balance[bisect.bisect_right(ends, r)][0]) for r in ranks]
    return out | {
        "mean": _num(mean), "std": _num(math.sqrt(variance)), "min": balance[0][0], "max": balance[-1][0],
        "zero_frac": sum(c for v, c in balance if v == 0) / n,
        "quantiles": {name: _num(_lerp(at_rank[i], at_rank[j], t, np.float64)) for name, (i, j, t) in lerps.items()},
    }
