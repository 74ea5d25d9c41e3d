"""Pickling for the wire: a CPU tensor as its storage and layout, a storage as where its bytes lie.

``Pickler`` (the sending end) puts a storage inline, as a slice of an arena, or as a memfd
passed beside the pickle (arena.py); ``Unpickler`` (the receiving end) turns each placement
back into a storage. Everything else pickles as torch.multiprocessing would. No Django here.
"""
from __future__ import annotations

import pickle
import threading
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any

import torch

from .arena import MEMFD, Arena, ArenaMapping, Copies, mapping_of, memfd_storage

if TYPE_CHECKING:
    from .framing import Wire

INLINE_MAX = 64 * 1024             # storages smaller than this travel inside the pickle


class Offer:
    """A worker's arena, offered in its first message: the server maps it once."""

    def __init__(self, arena: Arena):
        self.arena = arena


class Pickler(ForkingPickler):
    def __init__(self, file, fds: list[int], copies: Copies):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._fds = fds
        self._copies = copies
        self._index: dict[int, int] = {}
        self._inline: dict[int, int] = {}     # data_ptr -> its index: a storage twice in a message is one
        self.named: list[int] = []            # arena slices this message names, once per mention
        # A storage made only while pickling (a torch.Generator's state) would close its fd
        # when freed, before the message goes: kept until the pickler is.
        self.storages: list[torch.UntypedStorage] = []
        self.mappings: list[ArenaMapping] = []

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
        elif kind is torch.UntypedStorage or kind is Offer:
            where = self._place(obj)
            if where is not None:
                return _received, (where,)
        return NotImplemented

    def _place(self, obj: Any) -> tuple | None:
        """Where a storage's bytes go, as the receiver's ``Unpickler.storage`` reads it."""
        if type(obj) is Offer:
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
        found = mapping_of(obj)
        if found is not None:   # a slice it received (a cache hit, a kept layer): where it lies
            mapping, offset = found
            self.mappings.append(mapping)   # its descriptor stays open until the message has gone
            return "slice", self._fd(mapping.fd), offset, size
        if obj.is_shared() or not MEMFD:
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


class Unpickler(pickle.Unpickler):
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
        return memfd_storage(self._fds[index], size)
