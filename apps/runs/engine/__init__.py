"""The execution engine: plans and runs a graph document. It knows nothing of Django."""
from .cache import CacheScope, ExecutionCache
from .events import Event, summarise
from .executor import (RunOptions, RunOutcome, available_devices, cache_keys, execute, resolve_device,
                       timeout_message)
from .files import FileRefused, StoredFile, UserFiles, clean_name, megabytes
from .limits import warm_up
from .weights import WEIGHTS
from .plan import DRAFT_MESSAGE, DraftGraph, InvalidGraph, Plan, plan_run

__all__ = ["CacheScope", "DRAFT_MESSAGE", "DraftGraph", "Event", "ExecutionCache", "FileRefused", "InvalidGraph",
           "Plan", "RunOptions", "RunOutcome", "StoredFile", "UserFiles", "clean_name", "megabytes", "WEIGHTS", "available_devices", "cache_keys", "execute", "plan_run",
           "resolve_device", "summarise", "timeout_message", "warm_up"]
