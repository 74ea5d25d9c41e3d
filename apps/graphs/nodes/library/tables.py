"""The Data nodes that make, read, split, scale and pick parts of a table [rows, features]:
SyntheticDataset, CSVReader, TrainTestSplit, Normalize, ColumnSelector and RowSelector, the
tables the classical models (classical.py) learn from.

A table is a float32 tensor [rows, features]; labels travel as a LIST of strings, one a row.
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
from ._helpers import LibraryNode, check_dim, label_items, random_state, shape_str

DATA = "Data"

CSV_MAX_BYTES = 10 * 2**20   # a CSV file CSVReader reads
SYNTHETIC_MAX = 100_000

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples"  # apps/graphs/samples
SAMPLE_PREFIX = "data/samples/"


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
