"""Classical machine learning on tables: the Data nodes that make, read, split, scale and pick
parts of a table [rows, features] (SyntheticDataset, CSVReader, TrainTestSplit, Normalize,
ColumnSelector, RowSelector), and the scikit-learn models that learn from one (KNN,
LinearRegression, LogisticRegression, DecisionTreeClassifier, RandomForestClassifier,
SVMClassifier, MLPClassifier) with Accuracy to score them.

A table is a float32 tensor [rows, features]; labels travel as a LIST of strings, one a row.
None of the work here is a torch op the element limit sees, so every size is checked before
the work starts: the rows × features a fit takes (``FIT_CELLS``), and the work of the slow
fits (a forest's trees, a network's passes, a support vector machine's rows). Each classifier
also hands on its fitted estimator as a MODEL (``_estimators.FittedEstimator``), so
DecisionBoundary can draw it.
"""
from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import numpy as np
import torch

from ..base import NodeError, Param, Port, register
from ._estimators import FittedEstimator
from ._helpers import (LibraryNode, check_dim, class_labels, label_items, random_state, shape_str,
                       training_data)

DATA, CLASSICAL = "Data", "Classical"

# -- bounds: what one node may ask of the server ------------------------------------------------

FIT_CELLS = 5_000_000        # rows × features one fit takes
LINEAR_WORK = 10_000_000_000  # rows × features² (least squares)
KNN_WORK = 2_000_000_000     # training rows × query rows × features (every distance KNN measures)
LOGISTIC_WORK = 5_000_000_000  # max_iter × rows × features × classes
SVM_ROWS = 10_000            # a support vector machine's fit grows with the square of its rows
FOREST_WORK = 5_000_000      # trees × rows × √features
MLP_PASSES = 1_000_000       # max_iter × rows: each row through the network once per iteration
MLP_WORK = 1_000_000_000     # max_iter × rows × weights
MLP_WIDTH, MLP_LAYERS = 1024, 10
CSV_MAX_BYTES = 10 * 2**20   # a CSV file CSVReader reads
SYNTHETIC_MAX = 100_000

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples"  # apps/graphs/samples
SAMPLE_PREFIX = "data/samples/"

MODEL_PORT_NOTE = ("The last output, 'model', is this product's addition (CodefyUI's node has none): the fitted "
                   "model, to draw with DecisionBoundary.")

TRAINING_INPUTS = (
    Port("x_train", description="Training features [N, F]"),
    Port("y_train", "LIST", description="One label per training row"),
    Port("x_query", description="Features [M, F] to label"),
)


def too_much(node: str, what: str, amount: int, limit: int, fix: str) -> NodeError:
    return NodeError(f"{node}: {what} = {amount:,}, more than the {limit:,} one node may take on this server "
                     f"(the fit would take too long). {fix}")


# -- the inputs of a fit ---------------------------------------------------------------------------

class Fit:
    """A classifier's inputs, checked: the training and query rows as numpy arrays, the labels
    as strings and the sorted classes."""

    def __init__(self, ctx, node: str, x_train, y_train, x_query, min_classes: int = 1):
        self.labels = class_labels(y_train, "y_train", node)
        x_train, x_query = training_data(node, x_train, x_query, len(self.labels))
        self.n, self.f = x_train.shape
        self.m = x_query.shape[0]
        check_fit_size(ctx, node, self.n, self.f)
        self.rows = numpy_table(x_train, "x_train", node)
        self.queries = numpy_table(x_query, "x_query", node)
        self.classes = sorted(set(self.labels))
        if len(self.classes) < min_classes:
            only = f"only the class {self.classes[0]!r}" if self.classes else "no class"
            raise NodeError(f"{node} needs at least {min_classes} classes in y_train to tell apart, but y_train has "
                            f"{only}. Give it rows of more than one class (with TrainTestSplit, stratify=true "
                            "keeps every class in both parts)")

    def outputs(self, estimator) -> tuple[FittedEstimator, list[str]]:
        model = FittedEstimator(estimator, [str(c) for c in estimator.classes_])
        return model, model.predict(self.queries) if self.m else []

    def probabilities(self, model: FittedEstimator) -> torch.Tensor:
        if not self.m:
            return torch.zeros(0, len(model.classes))
        return torch.as_tensor(np.asarray(model.scores(self.queries), dtype=np.float32))


def check_fit_size(ctx, node: str, rows: int, features: int) -> None:
    ctx.check_size(rows * features, f"{node}'s training table")
    if rows * features > FIT_CELLS:
        raise too_much(node, f"x_train's rows × features ({rows:,} × {features:,})", rows * features, FIT_CELLS,
                       "Use fewer rows (RowSelector, a larger test_size) or fewer columns (ColumnSelector)")


def numpy_table(x: torch.Tensor, port: str, node: str) -> np.ndarray:
    table = x.detach().cpu().to(torch.float64).numpy()
    if not np.isfinite(table).all():
        bad = int((~np.isfinite(table)).any(axis=1).argmax())
        raise NodeError(f"{node}: '{port}' has a missing or infinite value (NaN or inf) in row {bad}; every value "
                        "a model learns from must be a number (fill in or leave out the rows with gaps)")
    return table


# -- Data: making and reading tables ----------------------------------------------------------------

