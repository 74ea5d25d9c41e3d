"""A student's own files (My files): one flat folder on the server, within a quota of space
and a number of files.

Runs reach it through their RunContext (``user_file``, ``save_user_file``; the run options
carry the folder and both limits), the My files screen through the service. A name is a plain
file name: nothing that leaves the folder (``..``, an absolute path, a folder, a link that
points out of it) is ever opened. A write goes to a temporary name and is renamed into place
only once it is complete and within the limits, so no half-written file is ever left. No
Django here.

Space is counted as the disk allocates it, not by bytes written: 3,000 one-byte files take
3,000 blocks (12 MB), not 3 KB. The folder's totals are kept in a hidden file (``.usage``)
updated under the folder's lock by every write and delete, so a save or a delete never lists
the folder; when that file is missing or unreadable (a new or older folder, a write ended
half-way) the totals are recomputed once by a scan, which also removes what ended writes left.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import stat as st
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Iterable, Iterator

MAX_NAME = 120
MAX_FILES = 1000       # CODEFYUI_USER_FILES_MAX_FILES's default, for callers that name none
# Letters and digits of any script, spaces, '.', '-' and '_'; never a leading dot or space.
NAME = re.compile(r"[^\W][\w .-]*", re.UNICODE)
LOCK = ".lock"         # held while a write or delete checks the limits and changes the folder
USAGE = ".usage"       # the folder's kept totals (JSON: bytes, files)
PARTIAL = ".partial-"  # what a file being written is called until it is complete
WRITING = PARTIAL + "write"  # one name suffices: writes of one folder take turns under the lock


class FileRefused(ValueError):
    """A name or a write the storage refuses; the message says why, naming the field."""


@dataclass(frozen=True)
class StoredFile:
    name: str
    size: int
    modified: datetime

    @property
    def size_text(self) -> str:
        return megabytes(self.size)


@dataclass(frozen=True)
class Usage:
    """What a folder's files take: allocated bytes and how many files."""
    bytes: int = 0
    files: int = 0

    def plus(self, cost: int, files: int) -> Usage:
        return Usage(max(0, self.bytes + cost), max(0, self.files + files))


def megabytes(size: int) -> str:
    """1_572_864 -> '1.5 MB', the way every message and the My files page write a size."""
    if size < 1024:
        return f"{size} bytes"
    if size < 2**20 / 10:
        return f"{round(size / 1024)} KB"
    return f"{size / 2**20:.1f}".removesuffix(".0") + " MB"


def clean_name(text: str) -> str:
    """An uploaded file's name made safe: its last part, other characters as '_', no leading dot."""
    base = re.split(r"[/\\]", str(text))[-1]
    base = re.sub(r"[^\w .-]", "_", base)[-MAX_NAME:]
    return re.sub(r"^[^\w]+", "", base).rstrip(" .") or "upload.pt"


def _file_stat(path: Path) -> os.stat_result | None:
    """The lstat of a regular file (never followed through a link), else None."""
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return found if st.S_ISREG(found.st_mode) else None


