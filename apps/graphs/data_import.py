"""The big datasets on this server: importing the archives MNIST, Fashion-MNIST and CIFAR-10 are
published as into ``CODEFYUI_DATA_DIR``, in the layout the Dataset node reads (``manage.py
importdataset``), and what of each dataset is there (that command's report, the Package Center).

Nothing is downloaded: an administrator fetches the archives on a machine with internet access
and copies them over. Each one is known by its published checksum (so a renamed file is known
too), and the command imports all the files it is given or none: every file is checked before
anything is written, each output is written under a temporary name in its own folder and renamed
once every archive has unpacked, and a failure removes what was written.
"""
from __future__ import annotations

import codecs
import contextlib
import gzip
import hashlib
import io
import math
import os
import pickle
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

from codefyui import conf

from .nodes.base import NodeError
from .nodes.library import _datasets as sets
from .nodes.library import text

IMPORT_COMMAND = "manage.py importdataset FILE..."


class Refused(Exception):
    """A file the command does not import; the message names the file and says why."""


@dataclass(frozen=True)
class Archive:
    dataset: str   # its name in the Dataset node (sets.SOURCES)
    name: str      # the file's published name
    md5: str       # its published MD5 checksum
    kind: str      # "idx" (one gzipped IDX file), "cifar-python" or "cifar-binary" (a .tar.gz)


_IDX_NAMES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
              "t10k-labels-idx1-ubyte.gz")

# The published checksums (MD5, as each dataset's publisher gives them):
# - MNIST: the four files of yann.lecun.com/exdb/mnist, as torchvision's MNIST.resources lists them
#   (torchvision/datasets/mnist.py).
# - Fashion-MNIST: the table of its authors' README (github.com/zalandoresearch/fashion-mnist,
#   "Get the Data"), the same as torchvision's FashionMNIST.resources (torchvision/datasets/mnist.py).
# - CIFAR-10: its authors' page (www.cs.toronto.edu/~kriz/cifar.html) for the Python version and
#   the binary version; the Python version's is also torchvision's CIFAR10.tgz_md5
#   (torchvision/datasets/cifar.py).
PUBLISHED: tuple[Archive, ...] = (
    *(Archive("MNIST", name, md5, "idx") for name, md5 in zip(_IDX_NAMES, (
        "f68b3c2dcbeaaa9fbdd348bbdeb94873", "d53e105ee54ea40749a09fcbcd1e9432",
        "9fb629c4189551a2d022fa330f9573f3", "ec29112dd5afa0611ce80d1b7f02629c"))),
    *(Archive("FashionMNIST", name, md5, "idx") for name, md5 in zip(_IDX_NAMES, (
        "8d4fb7e6c68d591d4c3dfef9ec88bf0d", "25c81989df183df01b3e8a0aad5dffbe",
        "bef4ecab320f06d8554ea6380940ec79", "bb300cfdad3c16e7a12a480ee83cd310"))),
    Archive("CIFAR10", "cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a", "cifar-python"),
    Archive("CIFAR10", "cifar-10-binary.tar.gz", "c32a1d4ab5d03f1284b67883e8d87530", "cifar-binary"),
)

TITLES = {"Digits": "Digits", "Iris": "Iris", "Wine": "Wine", "MNIST": "MNIST", "FashionMNIST": "Fashion-MNIST",
          "CIFAR10": "CIFAR-10"}


# -- knowing a file ----------------------------------------------------------------------------

def md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)  # the publishers' checksum: for damage, not for trust
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def identify(path: Path) -> Archive:
    """The published archive this file is, by its checksum; Refused naming it otherwise."""
    if not path.is_file():
        raise Refused(f"{path}: there is no such file")
    try:
        md5 = md5_of(path)
    except OSError as exc:
        raise Refused(f"{path}: it cannot be read ({exc.strerror or exc})") from None
    for archive in PUBLISHED:
        if archive.md5 == md5:
            return archive
    named = [a for a in PUBLISHED if a.name == path.name]
    if named:
        whose = " or ".join(f"{TITLES[a.dataset]}'s" for a in named)
        raise Refused(f"{path}: its MD5 checksum is {md5}, not the one {whose} {path.name} is published with "
                      f"({', '.join(a.md5 for a in named)}): the file is damaged or incomplete; fetch it again")
    raise Refused(f"{path}: its MD5 checksum ({md5}) is none of the published archives this command imports "
                  "(MNIST's or Fashion-MNIST's four *-ubyte.gz files, CIFAR-10's cifar-10-python.tar.gz or "
                  "cifar-10-binary.tar.gz)")


# -- writing -----------------------------------------------------------------------------------