@register
class SyntheticDataset(LibraryNode):
    type = "SyntheticDataset"
    category = DATA
    description = "Makes a small two-feature table of labelled points: rings, moons, blobs or a general mix."
    details = (
        "A made-up data set for trying classifiers, with no file needed. Each row is a point with two "
        "features (x0, x1) and a class label ('0', '1', …). circles: a small ring inside a big one ('factor' "
        "is the small ring's size relative to the big one), which no straight line can separate. moons: two "
        "interlocking half-moons. blobs: 'centers' round clouds, easy to separate (their spread grows with "
        "'noise'). classification: two clusters from scikit-learn's make_classification, where 'noise' is "
        "the share of labels flipped at random. 'noise' jiggles the points; the same 'seed' gives the same "
        "points every time. Outputs: 'tensor' [n_samples, 2], 'labels' (a list of n_samples labels) and "
        "'columns' (the names x0, x1), the same three a CSVReader gives."
    )
    outputs = (Port("tensor"), Port("labels", "LIST"), Port("columns", "LIST"))
    params = (
        Param("kind", "select", "circles", "Which shape the classes make",
              options=("circles", "moons", "blobs", "classification")),
        Param("n_samples", "int", 200, "How many points (rows)", min=10, max=SYNTHETIC_MAX),
        Param("noise", "float", 0.1, "How much the points are jiggled (classification: share of labels flipped)",
              min=0.0, max=10.0),
        Param("factor", "float", 0.5, "circles: the inner ring's size relative to the outer ring (0 … 1)",
              min=0.0, max=1.0),
        Param("centers", "int", 3, "blobs: how many clouds (classes)", min=2, max=50),
        Param("seed", "int", 42, "The same seed gives the same points"),
    )

    def run(self, ctx, params):
        from sklearn import datasets

        kind, n, noise, seed = params["kind"], params["n_samples"], params["noise"], random_state(params["seed"])
        ctx.check_size(n * 2, "SyntheticDataset's points")
        if kind == "circles":
            x, y = datasets.make_circles(n_samples=n, noise=noise, factor=min(0.99, max(0.01, params["factor"])),
                                         random_state=seed)
        elif kind == "moons":
            x, y = datasets.make_moons(n_samples=n, noise=noise, random_state=seed)
        elif kind == "blobs":
            x, y = datasets.make_blobs(n_samples=n, centers=params["centers"], cluster_std=max(0.1, noise * 5.0),
                                       random_state=seed)
        else:
            if noise > 1:
                raise NodeError(f"SyntheticDataset: for kind classification 'noise' is the share of labels flipped, "
                                f"from 0 to 1, not {noise:g}")
            x, y = datasets.make_classification(n_samples=n, n_features=2, n_informative=2, n_redundant=0,
                                                n_clusters_per_class=1, flip_y=noise, random_state=seed)
        return {"tensor": torch.from_numpy(x).float(), "labels": [str(int(v)) for v in y],
                "columns": ["x0", "x1"]}


NA_TEXTS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})  # read as missing (NaN)
TRUE_TEXTS, FALSE_TEXTS = frozenset({"True", "TRUE", "true"}), frozenset({"False", "FALSE", "false"})


def _number(text: str) -> float | None:
    """A cell as a number, NaN when missing, None when it is not a number."""
    text = text.strip()
    if text in NA_TEXTS:
        return math.nan
    if text in TRUE_TEXTS or text in FALSE_TEXTS:
        return None  # true/false columns are told apart below
    try:
        return float(text)
    except ValueError:
        return None


