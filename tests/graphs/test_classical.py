"""The classical machine-learning nodes (apps/graphs/nodes/library/tables.py and classical.py),
each against scikit-learn's or torch's own result on a tiny input, with their messages and bounds."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn import datasets, ensemble, linear_model, model_selection, neighbors, neural_network, svm, tree

from apps.graphs.nodes.base import NodeError, registry
from apps.graphs.nodes.library import classical, tables
from apps.graphs.nodes.library._estimators import FittedEstimator
from apps.runs.engine.files import UserFiles


def run(ctx, type_key, **given):
    node = registry()[type_key]
    params = {p.name: p.default for p in node.params}
    inputs = {k: v for k, v in given.items() if k not in params}
    params.update({k: v for k, v in given.items() if k in params})
    return node().run(ctx, params, **inputs)


@pytest.fixture
def files(ctx, tmp_path):
    ctx.files = UserFiles(tmp_path / "ada", max_bytes=2**20)
    (tmp_path / "ada").mkdir()
    return tmp_path / "ada"


def circles(n=60, seed=0):
    x, y = datasets.make_circles(n_samples=n, noise=0.05, factor=0.4, random_state=seed)
    return torch.from_numpy(x).float(), [str(v) for v in y]


def blobs(n=45, centers=3, seed=1):
    x, y = datasets.make_blobs(n_samples=n, centers=centers, random_state=seed)
    return torch.from_numpy(x).float(), [f"c{v}" for v in y]


def as_np(x):
    return x.numpy().astype(float)


# -- declarations --------------------------------------------------------------------------------

PORTS = {
    "SyntheticDataset": ([], ["tensor", "labels", "columns"]),
    "CSVReader": ([], ["tensor", "labels", "columns"]),
    "ColumnSelector": (["tensor", "columns"], ["tensor"]),
    "RowSelector": (["tensor", "labels"], ["tensor"]),
    "Normalize": (["tensor"], ["tensor", "stats"]),
    "TrainTestSplit": (["features", "labels"], ["x_train", "y_train", "x_test", "y_test"]),
    "Accuracy": (["predictions", "labels"], ["accuracy", "correct", "total"]),
    "KNN": (["x_train", "y_train", "x_query"], ["predictions", "probabilities", "classes", "model"]),
    "LinearRegression": (["x_train", "y_train", "x_query"], ["predictions", "coef", "intercept"]),
    "LogisticRegression": (["x_train", "y_train", "x_query"],
                           ["predictions", "probabilities", "classes", "coef", "model"]),
    "DecisionTreeClassifier": (["x_train", "y_train", "x_query"],
                               ["predictions", "feature_importances", "tree_text", "classes", "model"]),
    "RandomForestClassifier": (["x_train", "y_train", "x_query"],
                               ["predictions", "probabilities", "classes", "model"]),
    "SVMClassifier": (["x_train", "y_train", "x_query"], ["predictions", "support_vectors", "classes", "model"]),
    "MLPClassifier": (["x_train", "y_train", "x_query"],
                      ["predictions", "probabilities", "classes", "train_loss", "model"]),
}

DEFAULTS = {
    "SyntheticDataset": {"kind": "circles", "n_samples": 200, "noise": 0.1, "factor": 0.5, "centers": 3, "seed": 42},
    "CSVReader": {"path": "data/samples/iris.csv", "target_column": "", "include_columns": "", "skip_header": True},
    "ColumnSelector": {"indices": "0", "names": ""},
    "RowSelector": {"indices": "0", "names": ""},
    "Normalize": {"mode": "zscore", "axis": 0},
    "TrainTestSplit": {"test_size": 0.2, "seed": 42, "stratify": False},
    "Accuracy": {},
    "KNN": {"n_neighbors": 5, "weights": "uniform", "metric": "minkowski"},
    "LinearRegression": {"fit_intercept": True},
    "LogisticRegression": {"C": 1.0, "max_iter": 200, "penalty": "l2"},
    "DecisionTreeClassifier": {"max_depth": 5, "criterion": "gini", "random_state": 42},
    "RandomForestClassifier": {"n_estimators": 100, "max_depth": 0, "seed": 0},
    "SVMClassifier": {"C": 1.0, "kernel": "rbf", "gamma": "scale"},
    "MLPClassifier": {"hidden_sizes": "16,16", "activation": "relu", "max_iter": 500, "learning_rate_init": 0.01,
                      "seed": 42},
}


def test_the_nodes_have_codefyuis_ports_params_and_categories():
    for key, (inputs, outputs) in PORTS.items():
        node = registry()[key]
        assert [p.name for p in node.inputs] == inputs, key
        assert [p.name for p in node.outputs] == outputs, key
        assert {p.name: p.default for p in node.params} == DEFAULTS[key], key
        assert node.category == ("Classical" if key in ("Accuracy",) or key not in (
            "SyntheticDataset", "CSVReader", "ColumnSelector", "RowSelector", "Normalize", "TrainTestSplit")
            else "Data"), key
    assert [p.optional for p in registry()["ColumnSelector"].inputs] == [False, True]
    assert registry()["LinearRegression"].inputs[1].type == "TENSOR"
    assert registry()["LinearRegression"].outputs[2].type == "SCALAR"


def test_the_model_port_is_the_last_and_the_details_say_it_is_ours():
    for key in ("KNN", "LogisticRegression", "DecisionTreeClassifier", "RandomForestClassifier", "SVMClassifier",
                "MLPClassifier"):
        node = registry()[key]
        assert node.outputs[-1].name == "model" and node.outputs[-1].type == "MODEL"
        assert "CodefyUI's node has none" in node.details


# -- SyntheticDataset ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, call", [
    ("circles", lambda: datasets.make_circles(n_samples=50, noise=0.1, factor=0.5, random_state=3)),
    ("moons", lambda: datasets.make_moons(n_samples=50, noise=0.1, random_state=3)),
    ("blobs", lambda: datasets.make_blobs(n_samples=50, centers=4, cluster_std=0.5, random_state=3)),
    ("classification", lambda: datasets.make_classification(
        n_samples=50, n_features=2, n_informative=2, n_redundant=0, n_clusters_per_class=1, flip_y=0.1,
        random_state=3)),
])
def test_synthetic_dataset_is_scikit_learns(ctx, kind, call):
    out = run(ctx, "SyntheticDataset", kind=kind, n_samples=50, centers=4, seed=3)
    x, y = call()
    assert out["tensor"].dtype == torch.float32 and out["tensor"].shape == (50, 2)
    assert torch.equal(out["tensor"], torch.from_numpy(x).float())
    assert out["labels"] == [str(v) for v in y] and out["columns"] == ["x0", "x1"]


def test_synthetic_dataset_bounds(ctx):
    assert registry()["SyntheticDataset"].coerce_params({"n_samples": 10**9})[1] == [
        "'n_samples' value 1000000000 is above maximum 100000"]
    ctx.size_limit = 100
    with pytest.raises(NodeError, match="SyntheticDataset's points would need 400 elements"):
        run(ctx, "SyntheticDataset", n_samples=200)
    ctx.size_limit = 10**8
    with pytest.raises(NodeError, match="share of labels flipped, from 0 to 1, not 2"):
        run(ctx, "SyntheticDataset", kind="classification", noise=2.0)


# -- CSVReader ---------------------------------------------------------------------------------------------

def test_csv_reader_reads_the_shipped_iris_sample(ctx):
    out = run(ctx, "CSVReader", target_column="species")
    iris = datasets.load_iris()
    assert out["columns"] == iris.feature_names
    assert torch.equal(out["tensor"], torch.from_numpy(iris.data).float())
    assert out["labels"] == [iris.target_names[t] for t in iris.target]


def test_csv_reader_without_target_keeps_only_number_columns_and_says_so(ctx):
    out = run(ctx, "CSVReader")
    assert out["tensor"].shape == (150, 4) and out["labels"] == []
    assert ctx.logs == ["CSVReader left out columns that are not numbers: species"]


@pytest.mark.parametrize("name, loader, target", [("wine.csv", "load_wine", "cultivar"),
                                                  ("breast_cancer.csv", "load_breast_cancer", "diagnosis")])
def test_the_other_samples_are_scikit_learns_data_sets(ctx, name, loader, target):
    out = run(ctx, "CSVReader", path=f"data/samples/{name}", target_column=target)
    bunch = getattr(datasets, loader)()
    assert out["columns"] == list(bunch.feature_names)
    assert torch.equal(out["tensor"], torch.from_numpy(bunch.data).float())
    assert out["labels"] == [bunch.target_names[t] for t in bunch.target]


def test_csv_reader_include_columns_picks_in_order(ctx):
    out = run(ctx, "CSVReader", target_column="species", include_columns="petal width (cm), sepal length (cm)")
    assert out["columns"] == ["petal width (cm)", "sepal length (cm)"]
    assert out["tensor"][0].tolist() == pytest.approx([0.2, 5.1])


def test_csv_reader_reads_a_file_of_my_files(ctx, files):
    (files / "marks.csv").write_text("name,maths,art,passed\nAda,81,7,yes\n\nBen,,9.5,no\nCy,NA,3,yes\n")
    out = run(ctx, "CSVReader", path="marks.csv", target_column="passed")
    assert out["columns"] == ["maths", "art"] and out["labels"] == ["yes", "no", "yes"]
    assert out["tensor"].shape == (3, 2) and out["tensor"][0].tolist() == [81, 7]
    assert torch.isnan(out["tensor"][1:, 0]).all()
    assert ctx.logs == ["CSVReader left out columns that are not numbers: name"]


def test_csv_reader_without_a_header_names_columns_by_position(ctx, files):
    (files / "raw.csv").write_text("1,2,3\n4,5,6\n")
    out = run(ctx, "CSVReader", path="raw.csv", skip_header=False, target_column="2")
    assert out["columns"] == ["0", "1"] and out["labels"] == ["3", "6"]
    assert out["tensor"].tolist() == [[1, 2], [4, 5]]


def test_csv_reader_labels_of_a_number_column_read_as_whole_numbers(ctx, files):
    (files / "t.csv").write_text("a,y\n1,01\n2,1.0\n")
    assert run(ctx, "CSVReader", path="t.csv", target_column="y")["labels"] == ["1.0", "1.0"]
    (files / "u.csv").write_text("a,y\n1,01\n2,2\n")
    assert run(ctx, "CSVReader", path="u.csv", target_column="y")["labels"] == ["1", "2"]


def test_csv_reader_names_the_column_and_row_of_a_word_in_a_chosen_column(ctx, files):
    (files / "m.csv").write_text("a,b\n1,2\n3,oops\n")
    with pytest.raises(NodeError, match=r"column 'b' has 'oops' in row 2 \(line 3 of 'm.csv'\), which is not a number"):
        run(ctx, "CSVReader", path="m.csv", include_columns="a,b")


@pytest.mark.parametrize("given, message", [
    ({"target_column": "kind"}, "target_column 'kind' is not a column of data/samples/iris.csv; its columns are "
                                "sepal length"),
    ({"include_columns": "petal,sepal width (cm)"}, "include_columns names 'petal', not a column"),
    ({"path": "data/samples/nope.csv"}, "there is no sample 'data/samples/nope.csv'; the samples are "
                                        "data/samples/breast_cancer.csv, data/samples/iris.csv, data/samples/wine.csv"),
    ({"path": "data/samples/../samples/iris.csv"}, "leaves the folders CSVReader reads"),
    ({"path": "/etc/passwd"}, "is a path on the server"),
    ({"path": "C:\\data\\x.csv"}, "is a path on the server"),
    ({"path": "../other/x.csv"}, "leaves the folders CSVReader reads"),
    ({"path": "  "}, "'path' is empty"),
    ({"path": "folder/x.csv"}, "names a folder; My files has none"),
    ({"path": "absent.csv"}, "there is no such file in My files"),
])
def test_csv_reader_refuses_what_it_cannot_read(ctx, files, given, message):
    with pytest.raises(NodeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(ctx, "CSVReader", **given)


def test_csv_reader_in_a_run_without_my_files_says_so():
    from apps.runs.engine import RunOptions, execute, plan_run

    doc = graph([node("start", "Start"), node("csv", "CSVReader", path="marks.csv")], [trigger("start", "csv")])
    outcome = execute(plan_run(doc), RunOptions(run_id="nofiles"), lambda event: None)
    assert outcome.status == "failed" and "This run has no file storage" in outcome.error


def test_csv_reader_refuses_ragged_rows_bad_text_and_big_files(ctx, files, monkeypatch):
    (files / "r.csv").write_text("a,b\n1,2,3\n")
    with pytest.raises(NodeError, match="line 2 of 'r.csv' has 3 cells but the table has 2 columns"):
        run(ctx, "CSVReader", path="r.csv")
    (files / "l.csv").write_bytes("a\n\xe9\n".encode("latin-1"))
    with pytest.raises(NodeError, match="is not UTF-8 text"):
        run(ctx, "CSVReader", path="l.csv")
    (files / "e.csv").write_text("")
    with pytest.raises(NodeError, match="'e.csv' is empty"):
        run(ctx, "CSVReader", path="e.csv")
    monkeypatch.setattr(tables, "CSV_MAX_BYTES", 100)
    with pytest.raises(NodeError, match=r"is 0.0 MB; CSVReader reads files of at most 0 MB"):
        run(ctx, "CSVReader")


def test_csv_reader_checks_the_table_size_before_building_it(ctx):
    ctx.size_limit = 599
    with pytest.raises(NodeError, match="CSVReader's table would need 600 elements"):
        run(ctx, "CSVReader", target_column="species")


def test_csv_reader_header_only_keeps_the_columns(ctx, files):
    (files / "h.csv").write_text("a,b,y\n")
    out = run(ctx, "CSVReader", path="h.csv", target_column="y")
    assert out["tensor"].shape == (0, 2) and out["columns"] == ["a", "b"] and out["labels"] == []


def test_csv_reader_stops_when_the_run_is_stopped(ctx):
    ctx.stop_after = 0
    with pytest.raises(NodeError, match="stopped"):
        run(ctx, "CSVReader")


# -- TrainTestSplit ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("stratify", [False, True])
def test_train_test_split_is_scikit_learns(ctx, stratify):
    x, y = blobs(30)
    out = run(ctx, "TrainTestSplit", features=x, labels=y, test_size=0.3, seed=7, stratify=stratify)
    xa, xb, ya, yb = model_selection.train_test_split(as_np(x), y, test_size=0.3, random_state=7,
                                                      stratify=y if stratify else None)
    assert np.allclose(out["x_train"].numpy(), xa) and np.allclose(out["x_test"].numpy(), xb)
    assert out["y_train"] == ya and out["y_test"] == yb
    assert out["x_test"].shape == (9, 2) and out["x_train"].dtype == torch.float32


def test_train_test_split_keeps_label_items_and_takes_a_label_tensor(ctx):
    out = run(ctx, "TrainTestSplit", features=torch.arange(10.).reshape(10, 1), labels=torch.arange(10) % 2)
    assert sorted(out["y_train"] + out["y_test"]) == [0] * 5 + [1] * 5


@pytest.mark.parametrize("given, message", [
    ({"labels": ["a"] * 9}, "features has 10 rows but labels has 9 labels"),
    ({"test_size": 1.0}, "test_size must be between 0 and 1"),
    ({"test_size": 0.0}, "test_size must be between 0 and 1"),
    ({"features": torch.zeros(1, 2), "labels": ["a"]}, "1 rows are too few to split with test_size 0.2"),
    ({"stratify": True, "labels": ["a"] * 9 + ["b"]}, "class 'b' has only 1"),
    ({"stratify": True, "labels": ["a", "b", "c", "d", "e"] * 2, "test_size": 0.2},
     "stratify puts every one of the 5 classes in both parts"),
    ({"labels": "abc"}, "needs a list of labels"),
])
def test_train_test_split_messages(ctx, given, message):
    inputs = {"features": torch.zeros(10, 2), "labels": ["a", "b"] * 5, **given}
    with pytest.raises(NodeError, match=message):
        run(ctx, "TrainTestSplit", **inputs)


# -- Normalize ---------------------------------------------------------------------------------------------

def test_normalize_modes_match_the_formulas(ctx):
    x = torch.tensor([[1., 10.], [3., 10.], [5., 40.]])
    z = run(ctx, "Normalize", tensor=x)
    mean, std = x.mean(0), x.std(0, correction=0)
    assert torch.allclose(z["tensor"], (x - mean) / std)
    assert z["stats"] == [{"name": "mean", "values": mean.tolist()}, {"name": "std", "values": std.tolist()}]
    m = run(ctx, "Normalize", tensor=x, mode="minmax")
    assert torch.allclose(m["tensor"], torch.tensor([[0., 0.], [0.5, 0.], [1., 1.]]))
    assert m["stats"][0] == {"name": "min", "values": [1., 10.]}
    u = run(ctx, "Normalize", tensor=x, mode="unit_norm", axis=1)
    assert torch.allclose(u["tensor"], torch.nn.functional.normalize(x, dim=1))
    assert u["stats"][0]["name"] == "norm" and len(u["stats"][0]["values"]) == 3


def test_normalize_a_constant_column_is_only_shifted_and_a_bad_axis_is_named(ctx):
    out = run(ctx, "Normalize", tensor=torch.tensor([[2., 1.], [2., 3.]]))
    assert out["tensor"][:, 0].tolist() == [0, 0]
    with pytest.raises(NodeError, match="'axis' = 2 is out of range for a 2-D tensor"):
        run(ctx, "Normalize", tensor=torch.zeros(2, 2), axis=2)


# -- ColumnSelector / RowSelector ------------------------------------------------------------------------

def test_column_selector_by_index_and_by_name(ctx):
    x = torch.arange(12.).reshape(3, 4)
    assert torch.equal(run(ctx, "ColumnSelector", tensor=x, indices="2,0")["tensor"], x[:, [2, 0]])
    named = run(ctx, "ColumnSelector", tensor=x, columns=["a", "b", "c", "d"], names="d, b", indices="0")
    assert torch.equal(named["tensor"], x[:, [3, 1]])
    assert run(ctx, "ColumnSelector", tensor=x, indices="")["tensor"].shape == (3, 0)


def test_row_selector_by_index_and_by_label(ctx):
    x = torch.arange(12.).reshape(4, 3)
    assert torch.equal(run(ctx, "RowSelector", tensor=x, indices="0,2")["tensor"], x[[0, 2]])
    named = run(ctx, "RowSelector", tensor=x, labels=["ann", "bob", "ann", "cy"], names="cy,ann")
    assert torch.equal(named["tensor"], x[[3, 0]])


@pytest.mark.parametrize("type_key, given, message", [
    ("ColumnSelector", {"indices": "4"}, "index 4 in 'indices' is out of range; the tensor has 4 columns"),
    ("ColumnSelector", {"indices": "-1"}, "index -1 in 'indices' is out of range"),
    ("ColumnSelector", {"indices": "a"}, "'indices' must be whole numbers"),
    ("ColumnSelector", {"names": "a"}, "'names' is set but nothing is wired into 'columns'"),
    ("ColumnSelector", {"names": "z", "columns": ["a", "b", "c", "d"]}, "'z' is not in 'columns' \\(a, b, c, d\\)"),
    ("ColumnSelector", {"names": "a", "columns": ["a"]}, "'columns' lists 1 names but the tensor has 4 columns"),
    ("RowSelector", {"indices": "3"}, "index 3 in 'indices' is out of range; the tensor has 3 rows"),
    ("RowSelector", {"names": "x", "labels": ["a", "b", "c"]}, "'x' is not in 'labels'"),
    ("RowSelector", {"names": "x"}, "nothing is wired into 'labels'"),
])
def test_selector_messages(ctx, type_key, given, message):
    with pytest.raises(NodeError, match=message):
        run(ctx, type_key, tensor=torch.zeros(3, 4), **given)


# -- the models, each against scikit-learn's own result ---------------------------------------------------

def split(x, y):
    return x[::2], y[::2], x[1::2], y[1::2]


def test_knn_matches_scikit_learn(ctx):
    x, y = blobs()
    xa, ya, xb, yb = split(x, y)
    out = run(ctx, "KNN", x_train=xa, y_train=ya, x_query=xb, n_neighbors=3, weights="distance", metric="manhattan")
    ref = neighbors.KNeighborsClassifier(3, weights="distance", metric="manhattan").fit(as_np(xa), ya)
    assert out["predictions"] == list(ref.predict(as_np(xb)))
    assert np.allclose(out["probabilities"].numpy(), ref.predict_proba(as_np(xb)))
    assert out["classes"] == ["c0", "c1", "c2"]
    model = out["model"]
    assert isinstance(model, FittedEstimator) and model.classes == out["classes"] and model.support_vectors is None
    assert model.predict(xb) == out["predictions"] and model.scores(xb).shape == (len(yb), 3)


def test_knn_with_more_neighbours_than_rows_lets_all_vote(ctx):
    out = run(ctx, "KNN", x_train=torch.tensor([[0.], [1.], [5.]]), y_train=["a", "a", "b"],
              x_query=torch.tensor([[4.9]]), n_neighbors=10)
    assert out["predictions"] == ["a"] and ctx.logs == ["KNN: n_neighbors 10 is more than the 3 training rows; 3 vote"]


def test_linear_regression_matches_scikit_learn(ctx):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20, 3, generator=g)
    y = x @ torch.tensor([1., -2., 0.5]) + 3 + 0.01 * torch.randn(20, generator=g)
    out = run(ctx, "LinearRegression", x_train=x, y_train=y, x_query=x[:4])
    ref = linear_model.LinearRegression().fit(as_np(x), as_np(y))
    assert np.allclose(out["predictions"].numpy(), ref.predict(as_np(x[:4])), atol=1e-5)
    assert np.allclose(out["coef"].numpy(), ref.coef_, atol=1e-5)
    assert isinstance(out["intercept"], float) and out["intercept"] == pytest.approx(ref.intercept_, abs=1e-5)
    through_zero = run(ctx, "LinearRegression", x_train=x, y_train=y.tolist(), x_query=x[:1], fit_intercept=False)
    assert through_zero["intercept"] == 0.0
    two = run(ctx, "LinearRegression", x_train=x, y_train=torch.stack([y, -y], 1), x_query=x[:4])
    assert two["predictions"].shape == (4, 2) and two["intercept"].shape == (2,)


def test_linear_regression_messages(ctx):
    with pytest.raises(NodeError, match="x_train has 3 rows but y_train has 2 targets"):
        run(ctx, "LinearRegression", x_train=torch.zeros(3, 1), y_train=torch.zeros(2), x_query=torch.zeros(1, 1))
    with pytest.raises(NodeError, match="x_query has 2 features per row but x_train has 1"):
        run(ctx, "LinearRegression", x_train=torch.zeros(3, 1), y_train=torch.zeros(3), x_query=torch.zeros(1, 2))
    with pytest.raises(NodeError, match="needs a tensor"):
        run(ctx, "LinearRegression", x_train=torch.zeros(3, 1), y_train=["a", "b", "c"], x_query=torch.zeros(1, 1))


@pytest.mark.parametrize("penalty", ["l2", "l1", "none"])
def test_logistic_regression_matches_scikit_learn(ctx, penalty):
    x, y = blobs()
    xa, ya, xb, _ = split(x, y)
    out = run(ctx, "LogisticRegression", x_train=xa, y_train=ya, x_query=xb, C=0.5, penalty=penalty, max_iter=300)
    if penalty == "l1":
        ref = linear_model.LogisticRegression(C=0.5, l1_ratio=1.0, solver="saga", max_iter=300, random_state=0)
    else:
        ref = linear_model.LogisticRegression(C=np.inf if penalty == "none" else 0.5, l1_ratio=0.0, max_iter=300)
    ref.fit(as_np(xa), ya)
    assert out["predictions"] == list(ref.predict(as_np(xb)))
    assert np.allclose(out["probabilities"].numpy(), ref.predict_proba(as_np(xb)), atol=1e-6)
    assert np.allclose(out["coef"].numpy(), ref.coef_, atol=1e-5) and out["coef"].shape == (3, 2)


def test_logistic_regression_says_when_max_iter_was_too_few(ctx):
    x, y = blobs()
    run(ctx, "LogisticRegression", x_train=x, y_train=y, x_query=x, max_iter=1)
    assert ctx.logs and "used all 1 steps of max_iter" in ctx.logs[0]


def test_decision_tree_matches_scikit_learn(ctx):
    x, y = blobs()
    xa, ya, xb, _ = split(x, y)
    out = run(ctx, "DecisionTreeClassifier", x_train=xa, y_train=ya, x_query=xb, max_depth=2, criterion="entropy")
    ref = tree.DecisionTreeClassifier(max_depth=2, criterion="entropy", random_state=42).fit(as_np(xa), ya)
    assert out["predictions"] == list(ref.predict(as_np(xb)))
    assert np.allclose(out["feature_importances"].numpy(), ref.feature_importances_)
    assert out["tree_text"] == tree.export_text(ref) and "feature_0" in out["tree_text"]
    assert out["model"].scores(xb).shape == (len(xb), 3)


def test_random_forest_matches_scikit_learn(ctx):
    x, y = circles()
    xa, ya, xb, _ = split(x, y)
    out = run(ctx, "RandomForestClassifier", x_train=xa, y_train=ya, x_query=xb, n_estimators=10, max_depth=3, seed=5)
    ref = ensemble.RandomForestClassifier(n_estimators=10, max_depth=3, random_state=5).fit(as_np(xa), ya)
    assert out["predictions"] == list(ref.predict(as_np(xb)))
    assert np.allclose(out["probabilities"].numpy(), ref.predict_proba(as_np(xb)))
    again = run(ctx, "RandomForestClassifier", x_train=xa, y_train=ya, x_query=xb, n_estimators=10, max_depth=3, seed=5)
    assert torch.equal(again["probabilities"], out["probabilities"])


@pytest.mark.parametrize("kernel, gamma", [("rbf", "scale"), ("linear", "auto"), ("poly", "0.5")])
def test_svm_matches_scikit_learn_and_its_model_carries_the_support_vectors(ctx, kernel, gamma):
    x, y = circles()
    xa, ya, xb, _ = split(x, y)
    out = run(ctx, "SVMClassifier", x_train=xa, y_train=ya, x_query=xb, kernel=kernel, gamma=gamma, C=2.0)
    ref = svm.SVC(C=2.0, kernel=kernel, gamma=float(gamma) if gamma[0].isdigit() else gamma).fit(as_np(xa), ya)
    assert out["predictions"] == list(ref.predict(as_np(xb)))
    assert np.allclose(out["support_vectors"].numpy(), ref.support_vectors_)
    model = out["model"]
    assert np.allclose(model.support_vectors, ref.support_vectors_)
    scores = model.scores(xb)
    assert scores.shape == (len(xb), 2)  # two classes: the one signed score, as two columns
    assert [model.classes[i] for i in scores.argmax(axis=1)] == out["predictions"]


def test_svm_multiclass_scores_have_a_column_per_class(ctx):
    x, y = blobs()
    out = run(ctx, "SVMClassifier", x_train=x, y_train=y, x_query=x[:5])
    assert out["model"].scores(x[:5]).shape == (5, 3)


def test_mlp_matches_scikit_learn(ctx):
    x, y = circles(40)
    xa, ya, xb, _ = split(x, y)
    out = run(ctx, "MLPClassifier", x_train=xa, y_train=ya, x_query=xb, hidden_sizes="8, 4", activation="tanh",
              max_iter=50, seed=3)
    ref = neural_network.MLPClassifier(hidden_layer_sizes=(8, 4), activation="tanh", solver="adam",
                                       learning_rate_init=0.01, max_iter=50, random_state=3).fit(as_np(xa), ya)
    assert out["predictions"] == list(ref.predict(as_np(xb)))
    assert np.allclose(out["probabilities"].numpy(), ref.predict_proba(as_np(xb)), atol=1e-6)
    assert out["train_loss"] == pytest.approx(ref.loss_)
    assert "used all 50 passes" in ctx.logs[0]


@pytest.mark.parametrize("text", ["", "16,a", "0", "16,-2", "2000", ",".join(["2"] * 11)])
def test_mlp_refuses_bad_hidden_sizes(ctx, text):
    x, y = circles(20)
    with pytest.raises(NodeError, match="MLPClassifier: hidden_sizes"):
        run(ctx, "MLPClassifier", x_train=x, y_train=y, x_query=x, hidden_sizes=text)


# -- messages the models share -------------------------------------------------------------------------

CLASSIFIERS = ["KNN", "LogisticRegression", "DecisionTreeClassifier", "RandomForestClassifier", "SVMClassifier",
               "MLPClassifier"]


@pytest.mark.parametrize("type_key", CLASSIFIERS)
def test_classifiers_name_a_label_count_that_does_not_fit(ctx, type_key):
    with pytest.raises(NodeError, match=f"{type_key}: x_train has 4 rows but y_train has 3 labels"):
        run(ctx, type_key, x_train=torch.zeros(4, 2), y_train=["a", "b", "a"], x_query=torch.zeros(1, 2))


@pytest.mark.parametrize("type_key", CLASSIFIERS)
def test_classifiers_refuse_missing_values(ctx, type_key):
    x = torch.tensor([[0., 1.], [float("nan"), 2.], [3., 4.]])
    with pytest.raises(NodeError, match="'x_train' has a missing or infinite value \\(NaN or inf\\) in row 1"):
        run(ctx, type_key, x_train=x, y_train=["a", "b", "a"], x_query=torch.zeros(1, 2))


@pytest.mark.parametrize("type_key", ["LogisticRegression", "SVMClassifier", "MLPClassifier"])
def test_classifiers_that_need_two_classes_say_so(ctx, type_key):
    with pytest.raises(NodeError, match=f"{type_key} needs at least 2 classes in y_train .* only the class 'a'"):
        run(ctx, type_key, x_train=torch.zeros(4, 2), y_train=["a"] * 4, x_query=torch.zeros(1, 2))


@pytest.mark.parametrize("type_key", ["KNN", "DecisionTreeClassifier", "RandomForestClassifier"])
def test_classifiers_that_take_one_class_predict_it(ctx, type_key):
    out = run(ctx, type_key, x_train=torch.zeros(4, 2), y_train=["a"] * 4, x_query=torch.zeros(2, 2))
    assert out["predictions"] == ["a", "a"]


@pytest.mark.parametrize("type_key, given, message", [
    ("LogisticRegression", {"C": 0.0}, "C must be more than 0"),
    ("SVMClassifier", {"C": -1.0}, "C must be more than 0"),
    ("SVMClassifier", {"gamma": "big"}, "gamma must be scale, auto or a number more than 0, not 'big'"),
    ("SVMClassifier", {"gamma": "-2"}, "gamma must be scale, auto or a number"),
    ("MLPClassifier", {"learning_rate_init": 0.0}, "learning_rate_init must be more than 0"),
])
def test_bad_params_are_named(ctx, type_key, given, message):
    x, y = circles(20)
    with pytest.raises(NodeError, match=message):
        run(ctx, type_key, x_train=x, y_train=y, x_query=x, **given)


def test_an_empty_query_gives_empty_predictions(ctx):
    x, y = circles(20)
    for key in CLASSIFIERS:
        out = run(ctx, key, x_train=x, y_train=y, x_query=torch.zeros(0, 2), max_iter=5) if key in (
            "LogisticRegression", "MLPClassifier") else run(ctx, key, x_train=x, y_train=y, x_query=torch.zeros(0, 2))
        assert out["predictions"] == [], key


# -- bounds: refused before the work ---------------------------------------------------------------------

def test_param_maxima_are_set():
    problems = {key: registry()[key].coerce_params(raw)[1] for key, raw in {
        "KNN": {"n_neighbors": 5000}, "LogisticRegression": {"max_iter": 10**6},
        "RandomForestClassifier": {"n_estimators": 10**5, "max_depth": 1000},
        "MLPClassifier": {"max_iter": 10**6}, "DecisionTreeClassifier": {"max_depth": 1000}}.items()}
    assert all(problems.values()), problems


@pytest.mark.parametrize("type_key, bound, given, message", [
    ("KNN", "FIT_CELLS", {}, "x_train's rows × features \\(10 × 2\\) = 20, more than the 19"),
    ("KNN", "KNN_WORK", {}, "training rows × query rows × features"),
    ("LogisticRegression", "LOGISTIC_WORK", {}, "max_iter × rows × features × classes"),
    ("RandomForestClassifier", "FOREST_WORK", {"n_estimators": 10}, "trees × rows × √features"),
    ("SVMClassifier", "SVM_ROWS", {}, "x_train's rows = 10, more than the 9"),
    ("MLPClassifier", "MLP_PASSES", {"max_iter": 10}, "max_iter × rows \\(10 × 10\\)"),
    ("MLPClassifier", "MLP_WORK", {"max_iter": 10}, "max_iter × rows × weights"),
    ("LinearRegression", "LINEAR_WORK", {}, "rows × features²"),
])
def test_big_fits_are_refused_before_they_start(ctx, monkeypatch, type_key, bound, given, message):
    x, y = circles(10)
    small = {"FIT_CELLS": 19, "KNN_WORK": 199, "LOGISTIC_WORK": 10, "FOREST_WORK": 99, "SVM_ROWS": 9,
             "MLP_PASSES": 99, "MLP_WORK": 1000, "LINEAR_WORK": 39}[bound]
    monkeypatch.setattr(classical, bound, small)
    labels = torch.tensor([float(v) for v in y]) if type_key == "LinearRegression" else y
    with pytest.raises(NodeError, match=f"{type_key}: {message}.*would take too long"):
        run(ctx, type_key, x_train=x, y_train=labels, x_query=x, **given)


def test_the_training_table_is_checked_against_the_element_limit(ctx):
    ctx.size_limit = 10
    x, y = circles(10)
    with pytest.raises(NodeError, match="KNN's training table would need 20 elements"):
        run(ctx, "KNN", x_train=x, y_train=y, x_query=x)


# -- Accuracy ----------------------------------------------------------------------------------------------

def test_accuracy_counts_matches_as_text(ctx):
    out = run(ctx, "Accuracy", predictions=["1", "0", "2", "1"], labels=torch.tensor([1, 0, 1, 1]))
    assert out == {"accuracy": 0.75, "correct": 3, "total": 4}
    assert run(ctx, "Accuracy", predictions=[], labels=[]) == {"accuracy": 0.0, "correct": 0, "total": 0}
    with pytest.raises(NodeError, match="there are 2 predictions but 3 labels"):
        run(ctx, "Accuracy", predictions=["a", "b"], labels=["a", "b", "c"])


# -- the pieces in a graph ----------------------------------------------------------------------------------

def node(id_, type_, **params):
    return {"id": id_, "type": type_, "position": {"x": 0, "y": 0}, "data": {"params": params}}


def edge(s, sp, t, tp):
    return {"id": f"{s}-{sp}-{t}-{tp}", "source": s, "sourceHandle": sp, "target": t, "targetHandle": tp}


def trigger(s, t):
    return {"id": f"t-{s}-{t}", "type": "trigger", "source": s, "sourceHandle": "trigger", "target": t,
            "targetHandle": ""}


def graph(nodes, edges):
    from apps.graphs import document

    return document.normalise({"nodes": nodes, "edges": edges})


def test_iris_pipeline_through_the_engine():
    """CSVReader → ColumnSelector → Normalize → TrainTestSplit → KNN → Accuracy runs as one graph."""
    from apps.graphs import document
    from apps.runs.engine import RunOptions, execute, plan_run

    doc = document.normalise({"nodes": [
        node("start", "Start"), node("csv", "CSVReader", target_column="species"), node("cols", "ColumnSelector", indices="2,3"),
        node("norm", "Normalize"), node("split", "TrainTestSplit", stratify=True), node("knn", "KNN"),
        node("acc", "Accuracy")], "edges": [
        trigger("start", "csv"), edge("csv", "tensor", "cols", "tensor"), edge("cols", "tensor", "norm", "tensor"),
        edge("norm", "tensor", "split", "features"), edge("csv", "labels", "split", "labels"),
        edge("split", "x_train", "knn", "x_train"), edge("split", "y_train", "knn", "y_train"),
        edge("split", "x_test", "knn", "x_query"), edge("knn", "predictions", "acc", "predictions"),
        edge("split", "y_test", "acc", "labels")]})
    outcome = execute(plan_run(doc), RunOptions(run_id="iris"), lambda event: None)
    assert outcome.status == "succeeded", outcome.error
    assert outcome.nodes["acc"].summary["total"]["value"] == 30
    assert outcome.nodes["acc"].summary["accuracy"]["value"] > 0.9


def test_csv_reader_names_a_column_that_mixes_words_and_numbers(ctx, files):
    """Each cell reads alone (true, 3) but the column is no number column: a message, not a traceback."""
    (files / "mixed.csv").write_text("flag,y\ntrue,a\n3,b\n")
    with pytest.raises(NodeError, match="column 'flag' mixes words and numbers"):
        run(ctx, "CSVReader", path="mixed.csv", target_column="y", include_columns="flag")
