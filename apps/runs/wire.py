"""The wire between the server and one run worker: a Unix socket carrying pickled messages,
each CPU tensor's storage moved to shared memory and its file descriptor passed beside the
pickle (SCM_RIGHTS), so a tensor's bytes are never copied through the socket.

torch.multiprocessing's own reductions do the same, but hand each descriptor over a fresh
connection to a resource-sharer thread, about 0.7 ms of CPU per tensor on each side here;
all of a message's descriptors go in one sendmsg instead.

A storage that is not in shared memory yet is copied into a fresh memfd whose pages are
allocated in one call (fallocate), and that descriptor goes. torch's own move into shared
memory (``_share_fd_cpu_``) touches the new pages one fault at a time and cost 2-30 ms per
512 KB storage on this kind of machine, against ~0.5 ms this way; a copy also leaves the
sender's tensors as they were, so it is safe from any thread. The sender keeps each copy's
descriptor (not its pages) until ``forget`` (a worker calls it when a run ends), so a
storage sent twice, as a capture and as a cache entry, is the same memfd, and the receiver
maps it once (torch's shared-storage cache): one storage in the server. Everything that is
not a CPU storage pickles as torch.multiprocessing would. No Django here.
"""
from __future__ import annotations

import array
import io
import os
import pickle
import socket
import struct
import threading
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch
from torch.multiprocessing import reductions

_HEAD = struct.Struct("!QI")       # pickle bytes, descriptors that follow
_FDS_PER_MESSAGE = 250             # the kernel passes at most 253 descriptors per sendmsg
_ANCILLARY = socket.CMSG_SPACE(_FDS_PER_MESSAGE * 4)


_MEMFD = hasattr(os, "memfd_create") and hasattr(os, "posix_fallocate")


class _Copies:
    """The shared-memory copies one end has sent: storage -> the copy's descriptor, while the
    storage lives. A copy is never served for a storage that has died (its address may be
    reused), and ``forget`` drops them all."""

    def __init__(self) -> None:
        self._fds: dict[int, tuple[Any, int]] = {}   # data_ptr -> (weak ref to the storage, memfd)
        self._lock = threading.Lock()

    def fd_of(self, storage: torch.UntypedStorage) -> int:
        key = storage.data_ptr()
        with self._lock:
            known = self._fds.get(key)
            if known is not None and not known[0].expired() and known[0].cdata == reductions.StorageWeakRef(storage).cdata:
                return known[1]
        fd = _shared_copy(storage)
        ref = reductions.StorageWeakRef(storage)
        with self._lock:
            known = self._fds.get(key)
            if known is not None and not known[0].expired() and known[0].cdata == ref.cdata:
                os.close(fd)        # another thread sent the same storage meanwhile: one copy
                return known[1]
            if known is not None:   # a dead storage's copy: nothing is sending it any more
                os.close(known[1])
            self._fds[key] = (ref, fd)
        return fd

    def forget(self) -> None:
        with self._lock:
            fds, self._fds = self._fds, {}
        for _, fd in fds.values():
            os.close(fd)


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


class _Pickler(ForkingPickler):
    def __init__(self, file, fds: list[int], copies: _Copies):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._fds = fds
        self._copies = copies
        self._index: dict[int, int] = {}
        # A storage made only while pickling (a torch.Generator's state) would close its fd
        # when freed, before the message goes: kept until the pickler is.
        self.storages: list[torch.UntypedStorage] = []

    def persistent_id(self, obj: Any):
        if type(obj) is not torch.UntypedStorage or obj.device.type != "cpu" or obj.nbytes() == 0:
            return None
        self.storages.append(obj)
        size = obj.nbytes()
        if obj.is_shared() or not _MEMFD:
            fd, size = obj._share_fd_cpu_()   # already shared (a received tensor): its own fd
        else:
            fd = self._copies.fd_of(obj)
        if fd not in self._index:
            self._index[fd] = len(self._fds)
            self._fds.append(fd)
        return ("shm", self._index[fd], size)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, fds: list[int]):
        super().__init__(file)
        self._fds = fds

    def persistent_load(self, pid):
        _, index, size = pid
        fd = self._fds[index]
        key = reductions.fd_id(fd)
        storage = reductions.storage_from_cache(torch.UntypedStorage, key)
        if storage is None:
            storage = torch.UntypedStorage._new_shared_fd_cpu(fd, size)
            reductions.shared_cache[key] = reductions.StorageWeakRef(storage)
        return storage


class Wire:
    """One end of the socket. ``send`` may be called from several threads; ``recv`` from one."""

    def __init__(self, sock: socket.socket, keep_copies: bool = False):
        """``keep_copies``: remember each shared-memory copy sent until ``forget`` (a worker's
        end, where a run's outputs go as captures and as cache entries)."""
        self.sock = sock
        self._lock = threading.Lock()
        self._copies = _Copies() if keep_copies else None

    def forget(self) -> None:
        """Drop the descriptors of the copies sent so far (a run has ended: nothing of it is
        sent again). The receiver's mappings stay."""
        if self._copies is not None:
            self._copies.forget()

    def send(self, message: Any) -> None:
        """Raises what pickling raises before anything is written, OSError when the other end is gone."""
        buffer, fds = io.BytesIO(), []
        copies = self._copies or _Copies()   # without keep_copies, this message's own (a storage reached twice: one copy)
        pickler = _Pickler(buffer, fds, copies)   # holds the message's storages (and so their fds) until sent
        try:
            pickler.dump(message)
            payload = buffer.getbuffer()
            head = _HEAD.pack(len(payload), len(fds))
            with self._lock:
                chunks = [fds[i:i + _FDS_PER_MESSAGE] for i in range(0, len(fds), _FDS_PER_MESSAGE)] or [[]]
                for i, chunk in enumerate(chunks):
                    data = head if i == 0 else b"\0"
                    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", chunk))] if chunk else []
                    sent = self.sock.sendmsg([data], ancillary)
                    if sent < len(data):
                        self.sock.sendall(data[sent:])
                self.sock.sendall(payload)
        finally:
            if copies is not self._copies:
                copies.forget()

    def recv(self) -> Any:
        """The next message; EOFError when the other end has closed or ended."""
        head, fds = self._receive(_HEAD.size, with_fds=True)
        try:
            size, count = _HEAD.unpack(head)
            while len(fds) < count:
                fds += self._receive(1, with_fds=True)[1]
            payload = self._receive(size)[0]
            return _Unpickler(io.BytesIO(payload), fds).load()
        finally:
            for fd in fds:
                os.close(fd)

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
        self.sock.close()
        self.forget()
