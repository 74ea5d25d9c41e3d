"""Shared memory for the wire: arenas, the slices copied into them, and memfd copies.

``Arena`` is a worker's memfd whose slices storages are copied into; ``ArenaMapping`` is one
arena as a process maps it (the storages on it, each slice handed back once its last tensor
dies); ``MAPPINGS`` are every arena this process maps, so a storage on one crosses as a slice of
it (``mapping_of``). ``Copies`` remembers what one end copied for sending (an arena slice or a
fresh memfd), and ``memfd_storage`` maps a memfd a message carried. No Django here.
"""
from __future__ import annotations

import bisect
import ctypes
import mmap
import os
import threading
import weakref
from typing import Any, Callable

import numpy as np
import torch
from torch.multiprocessing import reductions

_ALIGN = 64                        # arena slices start on a cache line

MEMFD = hasattr(os, "memfd_create") and hasattr(os, "posix_fallocate")


def fd_key(fd: int) -> tuple[int, int]:
    """What names one memfd in any process that holds a descriptor of it."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class ArenaMapping:
    """One arena as this process maps it: the worker that owns it, or the server (or a worker)
    that received its descriptor. Storages on it are views of the mapping, one live storage
    per slice; ``release`` (the receiving end of the owner's wire) is told, per slice, how
    many messages named it once the last tensor on it dies."""

    def __init__(self, fd: int, size: int, release: Callable[[int, int], None] | None = None):
        self.fd, self.size, self.release = fd, size, release
        self.map = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        self.bytes = np.frombuffer(self.map, dtype=np.uint8)
        self.base = self.bytes.ctypes.data
        self.key = fd_key(fd)
        weakref.finalize(self, os.close, fd)   # a mapping no one sends from any more; its storages keep their pages
        self._live: dict[int, list] = {}   # offset -> [weak ref to the storage, size, messages counted]
        self._views: dict[int, tuple] = {}  # id of a view's weak ref -> (the ref, its offset, its entry)
        self._lock = threading.Lock()

    def holds(self, storage: torch.UntypedStorage) -> int | None:
        """The storage's offset, when it is a slice of this mapping."""
        offset = storage.data_ptr() - self.base
        return offset if 0 <= offset and offset + storage.nbytes() <= self.size else None

    def storage(self, offset: int, size: int, counted: bool) -> torch.UntypedStorage:
        """The storage of a slice: the live one if there is one (one storage per slice),
        else a new view. ``counted``: a message of the owner named it (it is handed back)."""
        with self._lock:
            entry = self._live.get(offset)
            if entry is not None and entry[1] == size and not entry[0].expired():
                storage = torch.UntypedStorage._new_with_weak_ptr(entry[0].cdata)
                if storage is not None:
                    entry[2] += counted
                    return storage
            view = self.bytes[offset:offset + size]
            storage = torch.from_numpy(view).untyped_storage()
            entry = [reductions.StorageWeakRef(storage), size, int(counted)]
            self._live[offset] = entry
        # The view lives exactly as long as the storage on it (torch holds it): its end is the
        # slice's. A weak reference with a callback, kept here until then, tells it: a tenth of
        # what weakref.finalize costs, and a run's captures each make one.
        ref = weakref.ref(view, self._died)
        self._views[id(ref)] = (ref, offset, entry)
        return storage

    def _died(self, ref: weakref.ref) -> None:
        _, offset, entry = self._views.pop(id(ref))
        with self._lock:
            if self._live.get(offset) is entry:
                del self._live[offset]
        if entry[2] and self.release is not None:
            self.release(offset, entry[2])


class Arena(ArenaMapping):
    """A worker's arena: a memfd it maps and faults in once, whose slices it copies storages
    into. A slice is in use from its copy until every message that named it was handed back."""

    def __init__(self, size: int):
        fd = os.memfd_create("codefyui-arena", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        os.posix_fallocate(fd, 0, size)
        super().__init__(fd, size)
        self.bytes.fill(0)                 # every page faulted in now, not during a run
        self._free = [(0, size)]           # (offset, size), sorted by offset
        self._used: dict[int, int] = {}    # offset -> size
        self._named: dict[int, int] = {}   # offset -> messages naming it not yet handed back
        self._alloc_lock = threading.Lock()

    def copy_in(self, storage: torch.UntypedStorage) -> int | None:
        """Copy the storage into a free slice; its offset, or None when no slice is free."""
        size = storage.nbytes()
        need = -(-size // _ALIGN) * _ALIGN
        with self._alloc_lock:
            for i, (start, length) in enumerate(self._free):
                if length >= need:
                    break
            else:
                return None
            self._free[i:i + 1] = [(start + need, length - need)] if length > need else []
            self._used[start] = need
            self._named[start] = 0
        ctypes.memmove(self.base + start, storage.data_ptr(), size)
        return start

    def named(self, offset: int, times: int = 1) -> bool:
        """Messages about to go name the slice ``times`` more times (fewer: they did not go);
        True when that leaves it free."""
        with self._alloc_lock:
            self._named[offset] += times
            if self._named[offset] > 0:
                return False
            self._release(offset)
            return True

    def handed_back(self, offset: int, times: int) -> bool:
        """The server let go of a slice that ``times`` messages named; True once it is free."""
        with self._alloc_lock:
            if offset not in self._named:
                return False
            self._named[offset] -= times
            if self._named[offset] > 0:
                return False
            self._release(offset)
            return True

    def _release(self, offset: int) -> None:
        del self._named[offset]
        size = self._used.pop(offset)
        i = bisect.bisect(self._free, (offset, 0))
        start, end = offset, offset + size
        if i < len(self._free) and self._free[i][0] == end:           # joins the block after it
            end += self._free.pop(i)[1]
        if i and sum(self._free[i - 1]) == start:                     # and the one before it
            start = self._free.pop(i - 1)[0]
            i -= 1
        self._free.insert(i, (start, end - start))

    def free_bytes(self) -> int:
        with self._alloc_lock:
            return sum(length for _, length in self._free)


# Every arena this process maps (its own, its workers'), by memfd: a storage on one of them
# crosses as a slice of it to whichever end it goes.
MAPPINGS: dict[tuple[int, int], ArenaMapping] = {}
MAPPINGS_LOCK = threading.Lock()


def mapping_of(storage: torch.UntypedStorage) -> tuple[ArenaMapping, int] | None:
    with MAPPINGS_LOCK:
        mappings = list(MAPPINGS.values())
    for mapping in mappings:
        offset = mapping.holds(storage)
        if offset is not None:
            return mapping, offset
    return None


class Copies:
    """What one end has copied for sending: storage -> where its copy lies (an arena slice's
    offset, or a memfd), while the storage lives. A copy is never served for a storage that
    has died (its address may be reused), and ``forget`` drops them all."""

    def __init__(self, arena: Arena | None = None) -> None:
        self.arena = arena
        self._known: dict[int, tuple[Any, str, int]] = {}   # data_ptr -> (weak ref, "arena" | "fd", offset | memfd)
        self._slices: dict[int, int] = {}                  # arena offset -> data_ptr of the storage copied there
        self._lock = threading.Lock()

    def place(self, storage: torch.UntypedStorage) -> tuple[str, int]:
        """("arena", offset) or ("fd", memfd) of the storage's copy, made now if none is known.
        An arena slice is counted as named by one more message (``Arena.named``)."""
        key = storage.data_ptr()
        ref = reductions.StorageWeakRef(storage)
        with self._lock:
            known = self._known.get(key)
            if known is not None and not known[0].expired() and known[0].cdata == ref.cdata:
                if known[1] == "arena":
                    self.arena.named(known[2])
                return known[1], known[2]
        offset = self.arena.copy_in(storage) if self.arena is not None else None
        where = ("arena", offset) if offset is not None else ("fd", _shared_copy(storage))
        with self._lock:
            known = self._known.get(key)
            if known is not None and not known[0].expired() and known[0].cdata == ref.cdata:
                self._discard(*where)   # another thread sent the same storage meanwhile: one copy
                return known[1], known[2]
            if known is not None:       # a dead storage's copy: nothing is sending it any more
                self._drop(key)
            self._known[key] = (ref, *where)
            if where[0] == "arena":
                self._slices[where[1]] = key
                self.arena.named(where[1])
        return where

    def _discard(self, kind: str, value: int) -> None:
        if kind == "fd":
            os.close(value)
        else:
            self.arena.named(value, 0)   # named by no message: free again

    def _drop(self, key: int) -> None:
        _, kind, value = self._known.pop(key)
        if kind == "fd":
            os.close(value)
        elif self._slices.get(value) == key:
            del self._slices[value]

    def handed_back(self, offset: int, times: int) -> None:
        """The other end let go of an arena slice: once free, it is no storage's copy any more."""
        self._unname(offset, lambda: self.arena.handed_back(offset, times))

    def not_sent(self, offset: int) -> None:
        """A message that named the slice could not be pickled: it never went."""
        self._unname(offset, lambda: self.arena.named(offset, -1))

    def _unname(self, offset: int, unname: Callable[[], bool]) -> None:
        with self._lock:   # held throughout: a slice freed here is nobody's copy before it is reused
            if unname():
                key = self._slices.pop(offset, None)
                if key is not None and self._known.get(key, (None, "", -1))[1:] == ("arena", offset):
                    del self._known[key]

    def forget(self) -> None:
        with self._lock:
            known, self._known, self._slices = self._known, {}, {}
        for _, kind, value in known.values():
            if kind == "fd":
                os.close(value)


def _shared_copy(storage: torch.UntypedStorage) -> int:
    """A memfd holding a copy of the storage's bytes (its pages allocated at once)."""
    size = storage.nbytes()
    fd = os.memfd_create("codefyui-tensor", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
        os.posix_fallocate(fd, 0, size)   # ENOSPC here, not a SIGBUS on a later write
        torch.UntypedStorage._new_shared_fd_cpu(fd, size).copy_(storage)
    except BaseException:
        os.close(fd)
        raise
    return fd


class _WeakStorages:
    """Storages by key while they live (a weak reference each), forgetting dead ones as it grows."""

    def __init__(self) -> None:
        self._refs: dict[Any, Any] = {}
        self._prune_at = 256
        self._lock = threading.Lock()

    def setdefault(self, key, make: Callable[[], torch.UntypedStorage]) -> torch.UntypedStorage:
        """The live storage under ``key``, or the one ``make`` makes now."""
        with self._lock:
            ref = self._refs.get(key)
            storage = None if ref is None or ref.expired() else torch.UntypedStorage._new_with_weak_ptr(ref.cdata)
            if storage is None:
                storage = make()
                self._refs[key] = reductions.StorageWeakRef(storage)
                if len(self._refs) >= self._prune_at:
                    self._refs = {k: r for k, r in self._refs.items() if not r.expired()}
                    self._prune_at = max(256, 2 * len(self._refs))
            return storage


# Storages mapped from a memfd a message carried, by memfd: a storage sent twice (as a capture
# and as a cache entry) is one storage here while it lives.
_MAPPED = _WeakStorages()


def memfd_storage(fd: int, size: int) -> torch.UntypedStorage:
    """The storage of a memfd a message carried, mapped by its /proc path so that no descriptor
    stays open: torch's own way (``_new_shared_fd_cpu``) kept one per storage, and a server
    keeps thousands of captures and cache entries; at a process's usual limit of 1024 open
    descriptors every student's connection was refused."""
    return _MAPPED.setdefault(fd_key(fd), lambda: torch.UntypedStorage.from_file(
        f"/proc/self/fd/{fd}", shared=True, nbytes=size))