@register
class CSVReader(LibraryNode):
    type = "CSVReader"
    category = DATA
    description = "Reads a table from a CSV file: number columns as a tensor, one column as labels."
    details = (
        "A CSV file is a table written as text, one row a line, the cells split by commas. 'path' names "
        "either a sample table that ships with the product, data/samples/iris.csv (150 flowers, 4 "
        "measurements, their species), data/samples/wine.csv (178 wines, 13 measurements, their cultivar) or "
        "data/samples/breast_cancer.csv (569 tissue samples, 30 measurements, their diagnosis), or a file "
        "of My files (your own files on the server: upload one there, then write its name, such as "
        "marks.csv). 'target_column' names the column holding the answers: its cells become 'labels', one "
        "text a row (leave it empty for no labels). The number columns become 'tensor' [rows, features] "
        "(float32; an empty cell or NA reads as NaN) and 'columns' lists their names in order; a column with "
        "words in it is left out. 'include_columns' (names separated by commas) keeps just those columns, "
        "and then every cell in them must be a number. Turn 'skip_header' off when the first line is data, "
        "not column names: the columns are then named 0, 1, 2, … A file may be at most 10 MB."
    )
    outputs = (Port("tensor"), Port("labels", "LIST"), Port("columns", "LIST"))
    params = (
        Param("path", "string", "data/samples/iris.csv",
              "data/samples/iris.csv, wine.csv or breast_cancer.csv, or the name of a file of My files"),
        Param("target_column", "string", "", "The column whose cells become the labels; empty = no labels"),
        Param("include_columns", "string", "",
              "Feature columns to keep, separated by commas; empty = every number column but the target"),
        Param("skip_header", "bool", True, "The first line names the columns (off: they are named 0, 1, 2, …)"),
    )

    def run(self, ctx, params):
        path, shown = self.locate(ctx, str(params["path"]).strip())
        size = path.stat().st_size
        if size > CSV_MAX_BYTES:
            raise NodeError(f"CSVReader: {shown} is {size / 2**20:.1f} MB; CSVReader reads files of at most "
                            f"{CSV_MAX_BYTES // 2**20} MB. Keep fewer rows in the file")
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise NodeError(f"CSVReader: {shown} is not UTF-8 text; save the CSV as UTF-8 and upload it again") \
                from None
        names, rows, lines = self.parse(ctx, text, shown, params["skip_header"])
        target = str(params["target_column"]).strip()
        if target and target not in names:
            raise NodeError(f"CSVReader: target_column {target!r} is not a column of {shown}; its columns are "
                            f"{', '.join(names) or '(none)'}")
        requested = [c.strip() for c in str(params["include_columns"]).split(",") if c.strip()]
        missing = [c for c in requested if c not in names]
        if missing:
            raise NodeError(f"CSVReader: include_columns names {', '.join(map(repr, missing))}, not "
                            f"{'a column' if len(missing) == 1 else 'columns'} of {shown}; its columns are "
                            f"{', '.join(names)}")
        chosen = requested or [c for c in names if c != target]
        ctx.check_size(len(rows) * len(chosen), "CSVReader's table")
        columns, values, left_out = [], [], []
        for name in chosen:
            position = names.index(name)
            cells = [row[position] for row in rows]
            numbers = _column_numbers(cells)
            if numbers is None:
                if requested:
                    bad = next((i for i, cell in enumerate(cells) if _column_numbers([cell]) is None), None)
                    if bad is None:  # each cell reads alone (true, 3) but not together as one column
                        raise NodeError(f"CSVReader: column {name!r} mixes words and numbers, so it is not a "
                                        "number column; include_columns may name number columns only")
                    raise NodeError(f"CSVReader: column {name!r} has {cells[bad].strip()!r} in row {bad + 1} (line "
                                    f"{lines[bad]} of {shown}), which is not a number; include_columns may name "
                                    "number columns only (take it out, or make the label column target_column)")
                if rows:  # a header-only file keeps every column, as there is nothing to tell them apart by
                    left_out.append(name)
                    continue
                numbers = []
            columns.append(name)
            values.append(numbers)
        if left_out:
            ctx.log(f"CSVReader left out columns that are not numbers: {', '.join(left_out)}")
        tensor = (torch.from_numpy(np.array(values, dtype=np.float32).T.copy()) if columns
                  else torch.zeros(len(rows), 0))
        target_at = names.index(target) if target else -1
        labels = _label_texts([row[target_at] for row in rows]) if target else []
        return {"tensor": tensor.reshape(len(rows), len(columns)), "labels": labels, "columns": columns}

    @staticmethod
    def locate(ctx, text: str) -> tuple[Path, str]:
        """The file 'path' names (a shipped sample or a file of My files) and how messages show it."""
        if not text:
            raise NodeError("CSVReader: 'path' is empty; name a sample such as data/samples/iris.csv, or a file of "
                            "My files such as marks.csv")
        windows = PureWindowsPath(text)
        if PurePosixPath(text).is_absolute() or windows.drive or windows.root:
            raise NodeError(f"CSVReader: 'path' = {text!r} is a path on the server; CSVReader reads only the "
                            "samples (data/samples/iris.csv, …) and your own files (My files): name one of them")
        if ".." in re.split(r"[/\\]", text):
            raise NodeError(f"CSVReader: 'path' = {text!r} leaves the folders CSVReader reads; name a sample such "
                            "as data/samples/iris.csv, or a file of My files")
        if text.replace("\\", "/").startswith(SAMPLE_PREFIX):
            name = text.replace("\\", "/")[len(SAMPLE_PREFIX):]
            path = SAMPLES_DIR / name
            if "/" in name or not name.endswith(".csv") or not path.is_file():
                found = ", ".join(SAMPLE_PREFIX + p.name for p in sorted(SAMPLES_DIR.glob("*.csv")))
                raise NodeError(f"CSVReader: there is no sample {text!r}; the samples are {found}")
            return path, text
        return ctx.user_file(text, "path"), repr(text)

    @staticmethod
    def parse(ctx, text: str, shown: str, header: bool) -> tuple[list[str], list[list[str]], list[int]]:
        """(column names, rows of cells padded to the header's width, each row's line number)."""
        reader = csv.reader(io.StringIO(text))
        names: list[str] | None = None
        rows, lines = [], []
        try:
            for record in reader:
                if not any(cell.strip() for cell in record):
                    continue  # blank lines are skipped
                if len(rows) % 20_000 == 0 and ctx.cancelled():
                    raise NodeError("CSVReader stopped before it had read the whole file")
                if names is None:
                    names = _unique([c.strip() for c in record] if header else [str(i) for i in range(len(record))])
                    if header:
                        continue
                if len(record) > len(names):
                    raise NodeError(f"CSVReader: line {reader.line_num} of {shown} has {len(record)} cells but the "
                                    f"table has {len(names)} columns; every row needs the same number of cells")
                rows.append(record + [""] * (len(names) - len(record)))
                lines.append(reader.line_num)
        except csv.Error as exc:
            raise NodeError(f"CSVReader: {shown} is not a CSV file CSVReader can read (line {reader.line_num}: "
                            f"{exc})") from None
        if names is None:
            raise NodeError(f"CSVReader: {shown} is empty; it needs a header line and rows of values")
        return names, rows, lines


def _unique(names: list[str]) -> list[str]:
    """Column names with repeats told apart as 'x', 'x.1', 'x.2' (as pandas names them)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in seen:
            seen[name] += 1
            name = f"{name}.{seen[name]}"
        seen.setdefault(name, 0)
        out.append(name)
    return out


def _column_numbers(cells: list[str]) -> list[float] | None:
    """A column's cells as numbers (true/false as 1/0, missing as NaN), or None if a cell is a word."""
    stripped = [c.strip() for c in cells]
    present = [c for c in stripped if c not in NA_TEXTS]
    if present and all(c in TRUE_TEXTS or c in FALSE_TEXTS for c in present):
        return [math.nan if c in NA_TEXTS else float(c in TRUE_TEXTS) for c in stripped]
    numbers = []
    for cell in stripped:
        number = _number(cell)
        if number is None:
            return None
        numbers.append(number)
    return numbers


def _label_texts(cells: list[str]) -> list[str]:
    """The target column's cells as label texts: whole numbers as 1 (not 01 or 1.0 when the
    column holds only whole numbers), other numbers as Python writes them, words unchanged."""
    stripped = [c.strip() for c in cells]
    try:
        return [str(int(c)) for c in stripped]
    except ValueError:
        pass
    numbers = _column_numbers(stripped)
    if numbers is not None and not any(c in TRUE_TEXTS or c in FALSE_TEXTS for c in stripped):
        return [str(v) for v in numbers]
    return [c if c not in NA_TEXTS else "nan" for c in cells]