class _Staging:
    """Files written under temporary names next to where they go, renamed all at once at the end."""

    def __init__(self) -> None:
        self.written: list[tuple[Path, Path]] = []   # (temporary, final)
        self.made: list[Path] = []                   # folders this import created

    @contextlib.contextmanager
    def file(self, final: Path) -> Iterator[BinaryIO]:
        for folder in reversed([final.parent, *final.parent.parents]):
            if not folder.exists():
                folder.mkdir()
                self.made.append(folder)
        handle, temporary = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".importing")
        self.written.append((Path(temporary), final))
        with os.fdopen(handle, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())

    def commit(self) -> None:
        for temporary, final in self.written:
            os.replace(temporary, final)
        self.written.clear()

    def discard(self) -> None:
        for temporary, _ in self.written:
            temporary.unlink(missing_ok=True)
        for folder in reversed(self.made):
            with contextlib.suppress(OSError):
                folder.rmdir()   # only if empty


def _unpack_idx(archive: Archive, path: Path, staging: _Staging, data_dir: str) -> None:
    """A gzipped IDX file, unzipped into the dataset's folder under its published name less .gz."""
    dims = 3 if "images" in archive.name else 1
    final = Path(data_dir) / sets.SOURCES[archive.dataset].folder / archive.name.removesuffix(".gz")
    try:
        with gzip.open(path) as zipped, staging.file(final) as out:
            header = zipped.read(4 + 4 * dims)
            try:
                shape = sets._idx_header(path, dims, header)
            except NodeError as exc:
                raise Refused(str(exc)) from None
            if dims == 3 and shape[1:] != [28, 28]:
                raise Refused(f"{path}: its images are {shape[1]}×{shape[2]} pixels, not 28×28")
            out.write(header)
            copied = 0
            while block := zipped.read(1 << 20):
                copied += len(block)
                out.write(block)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:   # (the disk's own errors go on up)
        raise Refused(f"{path}: it is not a readable .gz file ({exc})") from None
    if copied != math.prod(shape):
        raise Refused(f"{path}: it holds {copied:,} bytes after its header, not the {math.prod(shape):,} "
                      "its header declares")


_CIFAR_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)
_CIFAR_PIXELS = 3 * 32 * 32


class _BatchUnpickler(pickle.Unpickler):
    """Reads a CIFAR-10 Python batch (a dict of a uint8 array, a list of labels and a few
    strings) and nothing else: the only callables it may name are numpy's array and dtype, and
    the codec a Python 3 pickle of protocol 2 writes bytes with."""

    _reconstruct = np.ndarray.__reduce__(np.zeros(1))[0]   # numpy's own unpickling helper
    ALLOWED = {("numpy.core.multiarray", "_reconstruct"): _reconstruct,
               ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
               ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
               ("_codecs", "encode"): codecs.encode}

    def find_class(self, module: str, name: str):
        try:
            return self.ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"a CIFAR-10 batch names no {module}.{name}") from None


def _cifar_records(path: Path, member: str, content: bytes) -> bytes:
    """A Python batch as the binary version's records: a label byte, then 3,072 pixel bytes (the
    red, green and blue planes row by row, the same order as the Python version's rows)."""
    try:
        batch = _BatchUnpickler(io.BytesIO(content), encoding="latin1").load()
        batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
        pixels, labels = batch["data"], np.asarray(batch["labels"])
    except Exception as exc:  # noqa: BLE001  (whatever the pickle holds, the answer is the same)
        raise Refused(f"{path}: {member} is not a CIFAR-10 batch ({exc})") from None
    if (not isinstance(pixels, np.ndarray) or pixels.dtype != np.uint8 or pixels.ndim != 2
            or pixels.shape[1] != _CIFAR_PIXELS or labels.shape != (len(pixels),)
            or not np.issubdtype(labels.dtype, np.integer) or labels.min(initial=0) < 0 or labels.max(initial=0) > 9):
        raise Refused(f"{path}: {member} does not hold CIFAR-10's 32×32 colour images and labels 0 to 9")
    records = np.empty((len(pixels), 1 + _CIFAR_PIXELS), np.uint8)
    records[:, 0], records[:, 1:] = labels, pixels
    return records.tobytes()


