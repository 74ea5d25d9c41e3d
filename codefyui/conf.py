"""Every CODEFYUI_* setting, read from the environment in one place.

The rest of the code imports ``conf`` and reads attributes; tests override them with
``monkeypatch.setattr(conf, ...)``. Defaults are the seed's.
"""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, not {raw!r}") from None


def _networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated addresses or CIDR networks (10.0.0.5, 10.1.0.0/16, fd00::/8)."""
    entries = [entry.strip() for entry in os.environ.get(name, "").split(",") if entry.strip()]
    try:
        return tuple(ipaddress.ip_network(entry) for entry in entries)
    except ValueError as exc:  # e.g. "10.0.0.300 does not appear to be an IPv4 or IPv6 network"
        raise SystemExit(f"{name} must list addresses or networks such as 10.0.0.5 or 10.1.0.0/16: {exc}") from None


# Where the server keeps what it writes: the SQLite file, the secret key, collected static files.
VAR_DIR = Path(os.environ.get("CODEFYUI_VAR_DIR", "").strip() or Path(__file__).resolve().parent.parent / "var")

# Capture store: the newest N runs and this many MiB (0 = no byte budget, run count only).
# The seed fixes 20 runs; a school whose classes are larger can raise it.
RUN_OUTPUT_STORE_MAX_RUNS = _int("CODEFYUI_RUN_OUTPUT_STORE_MAX_RUNS", 20)
RUN_OUTPUT_STORE_MAX_MB = _int("CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", 2048)
# Each class's share of the capture store, in per cent of CODEFYUI_RUN_OUTPUT_STORE_MAX_MB (a
# class an administrator gave its own MB takes that instead). A class's runs evict only its own
# runs; students without a class share the rest. 0: classes without their own MB go with the rest.
CLASS_STORE_SHARE = _int("CODEFYUI_CLASS_STORE_SHARE", 25)
# The store's class, by dotted path (a CaptureStore subclass; a worker box's remote store later).
RUN_OUTPUT_STORE_CLASS = os.environ.get("CODEFYUI_RUN_OUTPUT_STORE_CLASS", "").strip() or "apps.runs.store.MemoryCaptureStore"

# A shared school server must survive a student's mistake.
MAX_TENSOR_ELEMENTS = _int("CODEFYUI_MAX_TENSOR_ELEMENTS", 100_000_000)
RUN_TIMEOUT_S = _int("CODEFYUI_RUN_TIMEOUT_S", 600)
# A graph (every node, blocks' insides included) and its document: far past any lesson's.
MAX_GRAPH_NODES = _int("CODEFYUI_MAX_GRAPH_NODES", 500)
MAX_GRAPH_MB = _int("CODEFYUI_MAX_GRAPH_MB", 2)
# What one student may keep: saved graphs and open tabs (a script's runaway loop must not fill
# the server's disk; My files have their own quota below).
MAX_GRAPHS_PER_USER = _int("CODEFYUI_MAX_GRAPHS_PER_USER", 200)
MAX_TABS_PER_USER = _int("CODEFYUI_MAX_TABS_PER_USER", 50)
MAX_RUNS_PER_USER = _int("CODEFYUI_MAX_RUNS_PER_USER", 500)   # kept: older finished runs are deleted

# Execution: nodes that may run side by side in one run, runs that may run side by side.
MAX_PARALLEL_NODES = _int("CODEFYUI_MAX_PARALLEL_NODES", 4)
MAX_CONCURRENT_RUNS = _int("CODEFYUI_MAX_CONCURRENT_RUNS", 4)
MAX_QUEUED_RUNS_PER_USER = _int("CODEFYUI_MAX_QUEUED_RUNS_PER_USER", 3)
# Pages (or scripts) one student may have following runs live over a WebSocket, per server process.
MAX_RUN_SOCKETS_PER_USER = _int("CODEFYUI_MAX_RUN_SOCKETS_PER_USER", 10)

# Run workers: processes kept started that take runs as they come, one at a time each (plus
# spares, up to MAX_CONCURRENT_RUNS in all, that take a run only while long runs hold every
# other worker: apps/runs/workers.WorkerPool), and the memory one run may add to its worker.
RUN_WORKERS = max(1, _int("CODEFYUI_RUN_WORKERS", max(2, os.cpu_count() or 1)))


def _memory_mb() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError):
        return 8192


# Half the machine's memory, shared by the runs that may compute at once (spare workers let
# CODEFYUI_MAX_CONCURRENT_RUNS compute while long runs hold the others), at least 512 MB each.
RUN_MEMORY_MAX_MB = _int("CODEFYUI_RUN_MEMORY_MAX_MB", max(512, _memory_mb() // 2 // max(1, MAX_CONCURRENT_RUNS)))
EXECUTION_CACHE_MAX_MB = _int("CODEFYUI_EXECUTION_CACHE_MAX_MB", 1024)
# Each worker's shared-memory arena, faulted in at start, that its runs' tensors cross to the
# server through (0: a fresh memfd per tensor). Full, a tensor crosses in a fresh memfd.
RUN_WORKER_ARENA_MB = _int("CODEFYUI_RUN_WORKER_ARENA_MB", 64)

# Script nodes (PythonScript): off unless an administrator turns them on (1 = on, or the admin's
# switch); each script runs in a sandboxed child process of its run worker within these limits.
SCRIPT_NODES = os.environ.get("CODEFYUI_SCRIPT_NODES", "").strip() == "1"
SCRIPT_TIMEOUT_S = _int("CODEFYUI_SCRIPT_TIMEOUT_S", 30)
SCRIPT_MEMORY_MB = _int("CODEFYUI_SCRIPT_MEMORY_MB", 1024)
SCRIPT_SCRATCH_MB = _int("CODEFYUI_SCRIPT_SCRATCH_MB", 64)  # its /tmp, and its /dev/shm, each

# LLMChat: an OpenAI-compatible chat endpoint on the school's network (POST {base}/chat/completions).
# Unset (the default), the server runs offline and LLMChat says no provider is configured.
LLM_BASE_URL = os.environ.get("CODEFYUI_LLM_BASE_URL", "").strip()
LLM_MODEL = os.environ.get("CODEFYUI_LLM_MODEL", "").strip()
LLM_API_KEY = os.environ.get("CODEFYUI_LLM_API_KEY", "").strip()
LLM_TIMEOUT_S = _int("CODEFYUI_LLM_TIMEOUT_S", 30)

# Port statistics (the Stats tab).
STATS_SAMPLE_THRESHOLD = _int("CODEFYUI_STATS_SAMPLE_THRESHOLD", 4_000_000)
STATS_SAMPLE_SIZE = _int("CODEFYUI_STATS_SAMPLE_SIZE", 1_000_000)
STATS_CACHE_MAX_BYTES = _int("CODEFYUI_STATS_CACHE_MAX_BYTES", 8 * 1024 * 1024)

# A school server: HTTPS behind the school's proxy (1 = on), how long a login lasts
# (0 = until the browser closes), and login throttling: failed logins for one username on one
# computer, and from one computer for all usernames together (a count a class's typos do not
# reach), before a lockout of this many minutes.
HTTPS = os.environ.get("CODEFYUI_HTTPS", "").strip() == "1"
SESSION_DAYS = _int("CODEFYUI_SESSION_DAYS", 0)
LOGIN_FAILURE_LIMIT = _int("CODEFYUI_LOGIN_FAILURE_LIMIT", 5)
LOGIN_ADDRESS_FAILURE_LIMIT = _int("CODEFYUI_LOGIN_ADDRESS_FAILURE_LIMIT", 50)
LOGIN_LOCKOUT_MINUTES = _int("CODEFYUI_LOGIN_LOCKOUT_MINUTES", 15)
# The proxies whose X-Forwarded-For is believed (codefyui.access.client_address): none by
# default, since any client can send that header.
TRUSTED_PROXIES = _networks("CODEFYUI_TRUSTED_PROXIES")
# A line per request in the server's log (1 = on): off by default, since under a class's burst
# of runs it is ~8 % of the server process's CPU (codefyui/serving.py).
ACCESS_LOG = os.environ.get("CODEFYUI_ACCESS_LOG", "").strip() == "1"

# First administrator created by `make run` when none exists (else a generated password is printed).
ADMIN_PASSWORD = os.environ.get("CODEFYUI_ADMIN_PASSWORD", "")

# Each editor tab's Undo / Redo history: at most this many MiB of (compressed) steps each; the
# oldest steps go first (also past 50 steps).
UNDO_MAX_MB = _int("CODEFYUI_UNDO_MAX_MB", 8)

# Where an administrator puts the files of MNIST, Fashion-MNIST and CIFAR-10 (README, "Datasets");
# nothing is ever downloaded.
DATA_DIR = os.environ.get("CODEFYUI_DATA_DIR", "").strip() or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var", "data")

# The students' own files (My files: the models and checkpoints their runs save, files they
# upload): a folder per student under this one, each holding at most this many MiB (counted as the
# disk allocates it: a 1-byte file takes a whole block) and at most this many files.
USER_FILES_DIR = Path(os.environ.get("CODEFYUI_USER_FILES_DIR", "").strip() or VAR_DIR / "userfiles")
USER_FILES_MAX_MB = _int("CODEFYUI_USER_FILES_MAX_MB", 200)
USER_FILES_MAX_FILES = _int("CODEFYUI_USER_FILES_MAX_FILES", 1000)

# Where an administrator puts tiktoken encoding files for the Tokenizer node (cl100k_base.tiktoken,
# o200k_base.tiktoken, p50k_base.tiktoken, r50k_base.tiktoken for gpt2); nothing is ever downloaded.
TOKENIZER_DIR = os.environ.get("CODEFYUI_TOKENIZER_DIR", "").strip() or os.path.join(DATA_DIR, "tokenizers")