@register
class TrainTestSplit(LibraryNode):
    type = "TrainTestSplit"
    category = DATA
    description = "Splits rows and their labels into a part to learn from and a part kept back for testing."
    details = (
        "A model is judged on rows it never learned from: this node shuffles the rows (with their labels) "
        "and keeps back a share, 'test_size' (0.2 = one row in five), as the test part. features [N, …] with "
        "N labels give x_train and y_train (the rest) and x_test and y_test (the share kept back). The same "
        "'seed' gives the same split every time. With 'stratify' on, each class keeps the same share in "
        "both parts, so a rare class cannot end up missing from the test part; each class then needs at "
        "least 2 rows. Computed with scikit-learn's train_test_split."
    )
    inputs = (Port("features", description="The table [N, features]"),
              Port("labels", "LIST", description="One label per row"))
    outputs = (Port("x_train"), Port("y_train", "LIST"), Port("x_test"), Port("y_test", "LIST"))
    params = (
        Param("test_size", "float", 0.2, "The share of rows kept back for testing, between 0 and 1",
              min=0.0, max=1.0),
        Param("seed", "int", 42, "The same seed gives the same split"),
        Param("stratify", "bool", False, "Keep each class's share the same in both parts"),
    )

    def run(self, ctx, params, features, labels):
        from sklearn.model_selection import train_test_split

        items = label_items(labels, "labels", self.type)
        if features.dim() == 0:
            raise NodeError("TrainTestSplit needs 'features' as a table [rows, features], but got a single number")
        n, size = features.shape[0], params["test_size"]
        if n != len(items):
            raise NodeError(f"TrainTestSplit: features has {n} rows but labels has {len(items)} labels; give one "
                            "label per row")
        if not 0 < size < 1:
            raise NodeError(f"TrainTestSplit: test_size must be between 0 and 1 (not 0 or 1 itself), not {size:g}")
        n_test = math.ceil(size * n)
        if n_test < 1 or n - n_test < 1:
            raise NodeError(f"TrainTestSplit: {n} rows are too few to split with test_size {size:g} (it keeps "
                            f"{n_test} for testing and {n - n_test} to learn from); each part needs a row at least")
        stratify = None
        if params["stratify"]:
            stratify = [str(v) for v in items]
            counts = Counter(stratify)
            rare = sorted(k for k, c in counts.items() if c < 2)
            if rare:
                raise NodeError(f"TrainTestSplit: stratify needs at least 2 rows of each class, but class "
                                f"{rare[0]!r} has only 1; turn stratify off or add rows")
            if n_test < len(counts) or n - n_test < len(counts):
                raise NodeError(f"TrainTestSplit: stratify puts every one of the {len(counts)} classes in both "
                                f"parts, but test_size {size:g} of {n} rows gives {n_test} test rows and "
                                f"{n - n_test} training rows; choose a test_size giving each part at least "
                                f"{len(counts)} rows")
        train, test = train_test_split(np.arange(n), test_size=size, random_state=random_state(params["seed"]),
                                       stratify=stratify)
        train_index, test_index = torch.from_numpy(train), torch.from_numpy(test)
        return {"x_train": features[train_index].float(), "y_train": [items[i] for i in train],
                "x_test": features[test_index].float(), "y_test": [items[i] for i in test]}


@register
class Normalize(LibraryNode):
    type = "Normalize"
    category = DATA
    description = "Rescales the numbers of a table column by column (or row by row): z-score, min-max or unit length."
    details = (
        "Features measured in different units (centimetres, kilograms) have very different sizes, and many "
        "models then pay attention mostly to the biggest. zscore subtracts the mean and divides by the "
        "standard deviation, so each column has mean 0 and spread 1: $(x-\\mu)/\\sigma$. minmax maps the "
        "smallest value to 0 and the largest to 1: $(x-\\min)/(\\max-\\min)$. unit_norm divides by the "
        "length, so each vector has length 1: $x/\\|x\\|_2$. 'axis' 0 computes the numbers down each column "
        "(one mean per feature), axis 1 along each row. A column whose values are all the same is only "
        "shifted (its spread counts as 1). 'stats' lists the numbers used: one entry per statistic, with "
        "its name (mean and std, min and max, or norm) and its values."
    )
    inputs = (Port("tensor", description="The table to rescale"),)
    outputs = (Port("tensor"), Port("stats", "LIST"))
    params = (
        Param("mode", "select", "zscore", "How to rescale", options=("zscore", "minmax", "unit_norm")),
        Param("axis", "int", 0, "0 = per column (each feature), 1 = per row (each sample)"),
    )

    def run(self, ctx, params, tensor):
        x = tensor.float()
        if x.dim() == 0 or x.numel() == 0:
            raise NodeError(f"Normalize needs a tensor with values, but got shape {shape_str(x.shape)}")
        axis = check_dim(x, params["axis"], "axis")
        mode = params["mode"]
        if mode == "zscore":
            mean, std = x.mean(dim=axis, keepdim=True), x.std(dim=axis, correction=0, keepdim=True)
            out = (x - mean) / torch.where(std == 0, torch.ones_like(std), std)
            stats = {"mean": mean, "std": std}
        elif mode == "minmax":
            low, high = x.amin(dim=axis, keepdim=True), x.amax(dim=axis, keepdim=True)
            spread = high - low
            out = (x - low) / torch.where(spread == 0, torch.ones_like(spread), spread)
            stats = {"min": low, "max": high}
        else:
            norm = x.norm(dim=axis, keepdim=True)
            out = x / torch.where(norm == 0, torch.ones_like(norm), norm)
            stats = {"norm": norm}
        return {"tensor": out, "stats": [{"name": k, "values": v.reshape(-1).tolist()} for k, v in stats.items()]}


def _picks(text: str, size: int, node: str, what: str) -> list[int]:
    picks = []
    for item in (p.strip() for p in str(text).split(",")):
        if not item:
            continue
        try:
            index = int(item)
        except ValueError:
            raise NodeError(f"{node}: 'indices' must be whole numbers separated by commas, such as 0,2, not "
                            f"{text!r}") from None
        if not 0 <= index < size:
            raise NodeError(f"{node}: index {index} in 'indices' is out of range; the tensor has {size} {what}, "
                            f"numbered 0 to {size - 1}")
        picks.append(index)
    return picks


