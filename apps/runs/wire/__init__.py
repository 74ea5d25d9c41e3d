"""The wire between the server and one run worker: a Unix socket carrying pickled messages,
each CPU tensor's storage in shared memory and only where it lies crossing in the pickle, so a
tensor's bytes are never copied through the socket. No Django here.

Where a storage's bytes go, in the sender's order of choice:

- **Inline**, under ``INLINE_MAX`` bytes (a bias, a loss): inside the pickle. A shared page
  and its bookkeeping cost more than copying a few kilobytes.
- **A slice of a shared arena it came from**: a storage that is already a slice of an arena
  this process has mapped (a capture the server sends back as a cache hit, a kept layer)
  goes as (that arena's descriptor, offset, size), never copied again.
- **The worker's arena** (``Arena``): a worker owns one memfd of ``arena_bytes``, mapped
  and faulted in once at start, which the server maps once too (the worker offers it in its
  first message). A storage is copied into a free slice of it, a plain memcpy into warm
  pages, and goes as (offset, size). Fresh shared pages cost ~1 GB/s on this kind of
  machine (a fault and zeroing per page), which was most of what a run's captures cost.
  The server's storage of a slice is a view of its own mapping; when the last tensor on it
  dies (the capture store evicted or dropped the run, the cache let the entry go) the server
  hands the slice back (``"release"``, how many messages named it), and the worker frees it
  once every message that named it has been handed back. Since the server's mapping lives
  as long as any storage on it, a worker that dies takes none of the server's captures
  with it; its arena's memory goes when the last of them does.
- **A fresh memfd** when the arena is full (or on the server's end, which has none): a copy
  into a memfd whose pages are allocated in one call (fallocate). torch's own move into
  shared memory (``_share_fd_cpu_``) touched them one fault at a time, 2-30 ms per 512 KB.
  The receiver maps it by its /proc path and keeps no descriptor open (a server keeps
  thousands of captures); sent on again (a cache hit), such a storage is copied like any
  other. A storage in torch's own shared memory goes as its own descriptor.

Descriptors pass beside the pickle (SCM_RIGHTS, all of a message's in one sendmsg; torch's
own reductions fetched each over a fresh connection, ~0.7 ms per tensor on each side). A
copy leaves the sender's tensor as it was, so it is safe from any thread. A worker's end
remembers what it copied until ``forget`` (a worker calls it when a run ends), so a storage
sent twice, as a capture and as a cache entry, is one slice or memfd, and the receiver maps
one storage of it. Everything that is not a CPU storage pickles as torch.multiprocessing would.

The package: framing.py (``Wire``: messages, descriptors, the arenas' offer and hand-backs),
arena.py (shared memory: the worker's arena, mappings of arenas, memfd copies) and
pickling.py (where each storage's bytes go, and back).
"""
from .framing import Wire

__all__ = ["Wire"]
