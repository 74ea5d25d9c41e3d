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
"""
from __future__ import annotations

import array
import bisect
import collections
import ctypes
import io
import mmap
import os
import pickle
import socket
import struct
import threading
import weakref
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable

import numpy as np
import torch
from torch.multiprocessing import reductions

_HEAD = struct.Struct("!QI")       # pickle bytes, descriptors that follow
_FDS_PER_MESSAGE = 250             # the kernel passes at most 253 descriptors per sendmsg
_ANCILLARY = socket.CMSG_SPACE(_FDS_PER_MESSAGE * 4)
INLINE_MAX = 64 * 1024             # storages smaller than this travel inside the pickle
_ALIGN = 64                        # arena slices start on a cache line

_MEMFD = hasattr(os, "memfd_create") and hasattr(os, "posix_fallocate")


def _fd_key(fd: int) -> tuple[int, int]:
    """What names one memfd in any process that holds a descriptor of it."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class _Mapping:
    """One arena as this process maps it: the worker that owns it, or the server (or a worker)
    that received its descriptor. Storages on it are views of the mapping, one live storage
    per slice; ``release`` (the receiving end of the owner's wire) is told, per slice, how
    many messages named it once the last tensor on it dies."""

    def __init__(self, fd: int, size: int, release: Callable[[int, int], None] | None = None):
        self.fd, self.size, self.release = fd, size, release
        self.map = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        self.bytes = np.frombuffer(self.map, dtype=np.uint8)
        self.base = self.bytes.ctypes.data
        self.key = _fd_key(fd)
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


class Arena(_Mapping):
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
_MAPPINGS: dict[tuple[int, int], _Mapping] = {}
_MAPPINGS_LOCK = threading.Lock()


def _mapping_of(storage: torch.UntypedStorage) -> tuple[_Mapping, int] | None:
    with _MAPPINGS_LOCK:
        mappings = list(_MAPPINGS.values())
    for mapping in mappings:
        offset = mapping.holds(storage)
        if offset is not None:
            return mapping, offset
    return None


class _Copies:
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


class _Offer:
    """A worker's arena, offered in its first message: the server maps it once."""

    def __init__(self, arena: Arena):
        self.arena = arena


class _Pickler(ForkingPickler):
    def __init__(self, file, fds: list[int], copies: _Copies):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._fds = fds
        self._copies = copies
        self._index: dict[int, int] = {}
        self._inline: dict[int, int] = {}     # data_ptr -> its index: a storage twice in a message is one
        self.named: list[int] = []            # arena slices this message names, once per mention
        # A storage made only while pickling (a torch.Generator's state) would close its fd
        # when freed, before the message goes: kept until the pickler is.
        self.storages: list[torch.UntypedStorage] = []
        self.mappings: list[_Mapping] = []

    def _fd(self, fd: int) -> int:
        if fd not in self._index:
            self._index[fd] = len(self._fds)
            self._fds.append(fd)
        return self._index[fd]

    def reducer_override(self, obj: Any):
        """A plain CPU tensor as its storage and layout (torch's own reduction makes a typed
        storage and a dozen objects per tensor); a CPU storage, and the arena's offer, as
        where their bytes lie (``_place``). Everything else as torch.multiprocessing would.
        Unlike ``persistent_id``, which pickle asks about every object (a message's events
        are a thousand strings and numbers), this is asked only about objects of other types."""
        kind = type(obj)
        if kind is torch.Tensor:
            if obj.is_conj() or obj.is_neg():   # torch's own reduction drops the bit
                obj = obj.resolve_conj().resolve_neg()
            if _plain_cpu(obj):
                return _tensor, (obj.untyped_storage(), obj.dtype, obj.storage_offset(), tuple(obj.shape),
                                 obj.stride(), obj.requires_grad)
        elif kind is torch.UntypedStorage or kind is _Offer:
            where = self._place(obj)
            if where is not None:
                return _received, (where,)
        return NotImplemented

    def _place(self, obj: Any) -> tuple | None:
        """Where a storage's bytes go, as the receiver's ``_Unpickler.storage`` reads it."""
        if type(obj) is _Offer:
            return "offer", self._fd(obj.arena.fd), obj.arena.size
        if obj.device.type != "cpu" or obj.nbytes() == 0:
            return None
        self.storages.append(obj)
        size = obj.nbytes()
        if size < INLINE_MAX:
            key = obj.data_ptr()
            if key in self._inline:
                return "again", self._inline[key]
            self._inline[key] = len(self._inline)
            return "bytes", self._inline[key], _bytes_of(obj)
        found = _mapping_of(obj)
        if found is not None:   # a slice it received (a cache hit, a kept layer): where it lies
            mapping, offset = found
            self.mappings.append(mapping)   # its descriptor stays open until the message has gone
            return "slice", self._fd(mapping.fd), offset, size
        if obj.is_shared() or not _MEMFD:
            fd, size = obj._share_fd_cpu_()   # already in shared memory of torch's: its own fd
            if fd >= 0:   # (a storage received here keeps no descriptor: it is copied like any other)
                return "shm", self._fd(fd), size
        kind, value = self._copies.place(obj)
        if kind == "arena":
            self.named.append(value)
            return "arena", value, size
        return "shm", self._fd(value), size


