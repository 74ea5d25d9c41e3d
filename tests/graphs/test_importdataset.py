"""manage.py importdataset: the published archives of MNIST, Fashion-MNIST and CIFAR-10, known by
their checksums, unpacked into CODEFYUI_DATA_DIR in the layout the Dataset node reads; a wrong or
damaged file refused by name with nothing written. The archives here are small fakes, and the
checksum table is patched to theirs: nothing is downloaded."""
from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from django.core.management import CommandError, call_command

from apps.graphs import data_import
from apps.graphs.data_import import Archive
from apps.graphs.nodes.base import registry
from apps.graphs.nodes.library import _datasets
from codefyui import conf

from .conftest import FakeContext

IDX_NAMES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz")


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setattr(conf, "DATA_DIR", str(folder))
    return folder


@pytest.fixture
def published(monkeypatch):
    """The checksum table, emptied; ``publish(dataset, path, kind)`` adds a fake archive to it."""
    monkeypatch.setattr(data_import, "PUBLISHED", ())

    def publish(dataset: str, path: Path, kind: str = "idx") -> Path:
        entry = Archive(dataset, path.name, hashlib.md5(path.read_bytes()).hexdigest(), kind)
        monkeypatch.setattr(data_import, "PUBLISHED", (*data_import.PUBLISHED, entry))
        return path
    return publish


def idx_gz(path: Path, values: np.ndarray) -> Path:
    header = (0x0800 + values.ndim).to_bytes(4, "big") + b"".join(n.to_bytes(4, "big") for n in values.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(header + values.astype(np.uint8).tobytes()))
    return path


def mnist_like(folder: Path, train: int = 3, test: int = 2, seed: int = 0) -> list[Path]:
    """The four published files of a tiny MNIST-shaped set, under their published names."""
    rng = np.random.default_rng(seed)
    return [idx_gz(folder / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (train, 28, 28))),
            idx_gz(folder / "train-labels-idx1-ubyte.gz", (np.arange(train) + seed) % 10),
            idx_gz(folder / "t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (test, 28, 28))),
            idx_gz(folder / "t10k-labels-idx1-ubyte.gz", (np.arange(test) + 5 + seed) % 10)]


def tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return path


BATCHES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


def cifar_batches(count: int = 2) -> dict[str, tuple[np.ndarray, list[int]]]:
    """Each batch's pixels (count × 3072 bytes: red, green, blue planes) and labels."""
    out = {}
    for k, batch in enumerate(BATCHES):
        pixels = np.full((count, 3072), k, np.uint8)
        pixels[:, :1024] = 200 + np.arange(count)[:, None]   # each image's red plane
        out[batch] = (pixels, [(k + i) % 10 for i in range(count)])
    return out


def cifar_python(path: Path, batches) -> Path:
    """The Python version's layout: a pickled dict per batch (as the published one, with bytes keys)."""
    return tar_gz(path, {f"cifar-10-batches-py/{b}": pickle.dumps({b"batch_label": b"x", b"labels": labels,
                                                                    b"data": pixels}, protocol=2)
                         for b, (pixels, labels) in batches.items()} | {"cifar-10-batches-py/batches.meta": b"-"})


def cifar_binary(path: Path, batches) -> Path:
    def records(pixels, labels):
        return np.concatenate([np.array(labels, np.uint8)[:, None], pixels], axis=1).tobytes()
    return tar_gz(path, {f"cifar-10-batches-bin/{b}.bin": records(*batch) for b, batch in batches.items()})


def load(name: str, split: str):
    node = registry()["Dataset"]
    params, _ = node.coerce_params({"name": name, "split": split})
    ctx = FakeContext()
    return node().run(ctx, params)["dataset"], ctx.logs


def imported(*paths: Path) -> str:
    out = io.StringIO()
    call_command("importdataset", *map(str, paths), stdout=out)
    return out.getvalue()