def _named(text: str, given: Any, port: str, size: int, node: str, what: str) -> list[int]:
    if given is None or (isinstance(given, (list, tuple)) and not given):
        raise NodeError(f"{node}: 'names' is set but nothing is wired into '{port}' to look the names up in; wire "
                        f"the {port} list in (CSVReader gives one) or use 'indices' instead")
    known = [str(v) for v in label_items(given, port, node)]
    if len(known) != size:
        raise NodeError(f"{node}: '{port}' lists {len(known)} names but the tensor has {size} {what}; wire the "
                        f"{port} list that belongs to this tensor")
    wanted = [n.strip() for n in str(text).split(",") if n.strip()]
    missing = [n for n in wanted if n not in known]
    if missing:
        shown = ", ".join(dict.fromkeys(known)) if len(set(known)) <= 30 else f"{len(set(known))} names"
        raise NodeError(f"{node}: {', '.join(map(repr, missing))} {'is' if len(missing) == 1 else 'are'} not in "
                        f"'{port}' ({shown})")
    return [known.index(n) for n in wanted]


def _selection(node: str, params: dict, tensor: torch.Tensor, dim: int, given: Any, port: str,
               what: str) -> torch.Tensor:
    """The positions along ``dim`` that ColumnSelector's or RowSelector's params pick: by 'names'
    (looked up in the list ``given`` on ``port``) when set, else by 'indices'."""
    if tensor.dim() == 0:
        raise NodeError(f"{node} needs a table [rows, columns], but got a single number")
    size = tensor.shape[dim]
    if str(params["names"]).strip():
        picks = _named(params["names"], given, port, size, node, what)
    else:
        picks = _picks(params["indices"], size, node, what)
    return torch.tensor(picks, dtype=torch.long)


@register
class ColumnSelector(LibraryNode):
    type = "ColumnSelector"
    category = DATA
    description = "Keeps some columns of a table, picked by position or by name."
    details = (
        "'indices' picks columns by position, counting from 0 (\"2,3\" keeps the third and fourth). "
        "'names' picks them by name instead (\"petal length (cm),petal width (cm)\"), looked up in the "
        "'columns' list wired in (CSVReader's columns output); when 'names' is set it wins over 'indices'. "
        "The columns come out in the order listed, and a column may be listed twice. A table [rows, F] "
        "gives [rows, picked]; for a tensor of more dimensions the last one counts as the columns."
    )
    inputs = (Port("tensor", description="A table [rows, columns]"),
              Port("columns", "LIST", optional=True, description="The columns' names, to pick by name"))
    outputs = (Port("tensor"),)
    params = (
        Param("indices", "string", "0", "Column positions separated by commas, from 0, such as 0,2"),
        Param("names", "string", "", "Column names separated by commas (needs 'columns' wired); wins over indices"),
    )

    def run(self, ctx, params, tensor, columns=None):
        return {"tensor": tensor[..., _selection(self.type, params, tensor, -1, columns, "columns", "columns")]}


@register
class RowSelector(LibraryNode):
    type = "RowSelector"
    category = DATA
    description = "Keeps some rows of a table, picked by position or by their label."
    details = (
        "The rows' twin of ColumnSelector. 'indices' picks rows by position, counting from 0 (\"0,2\" keeps "
        "the first and third). 'names' picks them by label instead, looked up in the 'labels' list wired in "
        "(one label per row); a label that several rows share picks the first of them. When 'names' is set "
        "it wins over 'indices'. The rows come out in the order listed: a table [N, F] gives [picked, F]. "
        "It picks by place only; to keep the rows meeting a condition (marks above 80), use a filter node."
    )
    inputs = (Port("tensor", description="A table [rows, columns]"),
              Port("labels", "LIST", optional=True, description="One label per row, to pick by label"))
    outputs = (Port("tensor"),)
    params = (
        Param("indices", "string", "0", "Row positions separated by commas, from 0, such as 0,2"),
        Param("names", "string", "", "Row labels separated by commas (needs 'labels' wired); wins over indices"),
    )

    def run(self, ctx, params, tensor, labels=None):
        return {"tensor": tensor[_selection(self.type, params, tensor, 0, labels, "labels", "rows")]}


# -- Classical: models and their score -----------------------------------------------------------------