class UserFiles:
    """One student's folder and its limits: ``max_bytes`` of allocated space, ``max_files`` files."""

    def __init__(self, folder: str | os.PathLike, max_bytes: int, max_files: int = MAX_FILES):
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self.max_files = max_files
        self._block = 0

    # -- names -------------------------------------------------------------------------

    def check_name(self, name: str, field: str = "path") -> str:
        """The name itself, or FileRefused saying why it cannot be one of My files."""
        text = str(name).strip()
        shown = f"'{field}' = {text!r}"
        if not text:
            raise FileRefused(f"'{field}' is empty: name a file of My files, such as model_weights.pt")
        windows = PureWindowsPath(text)
        if PurePosixPath(text).is_absolute() or windows.drive or windows.root:
            raise FileRefused(f"{shown} is a path on the server; files are saved and loaded only in your own "
                              "files (My files): name one, such as model_weights.pt")
        parts = re.split(r"[/\\]", text)
        if ".." in parts:
            raise FileRefused(f"{shown} leaves your files (My files); name a file there, such as model_weights.pt")
        if len(parts) > 1:
            raise FileRefused(f"{shown} names a folder; My files has none: use a plain file name such as "
                              "model_weights.pt")
        if len(text) > MAX_NAME or not NAME.fullmatch(text):
            raise FileRefused(f"{shown} is not a file name My files can hold: use letters, digits, spaces, "
                              f"'.', '-' and '_' (at most {MAX_NAME}), not starting with a dot")
        return text

    def path(self, name: str, field: str = "path") -> Path:
        """Where an existing file of the student's is, to read it."""
        name = self.check_name(name, field)
        path = self._inside(name, field)
        if not path.is_file():
            raise FileRefused(f"'{field}' = {name!r}: there is no such file in My files (save it there first, "
                              "or upload it on the My files page)")
        return path

    def _inside(self, name: str, field: str) -> Path:
        path = self.folder / name
        if path.is_symlink() and not path.resolve().is_relative_to(self.folder.resolve()):
            raise FileRefused(f"'{field}' = {name!r} leaves your files (My files); name a file there, "
                              "such as model_weights.pt")
        return path

    # -- what a file costs -------------------------------------------------------------

    def block_size(self) -> int:
        """The file system's allocation unit (f_frsize, e.g. 4096): the least a non-empty file takes."""
        if not self._block:
            try:
                info = os.statvfs(self.folder)
                self._block = info.f_frsize or info.f_bsize or 4096
            except OSError:  # no folder yet: the usual block, until it exists
                return 4096
        return self._block

    def allocated(self, size: int) -> int:
        """What ``size`` bytes will take on disk: whole blocks, so 1 byte costs a block, 0 bytes none
        (an empty file's inode is what the file count limits)."""
        block = self.block_size()
        return -(-size // block) * block

    def cost(self, found: os.stat_result) -> int:
        """A stored file's cost: what the disk allocated (st_blocks * 512), never less than its size
        in whole blocks (file systems that keep tiny files inline or compressed report fewer)."""
        return max(found.st_blocks * 512, self.allocated(found.st_size))

    # -- reading the folder --------------------------------------------------------------

    def _entries(self) -> Iterator[tuple[str, os.stat_result]]:
        """Each of the student's files (no hidden name, no link, no folder) with its lstat."""
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
                continue
            try:
                yield entry.name, entry.stat(follow_symlinks=False)
            except FileNotFoundError:  # deleted while listed
                continue

    def list(self) -> list[StoredFile]:
        """The student's files, newest first (never the storage's own hidden files)."""
        found = [self._stored(name, stat) for name, stat in self._entries()]
        return sorted(found, key=lambda f: (f.modified, f.name), reverse=True)

    @staticmethod
    def _stored(name: str, found: os.stat_result) -> StoredFile:
        return StoredFile(name, found.st_size, datetime.fromtimestamp(found.st_mtime, timezone.utc))

    def find(self, name: str) -> StoredFile | None:
        """One of the student's files by its exact name (a download, a delete), else None: one lstat
        of a checked name, never a listing."""
        try:
            name = self.check_name(name)
        except FileRefused:
            return None
        found = _file_stat(self.folder / name)
        return None if found is None else self._stored(name, found)

    def usage(self) -> Usage:
        """The kept totals (one small read); recomputed under the lock if missing or unreadable."""
        kept = self._read_usage()
        if kept is not None:
            return kept
        if not self.folder.is_dir():
            return Usage()
        with self._locked():
            return self._kept_usage()

    def used(self) -> int:
        """Bytes the student's files take on disk."""
        return self.usage().bytes

    def scan(self) -> Usage:
        """The totals counted afresh from the folder (the recovery, and what tests compare with)."""
        files = [stat for _, stat in self._entries()]
        return Usage(sum(self.cost(stat) for stat in files), len(files))

    # -- the kept totals (called with the lock held) -------------------------------------

    def _read_usage(self) -> Usage | None:
        try:
            kept = json.loads((self.folder / USAGE).read_text())
            totals = Usage(int(kept["bytes"]), int(kept["files"]))
        except (OSError, ValueError, TypeError, KeyError):
            return None
        return totals if totals.bytes >= 0 and totals.files >= 0 else None

    def _kept_usage(self) -> Usage:
        """The kept totals, else a scan written down (which also removes ended writes' leftovers)."""
        kept = self._read_usage()
        if kept is None:
            for entry in os.scandir(self.folder):
                if entry.name.startswith(PARTIAL):
                    Path(entry.path).unlink(missing_ok=True)
            kept = self.scan()
            self._keep(kept)
        return kept

    def _keep(self, usage: Usage) -> None:
        """Write the totals whole (a new file renamed over the old), so a reader never sees half."""
        fresh = self.folder / (USAGE + ".new")
        fresh.write_text(json.dumps({"bytes": usage.bytes, "files": usage.files}))
        os.replace(fresh, self.folder / USAGE)

    def _forget_usage(self) -> None:
        """Drop the totals just before the folder changes: a process ended before ``_keep`` leaves
        them missing, hence recomputed, never wrong."""
        (self.folder / USAGE).unlink(missing_ok=True)

    # -- changing it -------------------------------------------------------------------

    def delete(self, name: str) -> bool:
        """Delete one of the student's files, under the lock, keeping the totals; False if none."""
        if self.find(name) is None:
            return False
        with self._locked():
            found = _file_stat(self.folder / name)
            if found is None:  # deleted a moment ago by another process
                return False
            usage = self._kept_usage()
            self._forget_usage()
            (self.folder / name).unlink()
            self._keep(usage.plus(-self.cost(found), -1))
        return True

    def save(self, name: str, data: bytes | Iterable[bytes], field: str = "path",
             size: int | None = None) -> StoredFile:
        """Write a whole file under ``name`` (replacing one of that name), or nothing at all:
        it is written to a temporary name and renamed into place once complete and within
        the limits. ``data`` is the bytes or chunks of them (``size``, when known, is
        checked before anything is written)."""
        name = self.check_name(name, field)
        if isinstance(data, (bytes, bytearray, memoryview)):
            data, size = [data], len(data)
        try:
            return self._write(name, data, field, size)
        except OSError as exc:  # the server's disk is full or not writable: nothing was kept
            raise FileRefused(f"'{name}' could not be written on the server ({exc.strerror or exc}); "
                              "tell your teacher") from None

    def _write(self, name: str, data: Iterable[bytes], field: str, size: int | None) -> StoredFile:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # the student's alone, whatever the umask
        with self._locked():
            target = self._inside(name, field)
            old = _file_stat(target)
            old_cost = self.cost(old) if old else 0
            usage = self._kept_usage()
            self._check_room(name, usage, replacing=old is not None, others=usage.bytes - old_cost, size=size)
            written, cost = self._write_partial(name, data, usage.bytes - old_cost)
            self._forget_usage()  # if the rename fails, the next write's scan removes the partial
            os.replace(self.folder / WRITING, target)
            self._keep(usage.plus(cost - old_cost, 0 if old else 1))
        return StoredFile(name, written, datetime.now(timezone.utc))

    def _check_room(self, name: str, usage: Usage, replacing: bool, others: int, size: int | None) -> None:
        """Refuse before writing: a new file past the count (never a replacement), a known size past the space."""
        if not replacing and usage.files >= self.max_files:
            raise FileRefused(self._too_many(name, usage.files))
        if size is not None and self.allocated(size) > self.max_bytes - others:
            raise FileRefused(self._over_quota(name, megabytes(self.allocated(size)), others))

    def _write_partial(self, name: str, data: Iterable[bytes], others: int) -> tuple[int, int]:
        """Write the chunks to the temporary name, stopping as soon as they pass the room left;
        (bytes written, their cost as allocated). On any failure the temporary file is removed."""
        room = self.max_bytes - others
        partial = self.folder / WRITING
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                written = 0
                for chunk in data:
                    written += len(chunk)
                    if self.allocated(written) > room:
                        raise FileRefused(self._over_quota(name, f"at least {megabytes(self.allocated(written))}",
                                                           others))
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            cost = self.cost(os.lstat(partial))  # once closed: some file systems trim what they reserved
            if cost > room:  # the disk allocated more than whole blocks of the size
                raise FileRefused(self._over_quota(name, megabytes(cost), others))
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return written, cost

    def _over_quota(self, name: str, size: str, others: int) -> str:
        return (f"{name!r} ({size}) does not fit in your files: {megabytes(others)} of your "
                f"{megabytes(self.max_bytes)} (CODEFYUI_USER_FILES_MAX_MB) are in use. Delete files you no "
                "longer need on the My files page, then try again.")

    def _too_many(self, name: str, count: int) -> str:
        files = f"{count} file{'' if count == 1 else 's'}"
        return (f"{name!r} is not saved: you already have {files} in My files, the most you can keep "
                f"(CODEFYUI_USER_FILES_MAX_FILES is {self.max_files}). Delete files you no longer need on "
                "the My files page, then try again (saving over a file of the same name still works).")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.folder / LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
