"""Every CODEFYUI_* setting, read from the environment in one place.

The rest of the code imports ``conf`` and reads attributes; tests override them with
``monkeypatch.setattr(conf, ...)``. Defaults are the seed's.
"""
from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, not {raw!r}") from None


# Capture store: the newest N runs and this many MiB (0 = no byte budget, run count only).
# The seed fixes 20 runs; a school whose classes are larger can raise it.
RUN_OUTPUT_STORE_MAX_RUNS = _int("CODEFYUI_RUN_OUTPUT_STORE_MAX_RUNS", 20)
RUN_OUTPUT_STORE_MAX_MB = _int("CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", 2048)
# The store's class, by dotted path (a CaptureStore subclass; a worker box's remote store later).
RUN_OUTPUT_STORE_CLASS = os.environ.get("CODEFYUI_RUN_OUTPUT_STORE_CLASS", "").strip() or "apps.runs.store.MemoryCaptureStore"

# A shared school server must survive a student's mistake.
MAX_TENSOR_ELEMENTS = _int("CODEFYUI_MAX_TENSOR_ELEMENTS", 100_000_000)
RUN_TIMEOUT_S = _int("CODEFYUI_RUN_TIMEOUT_S", 600)

# Execution: nodes that may run side by side in one run, runs that may run side by side.
MAX_PARALLEL_NODES = _int("CODEFYUI_MAX_PARALLEL_NODES", 4)
MAX_CONCURRENT_RUNS = _int("CODEFYUI_MAX_CONCURRENT_RUNS", 4)
MAX_QUEUED_RUNS_PER_USER = _int("CODEFYUI_MAX_QUEUED_RUNS_PER_USER", 3)

# Run workers: processes kept started (each runs one run at a time; at most
# MAX_CONCURRENT_RUNS of them compute at once) and the memory one run may add to its worker.
RUN_WORKERS = max(1, _int("CODEFYUI_RUN_WORKERS", max(2, os.cpu_count() or 1)))


def _memory_mb() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError):
        return 8192


# Half the machine's memory, shared by the runs that may compute at once, at least 512 MB each.
RUN_MEMORY_MAX_MB = _int("CODEFYUI_RUN_MEMORY_MAX_MB",
                         max(512, _memory_mb() // 2 // max(1, min(RUN_WORKERS, MAX_CONCURRENT_RUNS))))
EXECUTION_CACHE_MAX_MB = _int("CODEFYUI_EXECUTION_CACHE_MAX_MB", 1024)

# Port statistics (the Stats tab).
STATS_SAMPLE_THRESHOLD = _int("CODEFYUI_STATS_SAMPLE_THRESHOLD", 4_000_000)
STATS_SAMPLE_SIZE = _int("CODEFYUI_STATS_SAMPLE_SIZE", 1_000_000)
STATS_CACHE_MAX_BYTES = _int("CODEFYUI_STATS_CACHE_MAX_BYTES", 8 * 1024 * 1024)

# First administrator created by `make run` when none exists (else a generated password is printed).
ADMIN_PASSWORD = os.environ.get("CODEFYUI_ADMIN_PASSWORD", "")