def _plain_cpu(t: torch.Tensor) -> bool:
    return (t.device.type == "cpu" and t.layout == torch.strided and not t.is_quantized
            and (t.is_leaf or not t.requires_grad))


def _tensor(storage, dtype, offset, size, stride, requires_grad) -> torch.Tensor:
    t = torch.empty(0, dtype=dtype).set_(storage, offset, size, stride)
    return t.requires_grad_() if requires_grad else t


_LOADING = threading.local()   # the unpickler at work in this thread


def _received(where: tuple) -> Any:
    return _LOADING.unpickler.storage(where)


def _bytes_of(storage: torch.UntypedStorage) -> bytes:
    return bytes(torch.empty(0, dtype=torch.uint8).set_(storage).numpy())


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, fds: list[int], wire: "Wire"):
        super().__init__(file)
        self._fds = fds
        self._wire = wire
        self._inline: list[torch.UntypedStorage] = []

    def load(self) -> Any:
        _LOADING.unpickler = self
        try:
            return super().load()
        finally:
            _LOADING.unpickler = None

    def storage(self, pid: tuple) -> Any:
        kind = pid[0]
        if kind == "bytes":
            storage = torch.frombuffer(bytearray(pid[2]), dtype=torch.uint8).untyped_storage()
            self._inline.append(storage)
            return storage
        if kind == "again":
            return self._inline[pid[1]]
        if kind == "arena":   # a slice of the other end's arena, which it offered
            return self._wire.peer.storage(pid[1], pid[2], counted=True)
        if kind == "slice":
            return self._wire.mapping(self._fds[pid[1]]).storage(pid[2], pid[3], counted=False)
        if kind == "offer":
            self._wire.accept(self._fds[pid[1]], pid[2])
            return None
        _, index, size = pid
        return _memfd_storage(self._fds[index], size)


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


def _memfd_storage(fd: int, size: int) -> torch.UntypedStorage:
    """The storage of a memfd a message carried, mapped by its /proc path so that no descriptor
    stays open: torch's own way (``_new_shared_fd_cpu``) kept one per storage, and a server
    keeps thousands of captures and cache entries; at a process's usual limit of 1024 open
    descriptors every student's connection was refused."""
    return _MAPPED.setdefault(_fd_key(fd), lambda: torch.UntypedStorage.from_file(
        f"/proc/self/fd/{fd}", shared=True, nbytes=size))


