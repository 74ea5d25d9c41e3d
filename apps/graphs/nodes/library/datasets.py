"""Data nodes that make and read whole datasets: Dataset, SyntheticShapes,
SyntheticSegmentation, Transform, DataLoader and DatasetBatch (what a DATASET is:
``_datasets.py``)."""
from __future__ import annotations

import torch

from codefyui import conf

from ..base import NodeError, Param, Port, register
from ..python import NotPlain
from . import _datasets as sets
from ._helpers import LibraryNode, random_state, shape_str

CATEGORY = "Data"
BUNDLED = {"Digits": "load_digits", "Iris": "load_iris", "Wine": "load_wine"}   # scikit-learn's loaders
DATASET_IN = (Port("dataset", "DATASET"),)
DATASET_OUT = (Port("dataset", "DATASET"),)


@register
class Dataset(LibraryNode):
    type = "Dataset"
    category = CATEGORY
    description = "Loads a ready-made dataset: handwritten digits, flowers, wines, MNIST, Fashion-MNIST or CIFAR-10."
    details = (
        "A dataset is a long list of examples, each an input and the right answer (its label). "
        "Digits (8×8 scans of handwritten 0–9, each a [1, 8, 8] image with values from 0 to 1), Iris (4 "
        "measurements of 150 flowers, 3 kinds) and Wine (13 measurements of 178 wines, 3 kinds) ship with "
        "the product. MNIST (28×28 digits), FashionMNIST (28×28 clothes) and CIFAR10 (32×32 colour photos, "
        "10 classes) work once your administrator has put their files on the server. Until then MNIST uses "
        "a sample of 5,000 of its images that comes with CodefyUI (4,000 to train on, 1,000 to test with; "
        "the log says so), and FashionMNIST and CIFAR10 say which files are missing. 'split' picks the "
        "examples to train on or the ones kept back to test with; for Digits, Iris, Wine and MNIST's sample "
        "every fifth example is the test split. Images come as numbers "
        "from 0 to 1 and table rows as measured: a Transform after this node normalises them. 'data_dir' is "
        "kept so CodefyUI files load, but it is not used: the server reads only its own data folder."
    )
    outputs = DATASET_OUT
    params = (
        Param("name", "select", "Digits", "Which dataset", options=tuple(sets.SOURCES)),
        Param("split", "select", "train", "Examples to train on, or those kept back to test with",
              options=("train", "test")),
        Param("data_dir", "string", "./data", "Not used: the server reads its own data folder"),
    )

    @classmethod
    def to_python(cls, code, params):
        name, split = params["name"], params["split"]
        if name not in BUNDLED:
            raise NotPlain(f"{name} is read from the server's data folder")
        bunch = code.value(f"datasets.{BUNDLED[name]}()", "bunch")
        keep = code.value(f"np.arange(len({bunch}.target)) % 5 {'==' if split == 'test' else '!='} 4",
                          f"{split}_rows")
        code.line(f"# every fifth example (4, 9, 14, …) is kept back to test with; the {split} split is "
                  f"{'those' if split == 'test' else 'the rest'}")
        shape = ", ".join(str(s) for s in sets.SOURCES[name].sample_shape)
        scale = " / 16  # grey levels 0 to 16 become 0 to 1" if name == "Digits" else ""
        x = code.value(f"torch.tensor({bunch}.data[{keep}], dtype=torch.float32).reshape(-1, {shape}){scale}",
                       "images" if scale else "measurements")
        y = code.value(f"torch.tensor({bunch}.target[{keep}], dtype=torch.int64)", "labels")
        return {"dataset": code.value(f"TensorDataset({x}, {y})", f"{split}_data")}

    def run(self, ctx, params, **inputs):
        name, split = params["name"], params["split"]
        ctx.check_size(sets.elements(name, split, conf.DATA_DIR), f"The {name} {split} split")
        dataset = sets.load(name, split, conf.DATA_DIR)
        if note := sets.sample_note(name, split, conf.DATA_DIR):
            ctx.log(note)
        return {"dataset": dataset}


@register
class SyntheticShapes(LibraryNode):
    type = "SyntheticShapes"
    category = CATEGORY
    description = "Makes small greyscale images of one soft blob each, for a model that learns to draw them."
    details = (
        "Each image is a square of 'image_size' × 'image_size' pixels, dark except for one soft round "
        "blob whose place and width change from image to image. Pixel values run from -1 (dark) to 1 "
        "(bright), the range diffusion models are trained on; every sample is ([1, H, W] image, label 0), "
        "as a generative model needs no labels. The same 'seed' always gives the same images; change it "
        "for a different set. Small images (16 to 32 pixels) keep training fast on the school server."
    )
    outputs = DATASET_OUT
    params = (
        Param("image_size", "int", 24, "Width and height of each image, in pixels", min=8, max=512),
        Param("n_samples", "int", 384, "How many images", min=8),
        Param("seed", "int", 0, "Picks the blobs: the same seed gives the same images"),
    )

    def run(self, ctx, params, **inputs):
        size, count = params["image_size"], params["n_samples"]
        ctx.check_size(count * size * size, "SyntheticShapes' images")
        return {"dataset": sets.blobs(count, size, random_state(params["seed"]))}


