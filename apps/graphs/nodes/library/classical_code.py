"""The classical nodes as scikit-learn code: each node of tables.py and classical.py gets its
``to_python`` here (the last lines of this module attach them).

Each function writes what the node's ``run`` computes, in its order: the rows as float64
arrays, labels as text, the same estimator settings and ``random_state``, so a script prints
the accuracies the server's run computes. CSVReader, ColumnSelector and RowSelector have no
translation yet: the engine runs them. A classifier's 'model' output
(CodefyUI's wrapper around the fitted estimator) is not written either: a graph that wires it
on has the engine run that classifier.
"""
from __future__ import annotations

from . import classical, tables
from ._helpers import random_state


def synthetic_dataset(cls, code, params):
    n, noise, seed = params["n_samples"], params["noise"], random_state(params["seed"])
    kind = params["kind"]
    made = {
        "circles": f"make_circles(n_samples={n!r}, noise={noise!r}, factor={min(0.99, max(0.01, params['factor']))!r}, "
                   f"random_state={seed!r})",
        "moons": f"make_moons(n_samples={n!r}, noise={noise!r}, random_state={seed!r})",
        "blobs": f"make_blobs(n_samples={n!r}, centers={params['centers']!r}, cluster_std={max(0.1, noise * 5.0)!r}, "
                 f"random_state={seed!r})",
        "classification": f"make_classification(n_samples={n!r}, n_features=2, n_informative=2, n_redundant=0, "
                          f"n_clusters_per_class=1, flip_y={noise!r}, random_state={seed!r})",
    }[kind]
    if kind == "classification" and noise > 1:
        raise ValueError("noise above 1")   # the engine's message says so
    points, classes = code.name("points"), code.name("classes")
    code.line(f"{points}, {classes} = datasets.{made}")
    return {"tensor": code.value(f"torch.from_numpy({points}).float()", "table"),
            "labels": code.value(f"[str(int(v)) for v in {classes}]", "labels"),
            "columns": code.value("['x0', 'x1']", "columns")}


def train_test_split(cls, code, params, features, labels):
    train, test = code.name("train_rows"), code.name("test_rows")
    stratify = f"[str(v) for v in {labels}]" if params["stratify"] else "None"
    code.line(f"{train}, {test} = model_selection.train_test_split(np.arange(len({labels})), "
              f"test_size={params['test_size']!r}, random_state={random_state(params['seed'])!r}, stratify={stratify})")
    return {"x_train": code.value(f"{features}[torch.from_numpy({train})].float()", "x_train"),
            "y_train": code.value(f"[{labels}[i] for i in {train}]", "y_train"),
            "x_test": code.value(f"{features}[torch.from_numpy({test})].float()", "x_test"),
            "y_test": code.value(f"[{labels}[i] for i in {test}]", "y_test")}


def normalize(cls, code, params, tensor):
    x, axis = code.value(f"{tensor}.float()", "table"), params["axis"]
    if params["mode"] == "zscore":
        centre = code.value(f"{x}.mean(dim={axis!r}, keepdim=True)", "mean")
        spread = code.value(f"{x}.std(dim={axis!r}, correction=0, keepdim=True)", "std")
        stats = f"{{'mean': {centre}, 'std': {spread}}}"
    elif params["mode"] == "minmax":
        low = code.value(f"{x}.amin(dim={axis!r}, keepdim=True)", "low")
        high = code.value(f"{x}.amax(dim={axis!r}, keepdim=True)", "high")
        centre, spread = low, code.value(f"{high} - {low}", "spread")
        stats = f"{{'min': {low}, 'max': {high}}}"
    else:
        centre, spread = "0", code.value(f"{x}.norm(dim={axis!r}, keepdim=True)", "norm")
        stats = f"{{'norm': {spread}}}"
    shifted = f"({x} - {centre})" if centre != "0" else x
    out = code.value(f"{shifted} / torch.where({spread} == 0, torch.ones_like({spread}), {spread})", "normalised")
    listed = code.value(f"[{{'name': k, 'values': v.reshape(-1).tolist()}} for k, v in {stats}.items()]", "stats")
    return {"tensor": out, "stats": listed}


def _fit(code, estimator: str, x_train, y_train, x_query, hint: str) -> str:
    """The estimator fitted to the training rows (float64, labels as text); its name."""
    model = code.value(estimator, hint)
    code.line(f"{model}.fit({x_train}.double().numpy(), [str(v) for v in {y_train}])")
    return model


def _predictions(code, model: str, x_query: str) -> str:
    return code.value(f"[str(v) for v in {model}.predict({x_query}.double().numpy())]", "predictions")


def _probabilities(code, model: str, x_query: str) -> str:
    return code.value(f"torch.as_tensor({model}.predict_proba({x_query}.double().numpy()).astype(np.float32))",
                      "probabilities")


def _classes(code, model: str) -> str:
    return code.value(f"[str(c) for c in {model}.classes_]", "classes")


def knn(cls, code, params, x_train, y_train, x_query):
    k = f"min({params['n_neighbors']!r}, len({y_train}))"
    model = _fit(code, f"neighbors.KNeighborsClassifier(n_neighbors={k}, weights={params['weights']!r}, "
                       f"metric={params['metric']!r})", x_train, y_train, x_query, "knn_model")
    return {"predictions": _predictions(code, model, x_query), "probabilities": _probabilities(code, model, x_query),
            "classes": _classes(code, model)}