class Wire:
    """One end of the socket. ``send`` may be called from several threads; ``recv`` from one."""

    def __init__(self, sock: socket.socket, keep_copies: bool = False, arena_bytes: int = 0):
        """``keep_copies``: remember each shared-memory copy sent until ``forget`` (a worker's
        end, where a run's outputs go as captures and as cache entries). ``arena_bytes``: copy
        into an arena of that size (a worker's end; ``offer`` tells the other end)."""
        self.sock = sock
        self._lock = threading.Lock()
        self.arena = Arena(arena_bytes) if arena_bytes > 0 and _MEMFD else None
        if self.arena is not None:
            with _MAPPINGS_LOCK:
                _MAPPINGS[self.arena.key] = self.arena
        self._copies = _Copies(self.arena) if keep_copies or self.arena is not None else None
        self.peer: _Mapping | None = None          # the other end's arena, once offered
        self._foreign: dict[tuple[int, int], _Mapping] = {}   # other arenas mapped for this run
        self._handed_back: collections.deque = collections.deque()   # (offset, times) for the peer

    def offer(self) -> Any:
        """What to put in a message so that the other end maps this end's arena (None: none)."""
        return _Offer(self.arena) if self.arena is not None else None

    def accept(self, fd: int, size: int) -> None:
        """The other end offered its arena: map it; its slices are handed back through this wire."""
        self.peer = _Mapping(os.dup(fd), size, release=lambda offset, times: self._handed_back.append((offset, times)))
        with _MAPPINGS_LOCK:
            _MAPPINGS[self.peer.key] = self.peer

    def mapping(self, fd: int) -> _Mapping:
        """The mapping of an arena a "slice" names: a known one, or mapped now for this run."""
        key = _fd_key(fd)
        with _MAPPINGS_LOCK:
            found = _MAPPINGS.get(key) or self._foreign.get(key)
            if found is None:
                found = self._foreign[key] = _Mapping(os.dup(fd), os.fstat(fd).st_size)   # the message's fd is closed after it
        return found

    def forget(self) -> None:
        """Drop the descriptors of the copies sent so far (a run has ended: nothing of it is
        sent again), and the other arenas this run mapped (their storages keep their pages).
        The receiver's mappings stay."""
        if self._copies is not None:
            self._copies.forget()
        self._foreign = {}


    def handed_back(self, slices: list[tuple[int, int]]) -> None:
        """The other end let go of these slices of this end's arena ("release")."""
        for offset, times in slices:
            self._copies.handed_back(offset, times)

    def send(self, message: Any) -> None:
        """Raises what pickling raises before anything is written, OSError when the other end is gone."""
        buffer, fds = io.BytesIO(), []
        copies = self._copies or _Copies()   # without keep_copies, this message's own (a storage reached twice: one copy)
        pickler = _Pickler(buffer, fds, copies)   # holds the message's storages (and so their fds) until sent
        try:
            try:
                pickler.dump(message)
            except BaseException:
                for offset in pickler.named:   # nothing went: the slices it named are not named
                    copies.not_sent(offset)
                raise
            self._write(buffer.getbuffer(), fds, before=self._handed_back_frame())
        finally:
            if copies is not self._copies:
                copies.forget()

    def _handed_back_frame(self) -> bytes:
        """The "release" message for the slices let go of since the last one, as it goes on the wire (b"": none)."""
        slices = []
        while self._handed_back:
            slices.append(self._handed_back.popleft())
        if not slices:
            return b""
        payload = pickle.dumps(("release", slices), pickle.HIGHEST_PROTOCOL)
        return _HEAD.pack(len(payload), 0) + payload

    def _send_handed_back(self) -> None:
        frame = self._handed_back_frame()
        if frame:
            try:
                with self._lock:
                    self.sock.sendall(frame)
            except OSError:
                pass   # the worker is gone, and its arena's slices with it

    def _write(self, payload, fds: list[int], before: bytes = b"") -> None:
        """One message. ``before``: whole messages without descriptors (hand-backs) that go
        first, in the same system call when this one has no descriptors: each call wakes the
        other end, which on a busy machine takes the sender's core for a while."""
        head = _HEAD.pack(len(payload), len(fds))
        with self._lock:
            if before and fds:   # descriptors travel with the first byte of a call: theirs must be the head's
                self.sock.sendall(before)
                before = b""
            chunks = [fds[i:i + _FDS_PER_MESSAGE] for i in range(0, len(fds), _FDS_PER_MESSAGE)] or [[]]
            if len(chunks) == 1:   # most messages: head, descriptors and pickle in one system call
                parts = [before, head, payload] if before else [head, payload]
                ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
                sent = self.sock.sendmsg(parts, ancillary)
                for part in parts:   # what did not fit in the socket's buffer
                    if sent >= len(part):
                        sent -= len(part)
                        continue
                    self.sock.sendall(memoryview(part)[sent:])
                    sent = 0
                return
            for i, chunk in enumerate(chunks):
                data = head if i == 0 else b"\0"
                ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", chunk))] if chunk else []
                sent = self.sock.sendmsg([data], ancillary)
                if sent < len(data):
                    self.sock.sendall(data[sent:])
            self.sock.sendall(payload)

    def recv(self) -> Any:
        """The next message; EOFError when the other end has closed or ended. Slices of the
        other end's arena let go of meanwhile are handed back first."""
        self._send_handed_back()
        head, fds = self._receive(_HEAD.size, with_fds=True)
        try:
            size, count = _HEAD.unpack(head)
            while len(fds) < count:
                fds += self._receive(1, with_fds=True)[1]
            payload = self._receive(size)[0]
            return _Unpickler(io.BytesIO(payload), fds, self).load()
        finally:
            for fd in fds:
                os.close(fd)
            self._send_handed_back()

    def _receive(self, size: int, with_fds: bool = False) -> tuple[bytes, list[int]]:
        data, fds = bytearray(), []
        while len(data) < size:
            if with_fds and not data:
                chunk, ancillary, _, _ = self.sock.recvmsg(size, _ANCILLARY)
                for level, kind, raw in ancillary:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds += array.array("i", raw[:len(raw) - len(raw) % 4])
            else:
                chunk = self.sock.recv(min(size - len(data), 1 << 20))
            if not chunk:
                for fd in fds:
                    os.close(fd)
                raise EOFError
            data += chunk
        return bytes(data), fds

    def close(self) -> None:
        """Close the socket. The other end's arena stays mapped while storages on it live
        (a dead worker's captures stay in the store), but is no longer sent from or handed back."""
        self.sock.close()
        self.forget()
        for mapping in (self.peer, self.arena):
            if mapping is not None:
                mapping.release = None
                with _MAPPINGS_LOCK:
                    if _MAPPINGS.get(mapping.key) is mapping:
                        del _MAPPINGS[mapping.key]
