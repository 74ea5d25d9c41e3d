"""summarise(): exact against a straightforward numpy reference, sampled above the threshold,
class balance, non-finite values, tables and everything else."""
from __future__ import annotations

import json
import math

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from apps.stats import tables
from apps.stats.summary import summarise

from .conftest import TINY, tuning

QS = [1, 5, 25, 50, 75, 95, 99]
QUANTILE_NAMES = ["p1", "p5", "p25", "p50", "p75", "p95", "p99"]
BIG = dict(threshold=4_000_000, sample_size=1_000_000)


def numpy_reference(tensor: torch.Tensor) -> dict:
    """The figures as the obvious numpy code computes them (float16/bfloat16 read as float32)."""
    a = tensor.detach().reshape(-1)
    if a.dtype in (torch.float16, torch.bfloat16):
        a = a.float()
    a = original = a.numpy()
    if a.dtype.kind in "biu":
        a = a.astype(np.float64)
    finite = a[np.isfinite(a)]
    ref = {"count": a.size, "nan_count": int(np.isnan(a).sum()), "inf_count": int(np.isinf(a).sum()),
           "zero_frac": float(np.mean(a == 0)) if a.size else None, "finite": finite}
    if finite.size:
        with np.errstate(over="ignore", invalid="ignore"):
            ref |= {"min": float(finite.min()), "max": float(finite.max()),
                    "mean": float(finite.astype(np.float64).mean()), "std": float(finite.astype(np.float64).std()),
                    "quantiles": np.percentile(finite, QS).tolist()}
            if original.dtype.kind in "biu":   # integer extremes are exact, even beyond 2**53
                ref["min"], ref["max"] = int(original.min()), int(original.max())
            if finite.min() < finite.max():
                try:
                    counts, edges = np.histogram(finite, 64)
                    ref["histogram"] = (counts.tolist(), edges.tolist())
                except ValueError:   # numpy cannot bin a span that overflows the dtype
                    pass
    return ref


def close(got, want, tolerance):
    if want is None or not math.isfinite(want):
        return got is None or math.isfinite(got)
    return got is not None and abs(got - want) <= tolerance


def assert_matches_numpy(tensor: torch.Tensor, got: dict) -> None:
    json.dumps(got, allow_nan=False)   # JSON-safe: no NaN or Inf anywhere
    ref = numpy_reference(tensor)
    assert got["kind"] == "tensor" and got["shape"] == list(tensor.shape) and got["dtype"] == str(tensor.dtype)
    for name in ("count", "nan_count", "inf_count", "zero_frac"):
        assert got[name] == ref[name], name
    finite = ref["finite"]
    if not finite.size:
        assert got["mean"] is got["std"] is got["min"] is got["max"] is None
        assert set(got["quantiles"].values()) == {None} and got["histogram"]["bins"] == 0
        return
    assert got["min"] == ref["min"] and got["max"] == ref["max"]
    scale, spread = max(abs(ref["min"]), abs(ref["max"])), float(ref["max"]) - float(ref["min"])
    assert close(got["mean"], ref["mean"], 1e-6 * scale), (got["mean"], ref["mean"])
    assert close(got["std"], ref["std"], 1e-5 * spread + 1e-12 * scale), (got["std"], ref["std"])
    for name, want in zip(QUANTILE_NAMES, ref["quantiles"]):
        assert close(got["quantiles"][name], want, 1e-12 * scale), (name, got["quantiles"][name], want)
    counts, edges = got["histogram"]["counts"], got["histogram"]["edges"]
    assert sum(counts) == finite.size and got["histogram"]["bins"] == len(counts) == len(edges) - 1
    assert all(math.isfinite(e) for e in edges) and edges == sorted(edges)
    if finite.min() == finite.max():
        assert (counts, edges) == ([finite.size], [finite.min(), finite.max()])   # constant: one bin
    elif "histogram" in ref and all(math.isfinite(e) for e in ref["histogram"][1]) and ref["histogram"][1] == sorted(
            ref["histogram"][1]):   # numpy's own edges can go down across subnormals; ours never do
        assert (counts, edges) == ref["histogram"]


FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, math.nan, math.inf, -math.inf]


