"""A student's own files (My files): one flat folder on the server, within a quota.

Runs reach it through their RunContext (``user_file``, ``save_user_file``; the run options
carry the folder and the quota), the My files screen through the service. A name is a plain
file name: nothing that leaves the folder (``..``, an absolute path, a folder, a link that
points out of it) is ever opened. A write goes to a temporary name and is renamed into place
only once it is complete and within the quota, so no half-written file is ever left. No
Django here.
"""
from __future__ import annotations

import fcntl
import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Iterable, Iterator

MAX_NAME = 120
# Letters and digits of any script, spaces, '.', '-' and '_'; never a leading dot or space.
NAME = re.compile(r"[^\W][\w .-]*", re.UNICODE)
LOCK = ".lock"         # held while a write checks the quota and renames (two runs of one student)
PARTIAL = ".partial-"  # what a file being written is called until it is complete


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


class UserFiles:
    """One student's folder and quota."""

    def __init__(self, folder: str | os.PathLike, max_bytes: int):
        self.folder = Path(folder)
        self.max_bytes = max_bytes

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

    # -- reading the folder --------------------------------------------------------------

    def list(self) -> list[StoredFile]:
        """The student's files, newest first (never the storage's own temporary files)."""
        found = []
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return []
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
                continue
            stat = entry.stat(follow_symlinks=False)
            found.append(StoredFile(entry.name, stat.st_size,
                                    datetime.fromtimestamp(stat.st_mtime, timezone.utc)))
        return sorted(found, key=lambda f: (f.modified, f.name), reverse=True)

    def used(self) -> int:
        """Bytes the student's files take."""
        return sum(f.size for f in self.list())

    def find(self, name: str) -> StoredFile | None:
        """One of the student's files by its exact name (a download, a delete), else None."""
        return next((f for f in self.list() if f.name == name), None)

    # -- changing it -------------------------------------------------------------------

    def delete(self, name: str) -> bool:
        if self.find(name) is None:
            return False
        (self.folder / name).unlink(missing_ok=True)
        return True

    def save(self, name: str, data: bytes | Iterable[bytes], field: str = "path",
             size: int | None = None) -> StoredFile:
        """Write a whole file under ``name`` (replacing one of that name), or nothing at all:
        it is written to a temporary name and renamed into place once complete and within
        the quota. ``data`` is the bytes or chunks of them (``size``, when known, is
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
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._locked():
            for stale in self.folder.glob(PARTIAL + "*"):  # a write whose process was ended
                stale.unlink(missing_ok=True)
            target = self._inside(name, field)
            replaced = target.stat().st_size if target.is_file() else 0
            room = self.max_bytes - (self.used() - replaced)
            if size is not None and size > room:
                raise FileRefused(self._over_quota(name, megabytes(size), replaced))
            fd, partial = tempfile.mkstemp(prefix=PARTIAL, dir=self.folder)
            try:
                written = 0
                with os.fdopen(fd, "wb") as out:
                    for chunk in data:
                        written += len(chunk)
                        if written > room:
                            raise FileRefused(self._over_quota(name, f"at least {megabytes(written)}", replaced))
                        out.write(chunk)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(partial, target)
            except BaseException:
                Path(partial).unlink(missing_ok=True)
                raise
        return StoredFile(name, written, datetime.now(timezone.utc))

    def _over_quota(self, name: str, size: str, replaced: int) -> str:
        return (f"{name!r} ({size}) does not fit in your files: {megabytes(self.used() - replaced)} of your "
                f"{megabytes(self.max_bytes)} (CODEFYUI_USER_FILES_MAX_MB) are in use. Delete files you no "
                "longer need on the My files page, then try again.")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.folder / LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