def _unpack_cifar(archive: Archive, path: Path, staging: _Staging, data_dir: str) -> None:
    """The six batches of either published archive, as the binary version's batch files. Only
    those members are read (as bytes: nothing is extracted by the archive's own paths)."""
    binary = archive.kind == "cifar-binary"
    top = "cifar-10-batches-bin" if binary else "cifar-10-batches-py"
    source = sets.SOURCES["CIFAR10"]
    targets = source.files["train"] + source.files["test"]
    wanted = {f"{top}/{batch}{'.bin' if binary else ''}": target for batch, target in zip(_CIFAR_BATCHES, targets)}
    folder = Path(data_dir) / source.folder
    found = set()
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                if member.name not in wanted or member.name in found:
                    continue
                if not member.isfile():
                    raise Refused(f"{path}: {member.name} is not a file")
                content = tar.extractfile(member).read()
                if binary and (not content or len(content) % (1 + _CIFAR_PIXELS)):
                    raise Refused(f"{path}: {member.name} is not a whole number of CIFAR-10 records")
                records = content if binary else _cifar_records(path, member.name, content)
                with staging.file(folder / wanted[member.name]) as out:
                    out.write(records)
                found.add(member.name)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise Refused(f"{path}: it is not a readable .tar.gz archive ({exc})") from None
    if missing := [name for name in wanted if name not in found]:
        raise Refused(f"{path}: the archive lacks {', '.join(missing)}")


_UNPACK = {"idx": _unpack_idx, "cifar-python": _unpack_cifar, "cifar-binary": _unpack_cifar}


def import_files(paths: list[Path], data_dir: str) -> list[tuple[Path, Archive]]:
    """Every file checked against its published checksum, then all unpacked into ``data_dir``:
    all of them, or (Refused, naming each file refused) none."""
    found, problems = [], []
    for path in paths:
        try:
            found.append((path, identify(path)))
        except Refused as exc:
            problems.append(str(exc))
    if problems:
        raise Refused("\n".join(problems))
    staging = _Staging()
    try:
        for path, archive in dict.fromkeys(found):
            _UNPACK[archive.kind](archive, path, staging, data_dir)
        staging.commit()
    except BaseException:
        staging.discard()
        raise
    return found


# -- what is on this server --------------------------------------------------------------------

def inventory(data_dir: str) -> list[dict[str, str]]:
    """Each dataset of the Dataset node: its name, its state (ships, installed, sample, incomplete,
    missing or unreadable), a sentence for anyone, and for an administrator the files still to add
    (and their folder) or what is wrong with those there."""
    rows = []
    for name, source in sets.SOURCES.items():
        row = {"name": name, "title": TITLES[name], "folder": "", "missing": "", "problem": ""}
        if not source.folder:
            train, test = (sets.split_size(source.total, s) for s in ("train", "test"))
            rows.append({**row, "state": "ships",
                         "text": f"Comes with CodefyUI: {train:,} examples to train on, {test:,} to test with."})
            continue
        folder = Path(data_dir) / source.folder
        wanted = list(dict.fromkeys(source.files["train"] + source.files["test"]))
        gz = name != "CIFAR10"
        missing = [f for f in wanted if sets._find(folder, f, gz) is None]
        row.update(folder=str(folder), missing=", ".join(missing))
        if not missing:
            try:
                train, test = (sets.elements(name, s, data_dir) // math.prod(source.sample_shape)
                               for s in ("train", "test"))
            except NodeError as exc:   # the problem is for the administrator, who replaces the file
                rows.append({**row, "state": "unreadable", "text": "Its files cannot be read.", "problem": str(exc)})
                continue
            rows.append({**row, "state": "installed",
                         "text": f"Installed: {train:,} examples to train on, {test:,} to test with."})
        elif sets.uses_mnist_sample(name, data_dir):
            train, test = (sets.split_size(source.total, s) for s in ("train", "test"))
            rows.append({**row, "state": "sample",
                         "text": f"Not installed. Meanwhile the {source.total:,}-image sample of MNIST that comes "
                                 f"with CodefyUI is used: {train:,} examples to train on, {test:,} to test with."})
        elif len(missing) < len(wanted):
            rows.append({**row, "state": "incomplete", "text": "Only some of its files are installed."})
        else:
            rows.append({**row, "state": "missing", "text": "Not installed."})
    return rows


def encodings() -> list[dict[str, str]]:
    """Each GPT family of the Tokenizer: where its encoding comes from, or that it is missing."""
    rows = []
    for family, (file, _, _) in text.TIKTOKEN_FAMILIES.items():
        own = Path(conf.TOKENIZER_DIR) / file
        if own.exists():
            state, said = "installed", "Installed on this server."
        elif text.bundled_file(family):
            state, said = "ships", "Comes with CodefyUI."
        else:
            state, said = "missing", "Not installed."
        rows.append({"name": family, "state": state, "text": said, "file": file,
                     "folder": str(own.parent), "missing": file if state == "missing" else ""})
    return rows
