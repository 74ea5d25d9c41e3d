"""The wire between the server and one run worker: a Unix socket carrying pickled messages,
each CPU tensor's storage moved to shared memory and its file descriptor passed beside the
pickle (SCM_RIGHTS), so a tensor's bytes are never copied through the socket.

torch.multiprocessing's own reductions do the same, but hand each descriptor over a fresh
connection to a resource-sharer thread, about 0.7 ms of CPU per tensor on each side here;
all of a message's descriptors go in one sendmsg instead. The receiver maps each storage
once (torch's shared-storage cache), so a tensor sent twice, as a capture and as a cache
entry, is one storage in the server. Everything that is not a CPU storage pickles as
torch.multiprocessing would. No Django here.
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


class _Pickler(ForkingPickler):
    def __init__(self, file, fds: list[int]):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._fds = fds
        self._index: dict[int, int] = {}
        # A storage made only while pickling (a torch.Generator's state) would close its fd
        # when freed, before the message goes: kept until the pickler is.
        self.storages: list[torch.UntypedStorage] = []

    def persistent_id(self, obj: Any):
        if type(obj) is not torch.UntypedStorage or obj.device.type != "cpu" or obj.nbytes() == 0:
            return None
        self.storages.append(obj)
        fd, size = obj._share_fd_cpu_()   # moves the bytes into shared memory once; the fd stays the storage's
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

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._lock = threading.Lock()

    def send(self, message: Any) -> None:
        """Raises what pickling raises before anything is written, OSError when the other end is gone."""
        buffer, fds = io.BytesIO(), []
        pickler = _Pickler(buffer, fds)   # holds the message's storages (and so their fds) until sent
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