def every_file(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# -- importing -----------------------------------------------------------------------------------

def test_mnists_four_files_are_checked_unpacked_and_read_by_the_dataset_node(tmp_path, data_dir, published):
    files = [published("MNIST", p) for p in mnist_like(tmp_path / "downloads")]
    said = imported(*files)
    raw = data_dir / "MNIST" / "raw"
    assert every_file(data_dir) == ["MNIST", "MNIST/raw", "MNIST/raw/t10k-images-idx3-ubyte",
                                    "MNIST/raw/t10k-labels-idx1-ubyte", "MNIST/raw/train-images-idx3-ubyte",
                                    "MNIST/raw/train-labels-idx1-ubyte"]
    assert (raw / "t10k-labels-idx1-ubyte").read_bytes() == gzip.decompress(files[3].read_bytes())
    for path in files:
        assert f"{path}: MNIST's {path.name}, checksum as published; unpacked" in said
    assert "MNIST: Installed: 3 examples to train on, 2 to test with." in said
    assert "FashionMNIST: Not installed. Missing in" in said and "Digits: Comes with CodefyUI" in said
    test, logs = load("MNIST", "test")
    assert len(test) == 2 and test.targets.tolist() == [5, 6] and logs == []   # the full files, not the sample
    images = np.frombuffer(gzip.decompress(files[2].read_bytes())[16:], np.uint8).reshape(2, 28, 28)
    assert torch.allclose(test[1][0][0], torch.tensor(images[1], dtype=torch.float32) / 255)


def test_the_same_names_go_where_their_checksum_says(tmp_path, data_dir, published):
    """Fashion-MNIST's files have MNIST's names; the checksum tells them apart (a renamed file too)."""
    for p in mnist_like(tmp_path / "mnist"):
        published("MNIST", p)
    fashion = [published("FashionMNIST", p) for p in mnist_like(tmp_path / "fashion", train=4, seed=1)]
    renamed = fashion[1].rename(tmp_path / "labels (1).gz")
    said = imported(fashion[0], renamed, *fashion[2:])
    assert every_file(data_dir / "FashionMNIST" / "raw") == ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                                             "train-images-idx3-ubyte", "train-labels-idx1-ubyte"]
    assert not (data_dir / "MNIST").exists()
    assert f"{renamed}: Fashion-MNIST's train-labels-idx1-ubyte.gz" in said
    assert "FashionMNIST: Installed: 4 examples to train on, 2 to test with." in said
    assert "MNIST: Not installed. Meanwhile the 5,000-image sample of MNIST that comes with CodefyUI is used" in said
    assert len(load("FashionMNIST", "train")[0]) == 4


@pytest.mark.parametrize("maker, kind", [(cifar_python, "cifar-python"), (cifar_binary, "cifar-binary")])
def test_cifar10_either_version_becomes_the_binary_batches_the_node_reads(tmp_path, data_dir, published,
                                                                          maker, kind):
    batches = cifar_batches()
    archive = published("CIFAR10", maker(tmp_path / f"{kind}.tar.gz", batches), kind)
    said = imported(archive)
    folder = data_dir / "cifar-10-batches-bin"
    assert every_file(folder) == [f"{b}.bin" for b in BATCHES]
    assert "CIFAR10: Installed: 10 examples to train on, 2 to test with." in said
    test, _ = load("CIFAR10", "test")
    pixels, labels = batches["test_batch"]
    assert test.targets.tolist() == labels
    x = test[1][0]
    assert list(x.shape) == [3, 32, 32] and float(x[0, 0, 0]) == pytest.approx(201 / 255)
    assert torch.equal((x.reshape(-1) * 255).round().to(torch.uint8), torch.from_numpy(pixels[1]))


# -- refusing ------------------------------------------------------------------------------------

def test_a_damaged_file_is_refused_by_name_and_nothing_is_written(tmp_path, data_dir, published):
    files = [published("MNIST", p) for p in mnist_like(tmp_path / "downloads")]
    content = bytearray(files[0].read_bytes())
    content[-9] ^= 0xFF
    files[0].write_bytes(bytes(content))
    with pytest.raises(CommandError) as refused:
        imported(*files)
    message = str(refused.value)
    assert message.startswith("Nothing was imported.\n")
    assert (f"{files[0]}: its MD5 checksum is {hashlib.md5(content).hexdigest()}, not the one MNIST's "
            "train-images-idx3-ubyte.gz is published with") in message
    assert "the file is damaged or incomplete; fetch it again" in message
    assert str(files[1]) not in message   # only the refused file is named
    assert every_file(data_dir) == []      # the three good files were not imported either


def test_a_file_that_is_no_published_archive_is_refused(tmp_path, data_dir, published):
    stray = tmp_path / "holiday.jpg"
    stray.write_bytes(b"\xff\xd8 not a dataset")
    missing = tmp_path / "t10k-labels-idx1-ubyte.gz"
    with pytest.raises(CommandError) as refused:
        imported(stray, missing)
    assert f"{stray}: its MD5 checksum ({hashlib.md5(stray.read_bytes()).hexdigest()}) is none of the published" \
           in str(refused.value)
    assert f"{missing}: there is no such file" in str(refused.value)
    assert every_file(data_dir) == []