@register
class SyntheticSegmentation(LibraryNode):
    type = "SyntheticSegmentation"
    category = CATEGORY
    description = "Makes images of circles and rectangles with a mask saying which shape each pixel belongs to."
    details = (
        "Segmentation means labelling every pixel, not the whole image. Each sample is a greyscale image "
        "[1, H, W] with values from 0 to 1, holding one or two shapes (grey circles, white rectangles), and "
        "its mask [H, W] whose numbers name each pixel's class: 0 background, 1 circle, 2 rectangle. "
        "'noise' sprinkles random speckles over the image (never over the mask) so the task is not too easy. "
        "The same 'seed' gives the same images; use one seed for training and another for testing."
    )
    outputs = DATASET_OUT
    params = (
        Param("image_size", "int", 64, "Width and height of each image, in pixels", min=16, max=512),
        Param("n_samples", "int", 200, "How many images", min=4),
        Param("noise", "float", 0.05, "Strength of the speckles on the images", min=0.0, max=1.0),
        Param("seed", "int", 42, "Picks the shapes: the same seed gives the same images"),
    )

    def run(self, ctx, params, **inputs):
        size, count = params["image_size"], params["n_samples"]
        ctx.check_size(count * size * size, "SyntheticSegmentation's images")
        return {"dataset": sets.shapes_with_masks(count, size, params["noise"], random_state(params["seed"]))}


@register
class Transform(LibraryNode):
    type = "Transform"
    category = CATEGORY
    description = "Resizes and normalises every example of a dataset on its way to the model."
    details = (
        "'resize' (0 = keep the size) scales every image to resize × resize pixels; a segmentation mask "
        "is scaled with it. 'normalize' moves the numbers into the range models learn best from: image "
        "values from 0 to 1 become -1 to 1 ((x − 0.5) / 0.5), and each measurement of a table row is "
        "standardised (its mean over the dataset subtracted, then divided by its spread), so centimetres "
        "and grams count alike. The dataset you connect stays as it was; this node hands on a transformed "
        "view of it. 'to_tensor' is kept for CodefyUI files: examples here are tensors already."
    )
    inputs = DATASET_IN
    outputs = DATASET_OUT
    params = (
        Param("resize", "int", 0, "Side of the square images, in pixels (0 = keep the size)", min=0, max=512),
        Param("normalize", "bool", True, "Images to -1 … 1, table columns to mean 0 and spread 1"),
        Param("to_tensor", "bool", True, "Kept for CodefyUI files; examples are tensors already"),
    )

    def run(self, ctx, params, dataset):
        x, _ = sets.first_sample(dataset, "Transform")
        size, table = params["resize"], x.dim() == 1
        if size and x.dim() != 3:
            raise NodeError(f"Transform: 'resize' works on images [C, H, W], but this dataset's examples have "
                            f"shape {shape_str(x.shape)}; set resize to 0")
        shift, spread = 0.0, 1.0
        if params["normalize"] and table:
            ctx.check_size(len(dataset) * x.numel(), "Transform's pass over the table")
            rows = torch.stack([dataset[i][0] for i in range(len(dataset))])
            shift, spread = rows.mean(0), rows.std(0, unbiased=False)
            spread = torch.where(spread > 0, spread, torch.ones_like(spread))  # a constant column stays 0
        elif params["normalize"]:
            shift, spread = 0.5, 0.5
        return {"dataset": sets.TransformedSet(dataset, size, shift, spread)}


@register
class DataLoader(LibraryNode):
    type = "DataLoader"
    category = CATEGORY
    description = "Deals a dataset out in batches, shuffled each epoch, for a TrainingLoop."
    details = (
        "A model learns from a few examples at a time, a batch, rather than from all of them at once. "
        "'batch_size' is how many examples make a batch (the last one may be smaller). With 'shuffle' on, "
        "the examples come in a new random order every epoch, so the model cannot learn the order; with a "
        "Random seed set in Settings, that order is the same on every Run, so two runs can be compared. "
        "'num_workers' is kept for CodefyUI files, but batches are always read by the run itself: the "
        "datasets here are already in memory, and extra reader processes would escape the run's memory "
        "and time limits."
    )
    inputs = DATASET_IN
    outputs = (Port("dataloader", "DATALOADER"),)
    params = (
        Param("batch_size", "int", 32, "Examples per batch", min=1),
        Param("shuffle", "bool", True, "A new random order of examples every epoch"),
        Param("num_workers", "int", 0, "Kept for CodefyUI files; always 0 here", min=0),
    )

    @classmethod
    def to_python(cls, code, params, dataset):
        shuffle = params["shuffle"]
        order = f"shuffle=True, generator={code.generator()}" if shuffle else "shuffle=False"
        return {"dataloader": code.value(f"DataLoader({dataset}, batch_size={params['batch_size']!r}, {order})", "loader")}
    cacheable = False  # its shuffling generator moves on as it is read: each run starts a fresh one

    def run(self, ctx, params, dataset):
        sets.first_sample(dataset, "DataLoader")
        if params["num_workers"]:
            ctx.log(f"DataLoader: num_workers={params['num_workers']} is not used; batches are read "
                    "in the run's own process")
        shuffle = params["shuffle"]
        loader = sets.DataLoader(dataset, batch_size=params["batch_size"], shuffle=shuffle,
                                 generator=ctx.generator() if shuffle else None)
        return {"dataloader": loader}