@st.composite
def float_tensors(draw):
    dtype = draw(st.sampled_from(["float16", "bfloat16", "float32", "float64"]))
    width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64}[dtype]
    bound = 1e150 if width == 64 else None   # float64: keep squares finite so std can be compared
    elements = st.one_of(
        st.floats(width=width, min_value=-bound, max_value=bound) if bound else st.floats(width=width),
        st.floats(min_value=-10, max_value=10, width=width),
        st.sampled_from(FLOAT_SPECIALS),
        st.floats(min_value=2.0**-40, max_value=2.0**-20, width=width) if width > 16 else st.just(1e-4))
    shape = draw(st.lists(st.integers(0, 9), max_size=3).filter(lambda s: math.prod(s) <= 400))
    np_dtype = np.float64 if width == 64 else np.float32 if width == 32 else np.float16
    values = draw(hnp.arrays(np_dtype, math.prod(shape), elements=elements))
    return torch.from_numpy(values).reshape(shape).to(getattr(torch, dtype))


@st.composite
def integer_tensors(draw):
    dtype = draw(st.sampled_from([np.int8, np.uint8, np.int16, np.int32, np.int64]))
    info = np.iinfo(dtype)
    elements = st.one_of(st.integers(-3, 3).map(lambda v: max(v, 0) if info.min == 0 else v),
                         st.integers(int(info.min), int(info.max)))
    n = draw(st.integers(0, 300))
    return torch.from_numpy(draw(hnp.arrays(dtype, n, elements=elements)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tensor=float_tensors(), tiny=st.booleans())
def test_float_tensors_match_numpy_exactly(tensor, tiny):
    """SS2: count, min, max, NaN/Inf counts and the zero fraction exact; mean, std, quantiles and histogram
    as numpy computes them, on every shape and float dtype, small tuning taking every big-array path."""
    if tiny:
        with tuning(**TINY):
            got = summarise(tensor, **BIG)
    else:
        got = summarise(tensor, **BIG)
    assert_matches_numpy(tensor, got)


@settings(max_examples=150, deadline=None)
@given(tensor=integer_tensors(), tiny=st.booleans())
def test_integer_tensors_match_numpy_and_count_classes(tensor, tiny):
    """SS2: integer tensors: a class balance when at most 64 values, otherwise a histogram; both exact."""
    if tiny:
        with tuning(**TINY):
            got = summarise(tensor, **BIG)
    else:
        got = summarise(tensor, **BIG)
    distinct, counts = np.unique(tensor.numpy(), return_counts=True)
    if len(distinct) <= 64:
        assert got["value_counts"] == [{"value": int(v), "count": int(c)} for v, c in zip(distinct, counts)]
        assert "histogram" not in got
        reference = numpy_reference(tensor)
        for name, want in zip(QUANTILE_NAMES, reference.get("quantiles", [None] * 7)):
            assert close(got["quantiles"][name], want, 0), name
        if tensor.numel():
            assert (got["min"], got["max"]) == (int(distinct[0]), int(distinct[-1]))
            scale = max(1, abs(int(distinct[0])), abs(int(distinct[-1])))
            assert abs(got["mean"] - reference["mean"]) <= 1e-12 * scale   # ours is exact; numpy's rounds
    else:
        assert "value_counts" not in got
        assert_matches_numpy(tensor, got)
        assert isinstance(got["min"], int) and isinstance(got["max"], int)


def test_every_path_of_the_order_statistics_matches_numpy_on_awkward_data():
    """SS3: masked scores (-1e9), ReLU and dropout zeros, clipping, two far clusters, a span of a few ulps,
    heavy ties, extremes: at the real sizes."""
    g = torch.Generator().manual_seed(3)
    masked = torch.randn(300_000, generator=g)
    masked[torch.rand(300_000, generator=g) < 0.3] = -1e9
    masked[::1000] = float("nan")
    clusters = torch.cat([torch.randn(150_000, generator=g) * 1e-3 - 1e30, torch.randn(150_000, generator=g) + 1e30])
    few_ulps = 1 + torch.randint(0, 3, (200_000,), generator=g).float() * torch.finfo(torch.float32).eps
    ties = torch.randint(0, 1000, (300_000,), generator=g).double() / 7
    extremes = torch.tensor([torch.finfo(torch.float32).min, torch.finfo(torch.float32).max] * 50_000)
    relu = torch.relu(torch.randn(300_000, generator=g))
    dropout = torch.randn(300_000, generator=g) * (torch.rand(300_000, generator=g) > 0.5)
    clipped = torch.randn(300_000, generator=g).clamp(-1.5, 1.0)
    for tensor in (masked, relu, dropout, clipped, clusters, few_ulps, ties, extremes):
        assert_matches_numpy(tensor, summarise(tensor, **BIG))


def test_a_four_million_element_tensor_is_exact_at_the_threshold():
    """SS3: up to 4 million elements nothing is sampled."""
    x = torch.randn(4_000_000, generator=torch.Generator().manual_seed(5))
    x[::400_000] = float("inf")
    got = summarise(x, **BIG)
    assert got["sampled"] is False and got["sample_size"] is None
    assert_matches_numpy(x, got)


def test_above_the_threshold_the_sample_is_seeded_flagged_and_the_exact_figures_stay_exact():
    """SS3, SS2: above the threshold mean/std/quantiles/histogram come from a seeded sample, marked as such;
    count, min, max, NaN/Inf counts and the zero fraction are still exact."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(50_000, generator=g)
    x[::97] = 0.0
    x[5], x[6], x[7] = float("nan"), float("inf"), -float("inf")
    x[12345] = 4.75   # the maximum: one element, likely not in the sample, but reported exactly
    got = summarise(x, threshold=10_000, sample_size=5_000)
    assert got["sampled"] is True and got["sample_size"] == 5_000
    assert got == summarise(x.clone(), threshold=10_000, sample_size=5_000)   # same capture, same answer
    ref = numpy_reference(x)
    for name in ("count", "nan_count", "inf_count", "zero_frac", "min", "max"):
        assert got[name] == ref[name], name
    assert sum(got["histogram"]["counts"]) <= 5_000 and got["histogram"]["edges"][-1] == 4.75
    assert abs(got["mean"] - ref["mean"]) < 0.05 and abs(got["std"] - ref["std"]) < 0.05
    assert abs(got["quantiles"]["p50"] - ref["quantiles"][3]) < 0.05
    assert summarise(x, threshold=10_000, sample_size=5_000, seed=1) != got   # it is the seed that fixes it
    assert summarise(x, threshold=50_000, sample_size=5_000)["sampled"] is False


def test_class_balance_is_exact_for_label_tensors_of_any_size():
    """SS2: integer label tensors (<= 64 distinct values) get exact class counts, even above the threshold."""
    labels = torch.arange(10).repeat_interleave(torch.arange(1, 11) * 1000)   # 1000 zeros ... 10000 nines
    got = summarise(labels, threshold=1_000, sample_size=100)
    assert got["value_counts"] == [{"value": v, "count": (v + 1) * 1000} for v in range(10)]
    assert got["sampled"] is False and got["zero_frac"] == 1000 / 55_000 and (got["min"], got["max"]) == (0, 9)
    assert got["quantiles"]["p50"] == float(np.percentile(labels.numpy(), 50))
    wide = torch.tensor([-5, 10**12, -5, 10**12, 7])   # few labels, far apart
    assert summarise(wide, **BIG)["value_counts"] == [{"value": -5, "count": 2}, {"value": 7, "count": 1},
                                                      {"value": 10**12, "count": 2}]
    assert "histogram" in summarise(torch.arange(65), **BIG)


def test_bool_tensors_count_true_and_false():
    got = summarise(torch.tensor([True, False, True, True]), **BIG)
    assert got["value_counts"] == [{"value": False, "count": 1}, {"value": True, "count": 3}]
    assert got["mean"] == 0.75 and got["min"] is False and got["max"] is True and got["zero_frac"] == 0.25


def test_nan_and_inf_are_counted_and_left_out_everywhere_else():
    got = summarise(torch.tensor([1.0, float("nan"), 3.0, float("inf"), -float("inf")]), **BIG)
    assert (got["nan_count"], got["inf_count"], got["count"]) == (1, 2, 5)
    assert (got["mean"], got["std"], got["min"], got["max"]) == (2.0, 1.0, 1.0, 3.0)
    assert got["quantiles"]["p50"] == 2.0 and sum(got["histogram"]["counts"]) == 2


def test_all_non_finite_and_empty_tensors_give_nulls_not_errors():
    for tensor in (torch.full((3, 2), float("nan")), torch.empty(0, 4), torch.tensor([float("inf"), -float("inf")])):
        got = summarise(tensor, **BIG)
        json.dumps(got, allow_nan=False)
        assert got["mean"] is None and got["min"] is None and got["quantiles"]["p50"] is None
        assert got["histogram"] == {"bins": 0, "edges": [], "counts": []}
    assert summarise(torch.empty(0), **BIG)["zero_frac"] is None


def test_a_constant_tensor_has_one_bin():
    got = summarise(torch.full((10, 10), 2.5), **BIG)
    assert got["histogram"] == {"bins": 1, "edges": [2.5, 2.5], "counts": [100]}
    assert (got["mean"], got["std"], got["quantiles"]["p99"]) == (2.5, 0.0, 2.5)


def test_overflowing_float64_sums_become_null():
    got = summarise(torch.tensor([1.7e308, 1.7e308, -1e308], dtype=torch.float64), **BIG)
    json.dumps(got, allow_nan=False)
    assert got["max"] == 1.7e308 and got["std"] is None


def test_python_scalars_are_zero_d_tensors():
    got = summarise(2.5, **BIG)
    assert (got["kind"], got["shape"], got["count"], got["mean"], got["std"]) == ("tensor", [], 1, 2.5, 0.0)
    assert summarise(True, **BIG)["value_counts"] == [{"value": True, "count": 1}]
    assert summarise(10**30, **BIG) == {"kind": "unsupported", "type": "int"}


def test_other_values_are_unsupported():
    assert summarise(object(), **BIG) == {"kind": "unsupported", "type": "object"}
    assert summarise("text", **BIG) == {"kind": "unsupported", "type": "str"}
    assert summarise(torch.nn.Linear(2, 2), **BIG) == {"kind": "unsupported", "type": "Linear"}
    assert summarise(torch.zeros(2, dtype=torch.complex64), **BIG)["kind"] == "unsupported"


# ---------------------------------------------------------------------------- tables

def test_records_get_a_summary_per_column():
    rows = [{"name": "ada", "age": 36, "score": 1.5}, {"name": "bob", "age": None, "score": float("nan")},
            {"name": "ada", "age": 40, "score": float("inf")}, {"name": "cy", "age": 20}]
    got = summarise(rows, **BIG)
    json.dumps(got, allow_nan=False)
    assert (got["kind"], got["rows"], got["column_count"], got["columns_truncated"], got["sampled"]) == (
        "tabular", 4, 3, False, False)
    name, age, score = got["columns"]
    assert name == {"name": "name", "dtype": "str", "count": 4, "missing": 0, "unique": 3,
                    "top": [{"value": "ada", "count": 2}, {"value": "bob", "count": 1}, {"value": "cy", "count": 1}],
                    "mean": None, "min": None, "max": None}
    assert (age["dtype"], age["count"], age["missing"], age["mean"], age["min"], age["max"]) == ("int", 3, 1, 32.0, 20, 40)
    assert (score["count"], score["missing"], score["mean"], score["max"]) == (2, 2, 1.5, 1.5)
    assert {"value": "inf", "count": 1} in score["top"]


def test_columns_and_plain_lists_are_tables_too():
    got = summarise({"x": [1, 2, 3], "label": ["a", "b", "a"]}, **BIG)
    assert [c["name"] for c in got["columns"]] == ["x", "label"] and got["rows"] == 3
    assert got["columns"][0]["mean"] == 2.0
    plain = summarise([3, 1, 2, None], **BIG)
    assert plain["columns"][0]["name"] == "value" and plain["columns"][0]["missing"] == 1
    assert summarise({"a": [1, 2], "b": [1]}, **BIG)["kind"] == "unsupported"   # unequal columns


def test_wide_and_long_tables_are_bounded(monkeypatch):
    wide = summarise([{f"c{i}": i for i in range(70)}], **BIG)
    assert (wide["column_count"], wide["columns_truncated"], len(wide["columns"])) == (70, True, 64)
    monkeypatch.setattr(tables, "TABLE_MAX_ROWS", 100)
    long = summarise(list(range(1000)), **BIG)
    assert (long["rows"], long["sampled"], long["columns"][0]["count"]) == (1000, True, 100)
    assert long == summarise(list(range(1000)), **BIG)
    many = summarise([str(i % 30) for i in range(90)], **BIG)
    assert len(many["columns"][0]["top"]) == 10