def test_the_real_checksums_are_the_published_ones():
    table = {(a.dataset, a.name): a.md5 for a in data_import.PUBLISHED}
    assert table[("MNIST", "train-images-idx3-ubyte.gz")] == "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    assert table[("FashionMNIST", "t10k-labels-idx1-ubyte.gz")] == "bb300cfdad3c16e7a12a480ee83cd310"
    assert table[("CIFAR10", "cifar-10-python.tar.gz")] == "c58f30108f718f92721af3b95e74349a"
    assert table[("CIFAR10", "cifar-10-binary.tar.gz")] == "c32a1d4ab5d03f1284b67883e8d87530"
    assert len(table) == len({a.md5 for a in data_import.PUBLISHED}) == 10


def test_an_archive_that_fails_while_unpacking_leaves_nothing_half_written(tmp_path, data_dir, published):
    """Its checksum matched (the table is patched), but the archive lacks a batch: the other
    archive's files, already staged, go too, and no temporary file or new folder stays."""
    good = [published("MNIST", p) for p in mnist_like(tmp_path / "downloads")]
    batches = cifar_batches()
    del batches["test_batch"]
    broken = published("CIFAR10", cifar_python(tmp_path / "cifar-10-python.tar.gz", batches), "cifar-python")
    with pytest.raises(CommandError, match=f"{broken}: the archive lacks cifar-10-batches-py/test_batch"):
        imported(*good, broken)
    assert every_file(data_dir) == []


def test_an_idx_file_cut_short_is_refused(tmp_path, data_dir, published):
    path = tmp_path / "train-labels-idx1-ubyte.gz"
    path.write_bytes(gzip.compress((0x0801).to_bytes(4, "big") + (5).to_bytes(4, "big") + bytes(3)))
    published("MNIST", path)
    with pytest.raises(CommandError, match="holds 3 bytes after its header, not the 5 its header declares"):
        imported(path)
    assert every_file(data_dir) == []


def test_a_pickle_naming_anything_but_numpys_array_is_refused_unread(tmp_path, data_dir, published):
    batches = cifar_batches()
    members = {f"cifar-10-batches-py/{b}": pickle.dumps({"data": pixels, "labels": labels}, protocol=2)
               for b, (pixels, labels) in batches.items()}

    class Evil:
        def __reduce__(self):
            return (Path.touch, (tmp_path / "pwned",))
    members["cifar-10-batches-py/data_batch_3"] = pickle.dumps({"data": Evil(), "labels": []}, protocol=2)
    archive = published("CIFAR10", tar_gz(tmp_path / "cifar-10-python.tar.gz", members), "cifar-python")
    with pytest.raises(CommandError, match=r"data_batch_3 is not a CIFAR-10 batch \(a CIFAR-10 batch names no "):
        imported(archive)
    assert not (tmp_path / "pwned").exists() and every_file(data_dir) == []


# -- what is on the server -----------------------------------------------------------------------

def test_the_inventory_says_what_is_installed_and_what_is_missing(tmp_path, data_dir, monkeypatch):
    rows = {r["name"]: r for r in data_import.inventory(str(data_dir))}
    assert [rows[n]["state"] for n in _datasets.SOURCES] == ["ships", "ships", "ships", "sample", "missing", "missing"]
    assert rows["CIFAR10"]["missing"] == ("data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, "
                                          "data_batch_5.bin, test_batch.bin")
    assert rows["CIFAR10"]["folder"] == str(data_dir / "cifar-10-batches-bin")
    idx_gz(data_dir / "FashionMNIST" / "raw" / "train-labels-idx1-ubyte.gz", np.zeros(2))
    assert {r["name"]: r for r in data_import.inventory(str(data_dir))}["FashionMNIST"]["state"] == "incomplete"
    monkeypatch.setattr(_datasets, "MNIST_SAMPLE_PACKAGE", "no_such_package_here")
    assert {r["name"]: r for r in data_import.inventory(str(data_dir))}["MNIST"]["state"] == "missing"


def test_a_dataset_whose_files_cannot_be_read_says_so_in_words(data_dir):
    raw = data_dir / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        (raw / name).write_bytes(b"<html>not found</html>")
    row = {r["name"]: r for r in data_import.inventory(str(data_dir))}["FashionMNIST"]
    assert (row["state"], row["text"]) == ("unreadable", "Its files cannot be read.")
    assert row["problem"] == f"{raw / 'train-images-idx3-ubyte'} is not an IDX file of 3-D bytes (MNIST's format)"
