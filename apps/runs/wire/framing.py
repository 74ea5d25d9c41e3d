"""Framing for the wire: ``Wire``, one end of the socket, each message a head (its pickle's
length and how many descriptors follow), its descriptors (SCM_RIGHTS) and its pickle; and
the arenas each end offers, maps and hands back slices of. No Django here.
"""
from __future__ import annotations

import array
import collections
import io
import os
import pickle
import socket
import struct
import threading
from typing import Any

from .arena import MAPPINGS, MAPPINGS_LOCK, MEMFD, Arena, ArenaMapping, Copies, fd_key
from .pickling import Offer, Pickler, Unpickler

_HEAD = struct.Struct("!QI")       # pickle bytes, descriptors that follow
_FDS_PER_MESSAGE = 250             # the kernel passes at most 253 descriptors per sendmsg
_ANCILLARY = socket.CMSG_SPACE(_FDS_PER_MESSAGE * 4)


class Wire:
    """One end of the socket. ``send`` may be called from several threads; ``recv`` from one."""

    def __init__(self, sock: socket.socket, keep_copies: bool = False, arena_bytes: int = 0):
        """``keep_copies``: remember each shared-memory copy sent until ``forget`` (a worker's
        end, where a run's outputs go as captures and as cache entries). ``arena_bytes``: copy
        into an arena of that size (a worker's end; ``offer`` tells the other end)."""
        self.sock = sock
        self._lock = threading.Lock()
        self.arena = Arena(arena_bytes) if arena_bytes > 0 and MEMFD else None
        if self.arena is not None:
            with MAPPINGS_LOCK:
                MAPPINGS[self.arena.key] = self.arena
        self._copies = Copies(self.arena) if keep_copies or self.arena is not None else None
        self.peer: ArenaMapping | None = None          # the other end's arena, once offered
        self._foreign: dict[tuple[int, int], ArenaMapping] = {}   # other arenas mapped for this run
        self._handed_back: collections.deque = collections.deque()   # (offset, times) for the peer

    def offer(self) -> Any:
        """What to put in a message so that the other end maps this end's arena (None: none)."""
        return Offer(self.arena) if self.arena is not None else None

    def accept(self, fd: int, size: int) -> None:
        """The other end offered its arena: map it; its slices are handed back through this wire."""
        self.peer = ArenaMapping(os.dup(fd), size, release=lambda offset, times: self._handed_back.append((offset, times)))
        with MAPPINGS_LOCK:
            MAPPINGS[self.peer.key] = self.peer

    def mapping(self, fd: int) -> ArenaMapping:
        """The mapping of an arena a "slice" names: a known one, or mapped now for this run."""
        key = fd_key(fd)
        with MAPPINGS_LOCK:
            found = MAPPINGS.get(key) or self._foreign.get(key)
            if found is None:
                found = self._foreign[key] = ArenaMapping(os.dup(fd), os.fstat(fd).st_size)   # the message's fd is closed after it
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
        copies = self._copies or Copies()   # without keep_copies, this message's own (a storage reached twice: one copy)
        pickler = Pickler(buffer, fds, copies)   # holds the message's storages (and so their fds) until sent
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
            return Unpickler(io.BytesIO(payload), fds, self).load()
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
                with MAPPINGS_LOCK:
                    if MAPPINGS.get(mapping.key) is mapping:
                        del MAPPINGS[mapping.key]