def logistic_regression(cls, code, params, x_train, y_train, x_query):
    c, steps, penalty = params["C"], params["max_iter"], params["penalty"]
    if not c > 0:
        raise ValueError("C")
    made = (f"linear_model.LogisticRegression(C={c!r}, l1_ratio=1.0, solver='saga', max_iter={steps!r}, random_state=0)"
            if penalty == "l1" else
            f"linear_model.LogisticRegression(C={'math.inf' if penalty == 'none' else repr(c)}, l1_ratio=0.0, "
            f"max_iter={steps!r})")
    model = _fit(code, made, x_train, y_train, x_query, "logistic_model")
    return {"predictions": _predictions(code, model, x_query), "probabilities": _probabilities(code, model, x_query),
            "classes": _classes(code, model),
            "coef": code.value(f"torch.as_tensor({model}.coef_.astype(np.float32))", "coef")}


def decision_tree(cls, code, params, x_train, y_train, x_query):
    model = _fit(code, f"tree.DecisionTreeClassifier(max_depth={params['max_depth'] or None!r}, "
                       f"criterion={params['criterion']!r}, random_state={random_state(params['random_state'])!r})",
                 x_train, y_train, x_query, "tree_model")
    return {"predictions": _predictions(code, model, x_query), "classes": _classes(code, model),
            "feature_importances": code.value(f"torch.as_tensor({model}.feature_importances_, dtype=torch.float32)",
                                              "feature_importances"),
            "tree_text": code.value(f"tree.export_text({model})", "tree_text")}


def random_forest(cls, code, params, x_train, y_train, x_query):
    model = _fit(code, f"ensemble.RandomForestClassifier(n_estimators={params['n_estimators']!r}, "
                       f"max_depth={params['max_depth'] or None!r}, random_state={random_state(params['seed'])!r})",
                 x_train, y_train, x_query, "forest_model")
    return {"predictions": _predictions(code, model, x_query), "probabilities": _probabilities(code, model, x_query),
            "classes": _classes(code, model)}


def svm(cls, code, params, x_train, y_train, x_query):
    gamma = str(params["gamma"]).strip()
    gamma_value = gamma if gamma in ("scale", "auto") else float(gamma)   # a bad one: ValueError, the engine says so
    if not params["C"] > 0 or (isinstance(gamma_value, float) and not gamma_value > 0):
        raise ValueError("C or gamma")
    model = _fit(code, f"svm.SVC(C={params['C']!r}, kernel={params['kernel']!r}, gamma={gamma_value!r})",
                 x_train, y_train, x_query, "svm_model")
    return {"predictions": _predictions(code, model, x_query), "classes": _classes(code, model),
            "support_vectors": code.value(f"torch.as_tensor({model}.support_vectors_.astype(np.float32))",
                                          "support_vectors")}


def mlp(cls, code, params, x_train, y_train, x_query):
    sizes = classical.MLPClassifier.hidden_sizes(params["hidden_sizes"])
    model = _fit(code, f"neural_network.MLPClassifier(hidden_layer_sizes={sizes!r}, activation={params['activation']!r}, "
                       f"solver='adam', learning_rate_init={params['learning_rate_init']!r}, "
                       f"max_iter={params['max_iter']!r}, random_state={random_state(params['seed'])!r})",
                 x_train, y_train, x_query, "mlp_model")
    return {"predictions": _predictions(code, model, x_query), "probabilities": _probabilities(code, model, x_query),
            "classes": _classes(code, model), "train_loss": code.value(f"float({model}.loss_)", "train_loss")}


def linear_regression(cls, code, params, x_train, y_train, x_query):
    targets = code.value(f"{y_train}.float().reshape(len({y_train}), -1).double().numpy()", "targets")
    model = code.value(f"linear_model.LinearRegression(fit_intercept={params['fit_intercept']!r})", "line_model")
    code.line(f"{model}.fit({x_train}.double().numpy(), {targets} if {y_train}.dim() == 2 else {targets}[:, 0])")
    intercept = code.value(f"np.asarray({model}.intercept_, dtype=np.float32)", "intercept")
    return {"predictions": code.value(f"torch.as_tensor(np.asarray({model}.predict({x_query}.double().numpy()), "
                                      "dtype=np.float32))", "predictions"),
            "coef": code.value(f"torch.as_tensor(np.asarray({model}.coef_, dtype=np.float32))", "coef"),
            "intercept": code.value(f"float({intercept}) if {intercept}.ndim == 0 else torch.as_tensor({intercept})",
                                    "intercept")}


def accuracy(cls, code, params, predictions, labels):
    correct, total = code.name("correct_count"), code.name("label_count")
    code.line(f"{correct} = sum(str(p) == str(t) for p, t in zip({predictions}, {labels}))")
    code.line(f"{total} = len({labels})")
    return {"accuracy": code.value(f"{correct} / {total} if {total} else 0.0", "accuracy"),
            "correct": correct, "total": total}


for _node, _code in ((tables.SyntheticDataset, synthetic_dataset), (tables.TrainTestSplit, train_test_split),
                     (tables.Normalize, normalize), (classical.KNN, knn),
                     (classical.LinearRegression, linear_regression), (classical.LogisticRegression, logistic_regression),
                     (classical.DecisionTreeClassifier, decision_tree),
                     (classical.RandomForestClassifier, random_forest), (classical.SVMClassifier, svm),
                     (classical.MLPClassifier, mlp), (classical.Accuracy, accuracy)):
    _node.to_python = classmethod(_code)
