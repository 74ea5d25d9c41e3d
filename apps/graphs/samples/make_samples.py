"""Writes the sample tables CSVReader offers as ``data/samples/<name>.csv``, from the data sets
scikit-learn ships with itself (no download). The CSVs are committed; run this again only to
remake them:

    .venv/bin/python apps/graphs/samples/make_samples.py

Each file has a header row, the features as numbers, and the class as its name in the last
column (``species`` for iris, ``cultivar`` for wine, ``diagnosis`` for breast_cancer).
"""
from __future__ import annotations

import csv
from pathlib import Path

HERE = Path(__file__).resolve().parent

# file name -> (scikit-learn loader, name of the class column)
SAMPLES = {
    "iris.csv": ("load_iris", "species"),
    "wine.csv": ("load_wine", "cultivar"),
    "breast_cancer.csv": ("load_breast_cancer", "diagnosis"),
}


def number(value: float) -> str:
    """The shortest text that reads back as the same number (5.1, not 5.1000000000000005)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def write(name: str, loader: str, target: str) -> Path:
    import sklearn.datasets

    bunch = getattr(sklearn.datasets, loader)()
    path = HERE / name
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([*bunch.feature_names, target])
        for row, cls in zip(bunch.data, bunch.target):
            writer.writerow([*(number(v) for v in row), bunch.target_names[cls]])
    return path


def main() -> None:
    for name, (loader, target) in SAMPLES.items():
        print(write(name, loader, target))


if __name__ == "__main__":
    main()