@register
class DatasetBatch(LibraryNode):
    type = "DatasetBatch"
    category = CATEGORY
    description = "Takes a few examples out of a dataset as one batch of inputs and their labels."
    details = (
        "Use it to push real examples through layers you built by hand and watch each layer's shape. "
        "'batch_size' examples are taken in order from number 'start_index' (counting from 0; past the "
        "end it wraps round to the start). 'images' stacks their inputs, e.g. [4, 1, 8, 8] for four "
        "Digits, and 'labels' their answers: [4] class numbers, or [4, H, W] masks for a segmentation "
        "dataset. Change 'start_index' to look at other examples."
    )
    inputs = DATASET_IN
    outputs = (Port("images"), Port("labels"))
    params = (
        Param("batch_size", "int", 1, "How many examples (the first size of the outputs)", min=1),
        Param("start_index", "int", 0, "The first example taken, counting from 0", min=0),
    )

    @classmethod
    def to_python(cls, code, params, dataset):
        samples = code.value(f"[{dataset}[({params['start_index']!r} + k) % len({dataset})] for k in "
                             f"range({params['batch_size']!r})]", "samples")
        return {"images": code.value(f"torch.stack([x for x, y in {samples}])", "images"),
                "labels": code.value(f"torch.stack([torch.as_tensor(y) for x, y in {samples}])", "batch_labels")}

    def run(self, ctx, params, dataset):
        x, _ = sets.first_sample(dataset, "DatasetBatch")
        count, start, total = params["batch_size"], params["start_index"], len(dataset)
        ctx.check_size(count * x.numel(), "DatasetBatch's images")
        samples = [dataset[(start + k) % total] for k in range(count)]
        return {"images": torch.stack([s[0] for s in samples]).to(ctx.device),
                "labels": torch.stack([torch.as_tensor(s[1]) for s in samples]).to(ctx.device)}


# -- datasets from the internet: they load, and say they cannot run here ---------------------

HUB_OFFLINE = ("{node} is not available on this server: it downloads its dataset from {hub}, and this "
               "server has no internet. Use the Dataset node (Digits, Iris, Wine and 5,000 of MNIST's images "
               "ship with the product; your administrator can add all of MNIST, Fashion-MNIST and CIFAR-10), "
               "or a CSV of your own in CSVReader.")


class _HubDataset(LibraryNode):
    hub: str = ""
    outputs = DATASET_OUT

    def run(self, ctx, params, **inputs):
        raise NodeError(HUB_OFFLINE.format(node=self.type, hub=self.hub))


@register
class HuggingFaceDataset(_HubDataset):
    type = "HuggingFaceDataset"
    category = CATEGORY
    hub = "the Hugging Face Hub"
    description = "An image dataset from the Hugging Face Hub: needs the internet, so it does not run on this server."
    details = ("Kept so CodefyUI graphs that use it open here: it loads with its params, and running it says "
               "it is not available offline and what to use instead (the Dataset node).")
    params = (
        Param("dataset_name", "string", "ylecun/mnist", "The dataset's name on the Hub"),
        Param("subset", "string", "", "The dataset's configuration, if it has several"),
        Param("split", "string", "train", "Which split"),
        Param("image_column", "string", "image", "The column holding the images"),
        Param("label_column", "string", "label", "The column holding the labels"),
        Param("cache_dir", "string", "", "Not used: nothing is downloaded here"),
    )


@register
class KaggleDataset(_HubDataset):
    type = "KaggleDataset"
    category = CATEGORY
    hub = "Kaggle"
    description = "A dataset from Kaggle: needs the internet, so it does not run on this server."
    details = HuggingFaceDataset.details
    params = (
        Param("dataset_slug", "string", "", "The dataset's owner/name on Kaggle"),
        Param("subdir", "string", "", "The folder inside it holding the images"),
        Param("cache_dir", "string", "", "Not used: nothing is downloaded here"),
    )