@register
class KNN(LibraryNode):
    type = "KNN"
    category = CLASSICAL
    description = "k-nearest neighbours: each query row takes the label most of its k closest training rows have."
    details = (
        "The simplest classifier: it remembers the training rows, and for each query row finds the "
        "'n_neighbors' training rows closest to it and lets them vote. 'weights' distance gives closer "
        "neighbours a bigger vote. 'metric' is how closeness is measured: minkowski (here the same as "
        "euclidean, the straight-line distance), manhattan (along the axes, like city blocks), chebyshev "
        "(the largest difference in any one feature) or cosine (the angle between the rows). Features on "
        "very different scales should be normalised first (Normalize). x_train [N, F] with N labels and "
        "x_query [M, F] give M 'predictions', 'probabilities' [M, classes] (each class's share of the "
        "vote) and the sorted 'classes'; n_neighbors larger than N counts as N. Computed with "
        "scikit-learn. " + MODEL_PORT_NOTE
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("probabilities"), Port("classes", "LIST"), Port("model", "MODEL"))
    params = (
        Param("n_neighbors", "int", 5, "How many closest training rows vote (k)", min=1, max=1000),
        Param("weights", "select", "uniform", "uniform: every neighbour votes the same; distance: closer ones more",
              options=("uniform", "distance")),
        Param("metric", "select", "minkowski", "How the distance between two rows is measured",
              options=("minkowski", "euclidean", "manhattan", "chebyshev", "cosine")),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.neighbors import KNeighborsClassifier

        fit = Fit(ctx, self.type, x_train, y_train, x_query)
        if fit.n * fit.m * fit.f > KNN_WORK:
            raise too_much(self.type, f"training rows × query rows × features ({fit.n:,} × {fit.m:,} × {fit.f:,})",
                           fit.n * fit.m * fit.f, KNN_WORK, "Use fewer training or query rows")
        k = min(params["n_neighbors"], fit.n)
        if k < params["n_neighbors"]:
            ctx.log(f"KNN: n_neighbors {params['n_neighbors']} is more than the {fit.n} training rows; {k} vote")
        estimator = KNeighborsClassifier(n_neighbors=k, weights=params["weights"], metric=params["metric"])
        model, predictions = fit.outputs(estimator.fit(fit.rows, fit.labels))
        return {"predictions": predictions, "probabilities": fit.probabilities(model), "classes": model.classes,
                "model": model}


@register
class LinearRegression(LibraryNode):
    type = "LinearRegression"
    category = CLASSICAL
    description = "Fits the straight line (or flat plane) that best predicts a number from the features."
    details = (
        "Ordinary least squares: it finds the weights 'coef' and the 'intercept' that make "
        "coef · x + intercept as close as possible to each training target (the smallest sum of squared "
        "misses), then computes that line for each query row. x_train [N, F] with y_train [N] (numbers, "
        "not class labels) and x_query [M, F] give 'predictions' [M]; 'coef' has one weight per feature. "
        "With several targets per row, y_train [N, T] gives predictions [M, T] and one intercept per target "
        "(then 'intercept' is a tensor). 'fit_intercept' off forces the line through 0. Computed with "
        "scikit-learn."
    )
    inputs = (Port("x_train", description="Training features [N, F]"),
              Port("y_train", description="Training targets [N] (numbers)"),
              Port("x_query", description="Features [M, F] to predict for"))
    outputs = (Port("predictions"), Port("coef"), Port("intercept", "SCALAR"))
    params = (Param("fit_intercept", "bool", True, "Learn an intercept; off: the line passes through 0"),)

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.linear_model import LinearRegression as Estimator

        if y_train.dim() not in (1, 2):
            raise NodeError(f"LinearRegression expects y_train as [N] targets (or [N, T]), but got shape "
                            f"{shape_str(y_train.shape)}")
        x_train, x_query = training_data(self.type, x_train, x_query)
        n, f = x_train.shape
        if y_train.shape[0] != n:
            raise NodeError(f"LinearRegression: x_train has {n} rows but y_train has {y_train.shape[0]} targets; "
                            "give one target per row")
        check_fit_size(ctx, self.type, n, f)
        if n * f * f > LINEAR_WORK:
            raise too_much(self.type, f"rows × features² ({n:,} × {f:,}²)", n * f * f, LINEAR_WORK,
                           "Use fewer columns (ColumnSelector)")
        targets = numpy_table(y_train.float().reshape(n, -1), "y_train", self.type)
        model = Estimator(fit_intercept=params["fit_intercept"]).fit(
            numpy_table(x_train, "x_train", self.type), targets if y_train.dim() == 2 else targets[:, 0])
        predictions = model.predict(numpy_table(x_query, "x_query", self.type)) if x_query.shape[0] else \
            np.zeros((0, *targets.shape[1:])) if y_train.dim() == 2 else np.zeros(0)
        intercept = np.asarray(model.intercept_, dtype=np.float32)
        return {"predictions": torch.as_tensor(np.asarray(predictions, dtype=np.float32)),
                "coef": torch.as_tensor(np.asarray(model.coef_, dtype=np.float32)),
                "intercept": float(intercept) if intercept.ndim == 0 else torch.as_tensor(intercept)}


@register
class LogisticRegression(LibraryNode):
    type = "LogisticRegression"
    category = CLASSICAL
    description = "Logistic regression: a straight border between classes, with a probability for each."
    details = (
        "It learns one weight per feature and class, adds the weighted features up and turns the sums into "
        "probabilities (the softmax; with two classes the S-shaped sigmoid). Its borders between classes are "
        "straight lines, so it cannot separate a ring from its centre. 'C' is how closely it may fit the "
        "training rows: smaller C keeps the weights small (more regularisation). 'penalty' l2 shrinks all "
        "weights, l1 pushes some to exactly 0, none fits freely. 'max_iter' caps the solver's steps (the run "
        "log says when that was too few). x_train [N, F] with N labels and x_query [M, F] give M "
        "'predictions', 'probabilities' [M, classes], the sorted 'classes' and the weights 'coef' [classes, F] "
        "([1, F] for two classes). Computed with scikit-learn. " + MODEL_PORT_NOTE
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("probabilities"), Port("classes", "LIST"), Port("coef"),
               Port("model", "MODEL"))
    params = (
        Param("C", "float", 1.0, "How closely it may fit: smaller = more regularised (more than 0)"),
        Param("max_iter", "int", 200, "The most solver steps", min=1, max=10_000),
        Param("penalty", "select", "l2", "Which regularisation: l2, l1 or none", options=("l2", "l1", "none")),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.linear_model import LogisticRegression as Estimator

        c, steps, penalty = params["C"], params["max_iter"], params["penalty"]
        if not c > 0:
            raise NodeError(f"LogisticRegression: C must be more than 0, not {c:g}")
        fit = Fit(ctx, self.type, x_train, y_train, x_query, min_classes=2)
        work = steps * fit.n * fit.f * len(fit.classes)
        if work > LOGISTIC_WORK:
            raise too_much(self.type, "max_iter × rows × features × classes", work, LOGISTIC_WORK,
                           "Lower max_iter, or use fewer rows or columns")
        if penalty == "l1":
            estimator = Estimator(C=c, l1_ratio=1.0, solver="saga", max_iter=steps, random_state=0)
        else:
            estimator = Estimator(C=math.inf if penalty == "none" else c, l1_ratio=0.0, max_iter=steps)
        model, predictions = fit.outputs(estimator.fit(fit.rows, fit.labels))
        if int(np.max(estimator.n_iter_)) >= steps:
            ctx.log(f"LogisticRegression used all {steps} steps of max_iter before settling; raise max_iter, or "
                    "normalise the features (Normalize)")
        return {"predictions": predictions, "probabilities": fit.probabilities(model), "classes": model.classes,
                "coef": torch.as_tensor(np.asarray(estimator.coef_, dtype=np.float32)), "model": model}


@register
class DecisionTreeClassifier(LibraryNode):
    type = "DecisionTreeClassifier"
    category = CLASSICAL
    description = "A decision tree: a chain of yes/no questions about the features that ends in a class."
    details = (
        "The tree asks one question at a time, such as 'is feature_2 <= 2.45?', each chosen to split the "
        "training rows into purer groups; 'criterion' is how purity is measured (gini, entropy or log_loss). "
        "'max_depth' caps how many questions deep it goes (0 = no cap: it keeps asking until every group is "
        "pure, and may learn the training rows by heart). 'random_state' settles ties between equally good "
        "questions, so every run grows the same tree. x_train [N, F] with N labels and x_query [M, F] give M "
        "'predictions', 'feature_importances' [F] (how much each feature's questions helped, summing to 1), "
        "'tree_text' (the learned questions as text; features are named feature_0, feature_1, …) and the "
        "sorted 'classes'. Computed with scikit-learn. " + MODEL_PORT_NOTE
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("feature_importances"), Port("tree_text", "STRING"),
               Port("classes", "LIST"), Port("model", "MODEL"))
    params = (
        Param("max_depth", "int", 5, "The most questions deep; 0 = no limit", min=0, max=100),
        Param("criterion", "select", "gini", "How a question's split is scored",
              options=("gini", "entropy", "log_loss")),
        Param("random_state", "int", 42, "Settles ties between equally good questions"),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.tree import DecisionTreeClassifier as Estimator, export_text

        fit = Fit(ctx, self.type, x_train, y_train, x_query)
        estimator = Estimator(max_depth=params["max_depth"] or None, criterion=params["criterion"],
                              random_state=random_state(params["random_state"]))
        model, predictions = fit.outputs(estimator.fit(fit.rows, fit.labels))
        return {"predictions": predictions,
                "feature_importances": torch.as_tensor(estimator.feature_importances_, dtype=torch.float32),
                "tree_text": export_text(estimator), "classes": model.classes, "model": model}


@register
class RandomForestClassifier(LibraryNode):
    type = "RandomForestClassifier"
    category = CLASSICAL
    description = "A random forest: many decision trees, each grown on a random sample of the rows, vote."
    details = (
        "One deep decision tree learns its training rows by heart; many different ones, each grown from a "
        "random resample of the rows and looking at a random few features at each question, make fewer "
        "mistakes together. 'n_estimators' is how many trees vote, 'max_depth' how many questions deep each "
        "may go (0 = no limit). The same 'seed' grows the same forest. x_train [N, F] with N labels and "
        "x_query [M, F] give M 'predictions', 'probabilities' [M, classes] (the trees' averaged votes) and "
        "the sorted 'classes'. More trees take longer: trees × rows is bounded on this server. Computed "
        "with scikit-learn. " + MODEL_PORT_NOTE
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("probabilities"), Port("classes", "LIST"), Port("model", "MODEL"))
    params = (
        Param("n_estimators", "int", 100, "How many trees vote", min=1, max=1000),
        Param("max_depth", "int", 0, "The most questions deep for each tree; 0 = no limit", min=0, max=100),
        Param("seed", "int", 0, "The same seed grows the same forest"),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.ensemble import RandomForestClassifier as Estimator

        fit = Fit(ctx, self.type, x_train, y_train, x_query)
        trees = params["n_estimators"]
        work = trees * fit.n * math.ceil(math.sqrt(fit.f))
        if work > FOREST_WORK:
            raise too_much(self.type, f"trees × rows × √features ({trees:,} × {fit.n:,} × "
                           f"{math.ceil(math.sqrt(fit.f))})", work, FOREST_WORK, "Use fewer trees or fewer rows")
        estimator = Estimator(n_estimators=trees, max_depth=params["max_depth"] or None,
                              random_state=random_state(params["seed"]))
        model, predictions = fit.outputs(estimator.fit(fit.rows, fit.labels))
        return {"predictions": predictions, "probabilities": fit.probabilities(model), "classes": model.classes,
                "model": model}


@register
class SVMClassifier(LibraryNode):
    type = "SVMClassifier"
    category = CLASSICAL
    description = "A support vector machine: the border between classes with the widest margin."
    details = (
        "It draws the border that stays as far as possible from the training rows of both sides; the rows "
        "closest to the border, the 'support_vectors', alone decide where it goes. The 'kernel' lets the "
        "border bend: linear draws a straight line, rbf (the default) can wrap around a cluster and so "
        "separates a ring from its centre, poly draws curves, sigmoid an S-like border. 'C' is how much a "
        "row on the wrong side costs: smaller C gives a wider, more forgiving margin. 'gamma' (rbf, poly, "
        "sigmoid) is how far one row's influence reaches: scale, auto or a number such as 0.5. x_train "
        "[N, F] with N labels and x_query [M, F] give M 'predictions', the 'support_vectors' [n_sv, F] and "
        f"the sorted 'classes'. Fitting grows with the square of the rows: at most {SVM_ROWS:,} training "
        "rows. Computed with scikit-learn. " + MODEL_PORT_NOTE
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("support_vectors"), Port("classes", "LIST"),
               Port("model", "MODEL"))
    params = (
        Param("C", "float", 1.0, "What a row on the wrong side costs: smaller = wider margin (more than 0)"),
        Param("kernel", "select", "rbf", "How the border may bend", options=("linear", "rbf", "poly", "sigmoid")),
        Param("gamma", "string", "scale", "How far one row reaches (rbf, poly, sigmoid): scale, auto or a number"),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.svm import SVC

        c = params["C"]
        if not c > 0:
            raise NodeError(f"SVMClassifier: C must be more than 0, not {c:g}")
        gamma: float | str = str(params["gamma"]).strip()
        if gamma not in ("scale", "auto"):
            try:
                gamma = float(gamma)
            except ValueError:
                gamma = -1.0
            if not (gamma > 0 and math.isfinite(gamma)):
                raise NodeError(f"SVMClassifier: gamma must be scale, auto or a number more than 0, not "
                                f"{params['gamma']!r}")
        fit = Fit(ctx, self.type, x_train, y_train, x_query, min_classes=2)
        if fit.n > SVM_ROWS:
            raise too_much(self.type, "x_train's rows", fit.n, SVM_ROWS, "Use fewer training rows")
        estimator = SVC(C=c, kernel=params["kernel"], gamma=gamma)
        model, predictions = fit.outputs(estimator.fit(fit.rows, fit.labels))
        return {"predictions": predictions,
                "support_vectors": torch.as_tensor(np.asarray(estimator.support_vectors_, dtype=np.float32)),
                "classes": model.classes, "model": model}


@register
class MLPClassifier(LibraryNode):
    type = "MLPClassifier"
    category = CLASSICAL
    description = "A small neural network (multi-layer perceptron) trained to classify rows."
    details = (
        "Layers of neurons between the features and the classes: 'hidden_sizes' \"16,16\" means two hidden "
        "layers of 16 neurons. Each neuron adds up its weighted inputs and applies the 'activation' (relu, "
        "tanh, logistic); with identity the whole network is one straight-line model and cannot bend its "
        "borders, which shows why activations matter. It is trained with the Adam optimiser starting at "
        "'learning_rate_init' for at most 'max_iter' passes over the training rows (it stops sooner once "
        "the loss stops improving); 'seed' fixes the starting weights. x_train [N, F] with N labels and "
        "x_query [M, F] give M 'predictions', 'probabilities' [M, classes], the sorted 'classes' and the "
        "final 'train_loss' (cross-entropy). Passes × rows are bounded on this server. Computed with "
        "scikit-learn. " + MODEL_PORT_NOTE
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("probabilities"), Port("classes", "LIST"),
               Port("train_loss", "SCALAR"), Port("model", "MODEL"))
    params = (
        Param("hidden_sizes", "string", "16,16", "Neurons in each hidden layer, separated by commas"),
        Param("activation", "select", "relu", "What each hidden neuron applies to its sum",
              options=("relu", "tanh", "logistic", "identity")),
        Param("max_iter", "int", 500, "The most passes over the training rows", min=1, max=5000),
        Param("learning_rate_init", "float", 0.01, "Adam's step size at the start (more than 0)", min=0.0),
        Param("seed", "int", 42, "Fixes the starting weights and the order rows are seen in"),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.neural_network import MLPClassifier as Estimator

        sizes = self.hidden_sizes(params["hidden_sizes"])
        rate, passes = params["learning_rate_init"], params["max_iter"]
        if not rate > 0:
            raise NodeError(f"MLPClassifier: learning_rate_init must be more than 0, not {rate:g}")
        fit = Fit(ctx, self.type, x_train, y_train, x_query, min_classes=2)
        widths = [fit.f, *sizes, len(fit.classes) if len(fit.classes) > 2 else 1]
        weights = sum((a + 1) * b for a, b in zip(widths, widths[1:]))
        if passes * fit.n > MLP_PASSES:
            raise too_much(self.type, f"max_iter × rows ({passes:,} × {fit.n:,})", passes * fit.n, MLP_PASSES,
                           "Lower max_iter or use fewer rows")
        if passes * fit.n * weights > MLP_WORK:
            raise too_much(self.type, f"max_iter × rows × weights ({passes:,} × {fit.n:,} × {weights:,})",
                           passes * fit.n * weights, MLP_WORK, "Lower max_iter, use fewer rows or smaller layers")
        estimator = Estimator(hidden_layer_sizes=sizes, activation=params["activation"], solver="adam",
                              learning_rate_init=rate, max_iter=passes, random_state=random_state(params["seed"]))
        model, predictions = fit.outputs(estimator.fit(fit.rows, fit.labels))
        if estimator.n_iter_ >= passes:
            ctx.log(f"MLPClassifier used all {passes} passes of max_iter and was still improving; raise max_iter "
                    "to train longer")
        return {"predictions": predictions, "probabilities": fit.probabilities(model), "classes": model.classes,
                "train_loss": float(estimator.loss_), "model": model}

    @staticmethod
    def hidden_sizes(text: str) -> tuple[int, ...]:
        try:
            sizes = tuple(int(s) for s in str(text).replace(" ", "").split(",") if s)
        except ValueError:
            sizes = (0,)
        if not sizes or any(s < 1 for s in sizes):
            raise NodeError(f"MLPClassifier: hidden_sizes must be whole numbers of 1 or more separated by commas, "
                            f"such as 16,16, not {text!r}")
        if len(sizes) > MLP_LAYERS or max(sizes) > MLP_WIDTH:
            raise NodeError(f"MLPClassifier: hidden_sizes may have at most {MLP_LAYERS} layers of at most "
                            f"{MLP_WIDTH} neurons each, not {text!r}")
        return sizes


@register
class Accuracy(LibraryNode):
    type = "Accuracy"
    category = CLASSICAL
    description = "The share of predictions that match the true labels."
    details = (
        "Compares the predictions with the right answers one by one: 'correct' counts the matches, 'total' "
        "the pairs, and 'accuracy' is correct / total, from 0 (all wrong) to 1 (all right). Labels are "
        "compared as text, so the number 1 and the label \"1\" match. Wire a classifier's predictions on "
        "the test rows and TrainTestSplit's y_test. Two empty lists give accuracy 0."
    )
    inputs = (Port("predictions", "LIST", description="The predicted labels"),
              Port("labels", "LIST", description="The true labels, in the same order"))
    outputs = (Port("accuracy", "SCALAR"), Port("correct", "SCALAR"), Port("total", "SCALAR"))

    def run(self, ctx, params, predictions, labels):
        predicted = class_labels(predictions, "predictions", self.type)
        truth = class_labels(labels, "labels", self.type)
        if len(predicted) != len(truth):
            raise NodeError(f"Accuracy: there are {len(predicted)} predictions but {len(truth)} labels; wire the "
                            "labels of the same rows the predictions are for (y_test for predictions on x_test)")
        correct = sum(p == t for p, t in zip(predicted, truth))
        return {"accuracy": correct / len(truth) if truth else 0.0, "correct": correct, "total": len(truth)}
