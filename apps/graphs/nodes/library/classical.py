"""Classical machine learning on tables: the scikit-learn models that learn from a table
[rows, features] (KNN, LinearRegression, LogisticRegression, DecisionTreeClassifier,
RandomForestClassifier, SVMClassifier, MLPClassifier) with Accuracy to score them. The Data
nodes that make, read, split, scale and pick parts of a table are tables.py's.

A table is a float32 tensor [rows, features]; labels travel as a LIST of strings, one a row.
None of the work here is a torch op the element limit sees, so every size is checked before
the work starts: the rows × features a fit takes (``FIT_CELLS``), and the work of the slow
fits (a forest's trees, a network's passes, a support vector machine's rows). Each classifier
also hands on its fitted estimator as a MODEL (``_estimators.FittedEstimator``), so
DecisionBoundary can draw it.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..base import NodeError, Param, Port, register
from ._estimators import FittedEstimator
from ._helpers import LibraryNode, class_labels, random_state, shape_str, training_data

CLASSICAL = "Classical"

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
