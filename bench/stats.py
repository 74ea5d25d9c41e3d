"""Port statistics: summarise() against the naive numpy baseline, side by side in one run.

For 1M, 4M and 50M float32 elements (normal, with a few NaN and ±Inf), times the stats
endpoint's computation (apps.stats.summary.summarise with the default settings: exact up to
4M elements, a 1M-element sample above) and the naive numpy baseline: drop non-finite values,
then min, max, mean, std, np.percentile for the seven quantiles, np.histogram with 64 bins,
and the NaN/Inf/zero counts. Repeats alternate which goes first; medians are compared.

Goals (issue 5): at least 3x faster than the baseline at 4M (exact), and the 50M summary
(sampled) in under twice the time of the 4M one.
Run: .venv/bin/python bench/stats.py [--repeats N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from apps.stats.summary import summarise  # noqa: E402
from codefyui import conf  # noqa: E402

SIZES = {"1M": 1_000_000, "4M": 4_000_000, "50M": 50_000_000}
PERCENTS = [1, 5, 25, 50, 75, 95, 99]


def naive_numpy(a: np.ndarray) -> dict:
    finite = a[np.isfinite(a)]
    return {"nan": int(np.isnan(a).sum()), "inf": int(np.isinf(a).sum()), "zero_frac": float(np.mean(a == 0)),
            "min": finite.min(), "max": finite.max(), "mean": finite.mean(), "std": finite.std(),
            "quantiles": np.percentile(finite, PERCENTS), "histogram": np.histogram(finite, 64)}


def sample_tensor(n: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=generator)
    spots = torch.randint(0, n, (30,), generator=generator)
    x[spots[:10]], x[spots[10:20]], x[spots[20:]] = float("nan"), float("inf"), -float("inf")
    return x


def seconds(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def compare(x: torch.Tensor, repeats: int) -> tuple[float, float, bool]:
    """Median seconds of summarise() and of the baseline, and whether the summary was sampled."""
    a = x.numpy()
    ours, baseline = [], []
    ours_fn = lambda: summarise(x, threshold=conf.STATS_SAMPLE_THRESHOLD, sample_size=conf.STATS_SAMPLE_SIZE)  # noqa: E731
    ours_fn(), naive_numpy(a)   # warm-up
    for i in range(repeats):
        if i % 2:
            ours.append(seconds(ours_fn))
            baseline.append(seconds(lambda: naive_numpy(a)))
        else:
            baseline.append(seconds(lambda: naive_numpy(a)))
            ours.append(seconds(ours_fn))
    return statistics.median(ours), statistics.median(baseline), ours_fn()["sampled"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats at 1M and 4M (50M gets a third)")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads (default); numpy {np.__version__}")
    print(f"settings: exact up to {conf.STATS_SAMPLE_THRESHOLD:,} elements, then a {conf.STATS_SAMPLE_SIZE:,}-element sample")
    ours_at = {}
    speedup_4m = None
    for label, n in SIZES.items():
        repeats = args.repeats if n <= 4_000_000 else max(3, args.repeats // 3)
        x = sample_tensor(n, seed=n)
        ours, baseline, sampled = compare(x, repeats)
        ours_at[label] = ours
        speedup = baseline / ours
        if label == "4M":
            speedup_4m = speedup
        print(f"{label:>4} float32 ({'sampled' if sampled else 'exact'}): summarise {ours * 1e3:8.1f} ms   "
              f"naive numpy {baseline * 1e3:8.1f} ms   speedup {speedup:5.2f}x   (median of {repeats})")
        del x
    print(f"50M sampled / 4M exact time: {ours_at['50M'] / ours_at['4M']:.2f} (goal < 2)")
    print(f"figure: stats_speedup_4M = {speedup_4m:.2f}")


if __name__ == "__main__":
    main()
