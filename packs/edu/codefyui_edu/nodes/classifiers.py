"""scikit-learn classifiers behind one node each, so a lesson swaps the model and keeps the
rest of the graph."""
from __future__ import annotations

import numpy as np
import torch

from apps.graphs.nodes.base import Param, Port
from apps.graphs.nodes.library._helpers import LibraryNode, class_labels, training_data

from .models import FittedEstimator

TRAINING_INPUTS = (
    Port("x_train", description="Training features [N, F]"),
    Port("y_train", "LIST", description="One label per training row"),
    Port("x_query", description="Features [M, F] to classify"),
)


def prepared(node: str, x_train, y_train, x_query):
    """(training rows, labels, query rows) as scikit-learn takes them, and the sorted classes."""
    labels = class_labels(y_train, "y_train", node)
    x_train, x_query = training_data(node, x_train, x_query, len(labels))
    return x_train.cpu().numpy(), labels, x_query.cpu().numpy(), sorted(set(labels))


class Classifier(LibraryNode):
    type = "edu:Classifier"
    category = "EDU"
    description = "One classifier with a switch: k-nearest neighbours, linear or logistic regression."
    details = (
        "Give it training rows with their labels and some query rows; it learns from the "
        "first and labels the second. 'kind' picks the method while the rest of the graph "
        "stays the same: 'knn' lets the 'n_neighbors' closest training rows vote, 'linear' "
        "fits a straight-line regression to each class (1 for rows of that class, 0 for the "
        "others) and picks the class scoring highest, 'logistic' fits logistic regression. "
        "x_train [N, F] with N labels and x_query [M, F] give M 'predictions', "
        "'probabilities' [M, classes] (the linear kind's raw scores need not lie in 0…1), the "
        "sorted 'classes', and the fitted 'model' for drawing a decision boundary. Computed "
        "with scikit-learn."
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("probabilities"), Port("classes", "LIST"),
               Port("model", "MODEL"))
    params = (
        Param("kind", "select", "knn", "Which classifier", options=("knn", "linear", "logistic")),
        Param("n_neighbors", "int", 5, "How many neighbours vote (knn)", min=1),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.linear_model import LinearRegression, LogisticRegression
        from sklearn.neighbors import KNeighborsClassifier

        rows, labels, queries, classes = prepared("Classifier", x_train, y_train, x_query)
        kind = params["kind"]
        if kind == "linear":
            targets = np.eye(len(classes), dtype=np.float32)[[classes.index(v) for v in labels]]
            model = FittedEstimator(LinearRegression().fit(rows, targets), classes, one_hot=True)
        else:
            estimator = (KNeighborsClassifier(n_neighbors=min(params["n_neighbors"], len(labels)))
                         if kind == "knn" else LogisticRegression(max_iter=1000))
            model = FittedEstimator(estimator.fit(rows, labels), classes)
        probabilities = torch.as_tensor(model.scores(queries), dtype=torch.float32)
        return {"predictions": model.predict(queries), "probabilities": probabilities,
                "classes": classes, "model": model}


class AdvancedClassifier(LibraryNode):
    type = "edu:AdvancedClassifier"
    category = "EDU"
    description = "One classifier with a switch: a support vector machine, a decision tree or a random forest."
    details = (
        "The same inputs and outputs as Classifier, with stronger methods. 'SVM' draws the "
        "widest possible border between the classes; its 'kernel' lets the border bend (rbf "
        "can separate a ring from its centre, linear only draws straight lines, poly draws "
        "curves). 'Decision Tree' asks yes/no questions about the features ('max_depth' "
        "questions deep at most, 0 = no limit: a deep tree may learn the training rows by "
        "heart). 'Random Forest' lets 'n_estimators' trees vote. Trees and forests are "
        "seeded, so every run gives the same model. Computed with scikit-learn; the SVM's "
        "'model' also carries its support vectors."
    )
    inputs = TRAINING_INPUTS
    outputs = (Port("predictions", "LIST"), Port("classes", "LIST"), Port("model", "MODEL"))
    params = (
        Param("kind", "select", "SVM", "Which classifier",
              options=("SVM", "Decision Tree", "Random Forest")),
        Param("kernel", "select", "rbf", "How the SVM's border may bend (SVM)",
              options=("rbf", "linear", "poly")),
        Param("max_depth", "int", 0, "Deepest question of the tree; 0 = no limit (Decision Tree)",
              min=0),
        Param("n_estimators", "int", 50, "Trees in the forest (Random Forest)", min=1, max=1000),
    )

    def run(self, ctx, params, x_train, y_train, x_query):
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.svm import SVC
        from sklearn.tree import DecisionTreeClassifier

        rows, labels, queries, classes = prepared("AdvancedClassifier", x_train, y_train, x_query)
        kind = params["kind"]
        if kind == "SVM":
            estimator = SVC(kernel=params["kernel"])
        elif kind == "Decision Tree":
            estimator = DecisionTreeClassifier(max_depth=params["max_depth"] or None, random_state=0)
        else:
            estimator = RandomForestClassifier(n_estimators=params["n_estimators"], random_state=0)
        model = FittedEstimator(estimator.fit(rows, labels), classes)
        return {"predictions": model.predict(queries), "classes": classes, "model": model}
