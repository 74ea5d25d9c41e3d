"""The mean of a large tensor, as the run summaries and the Inspector's meta line take it:
float64 accumulation a piece at a time (events.mean64) against one sum(dtype=float64), which
first copies the whole tensor to float64. Prints median time and the peak memory each adds.

Run: .venv/bin/python bench/tensor_mean.py
"""
from __future__ import annotations

import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from apps.runs.engine.events import mean64  # noqa: E402

ELEMENTS, REPEATS = 50_000_000, 7


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(name: str, mean) -> tuple[float, float]:
    """(median ms, the mean). The peak only grows: measure the leaner way first."""
    before = peak_mb()
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        value = mean()
        times.append((time.perf_counter() - started) * 1e3)
    median = statistics.median(times)
    print(f"{name:28s} median {median:7.1f} ms, peak memory +{peak_mb() - before:5.0f} MB")
    return median, value


def main() -> None:
    torch.set_num_threads(1)
    t = torch.randn(ELEMENTS, generator=torch.Generator().manual_seed(0))
    pieces, by_pieces = measure("mean64 (pieces)", lambda: mean64(t))
    whole, by_whole = measure("sum(dtype=float64) (whole)", lambda: t.sum(dtype=torch.float64).item() / t.numel())
    assert abs(by_pieces - by_whole) < 1e-12, (by_pieces, by_whole)
    print(f"figure: mean64_speedup_50M = {whole / pieces:.1f}")


if __name__ == "__main__":
    main()
