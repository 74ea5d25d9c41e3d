"""The graph as PyTorch (engine/to_python.py): every shipped lesson's script, run in a fresh
process, prints the numbers the server's run computes, or says at its top that it cannot."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from apps.graphs import document, layers
from apps.graphs.nodes.python import Names, identifier, literal
from apps.runs import as_python, service
from apps.runs.engine import events as ev
from tests.conftest import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
EXPLAINED = re.compile(r"\((grad_fn=<\w+>|requires_grad=True): ")   # Print's words for a student
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d*)?(?:e[-+]?\d+)?")
TOLERANCE = 1e-6
PRECISION = 10   # digits both sides print a tensor with, so 1e-6 can be checked
# One torch thread on both sides (the sums of a convolution come out in one order), CUDA out of sight.
RUNNER = ("import runpy, sys, torch; torch.set_num_threads(1); torch.set_printoptions(precision=%d); "
          "runpy.run_path(sys.argv[1], run_name='__main__')" % PRECISION)
# Lessons that train for a while: each runs twice (the server's engine, then the script).
SLOW = {"train-digits", "lr-too-high", "diffusion-tiny-train", "rl-cartpole"}


def lesson(path: Path) -> dict:
    return document.load(path.read_text())


def run_on_server(doc: dict) -> tuple:
    """The server's engine on the document, as a run of it computes: its outcome and each node's log lines."""
    logs: dict[str, list[str]] = {}

    def emit(event):
        if event.kind == ev.LOG and event.node_id:
            logs.setdefault(event.node_id, []).append(event.text)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.set_printoptions(precision=PRECISION)
    try:
        outcome = service.run_now(doc, service.run_options(doc), emit)
    finally:
        torch.set_printoptions(profile="default")
        torch.set_num_threads(threads)
    assert outcome.status == "succeeded", outcome.error
    return outcome, logs


def transcript(doc: dict, made, outcome, logs) -> list[str]:
    """What the script should print, in the order it runs the nodes: the values the server's Prints
    received, each epoch's losses, each evaluation, and the log of every node the engine runs for
    it (less the words the product adds for a student, such as what a grad_fn is)."""
    lines = []
    torch.set_printoptions(precision=PRECISION)
    for node_id, node in service.plan(doc).nodes.items():
        out = outcome.outputs.get(node_id, {})
        if node_id in made.engine_nodes:
            lines += logs.get(node_id, [])
        elif node.type == "Print":   # the value the server's Print received, whole (its log cuts a long one)
            label = node.params["label"]
            lines.append(f"[{label}] {out['value']}" if label else str(out["value"]))
        elif node.type == "TrainingLoop":
            val = out["val_losses"].tolist()
            for epoch, loss in enumerate(out["losses"].tolist(), start=1):
                lines.append(f"epoch {epoch}: loss {loss}" + (f", validation loss {val[epoch - 1]}" if val else ""))
        elif node.type == "EvaluateModel":
            lines.append(f"accuracy {out['accuracy']} ({out['correct']} of {out['total']} right)")
    torch.set_printoptions(profile="default")
    return [line for text in lines for line in text.splitlines() if not EXPLAINED.match(line)]


def run_script(text: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "lesson.py"
    path.write_text(text)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [str(ROOT / "packs" / p) for p in ("foundations", "deep", "edu", "rl")])}
    done = subprocess.run([sys.executable, "-c", RUNNER, str(path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def same_numbers(got: list[str], expected: list[str]) -> None:
    """Every number printed, in order, within TOLERANCE (Print's layout is the product's; the numbers must agree)."""
    mine, theirs = NUMBER.findall("\n".join(got)), NUMBER.findall("\n".join(expected))
    shown = "\n".join(got + ["-- expected --"] + expected)
    assert len(mine) == len(theirs), shown
    wrong = [(k, a, b) for k, (a, b) in enumerate(zip(mine, theirs)) if abs(float(a) - float(b)) > TOLERANCE]
    assert not wrong, f"{len(wrong)} numbers differ, first: {wrong[:5]}\n{shown[:4000]}"


LESSONS = [pytest.param(p, id=p.stem, marks=[pytest.mark.timeout(900)] if p.stem in SLOW else [])
           for p in sorted(EXAMPLES.glob("*.json"))]


@pytest.mark.django_db
@pytest.mark.parametrize("path", LESSONS)
def test_a_lessons_script_prints_the_numbers_its_run_computes(path, tmp_path):
    doc = lesson(path)
    made = as_python.python_script(doc)
    if not made.exact:   # it says so at its top, and why
        assert "# NOT THE SAME NUMBERS as CodefyUI's run, because:" in made.text.splitlines()[:6]
        return
    outcome, logs = run_on_server(doc)
    same_numbers(run_script(made.text, tmp_path), transcript(doc, made, outcome, logs))


@pytest.mark.parametrize("name", ["walkthrough", "mlp", "cnn", "train-digits"])
def test_the_core_lessons_are_plain_pytorch_and_exact(name):
    made = as_python.python_script(lesson(EXAMPLES / f"{name}.json"), switches=False)
    assert (made.plain, made.exact, made.engine_nodes) == (made.total, True, [])
    assert "run_node" not in made.text


def test_each_node_has_a_block_named_after_it():
    text = as_python.python_script(lesson(EXAMPLES / "walkthrough.json"), switches=False).text
    assert "# Softmax (softmax): dim=-1\nsoftmax = torch.softmax(reshaped, dim=-1)" in text
    assert "print('[probabilities]', softmax)" in text


def test_names_labels_and_strings_never_become_code():
    doc = lesson(EXAMPLES / "walkthrough.json")
    evil = "x')\nimport os; os.system('echo owned')  # \u2028\r"
    doc["name"] = evil
    for node in doc["nodes"]:
        node.setdefault("data", {})["label"] = evil
        if node["type"] == "Print":
            node["data"]["params"]["label"] = evil
    text = as_python.python_script(document.normalise(doc), switches=False).text
    compile(text, "lesson.py", "exec")
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any(line.startswith("import os") for line in code)
    assert f"print({literal('[' + evil + ']')}, softmax)" in text


def test_a_node_without_a_translation_is_one_call_into_the_engine():
    made = as_python.python_script(lesson(EXAMPLES / "attention.json"), switches=False)
    assert made.engine_nodes and made.plain < made.total
    assert "No plain PyTorch for this node: CodefyUI's engine runs it." in made.text
    assert "from apps.runs.engine.to_python import run_node" in made.text


def test_a_run_without_a_seed_says_its_numbers_differ():
    doc = lesson(EXAMPLES / "mlp.json")
    doc["settings"]["seed"] = None
    made = as_python.python_script(doc, switches=False)
    assert not made.exact and "no Random seed" in made.text


@pytest.mark.parametrize("change, words", [
    (lambda doc: doc.update(edges=[e for e in doc["edges"] if e.get("type") != "trigger"]), "No entry points"),
    (lambda doc: next(n for n in doc["nodes"] if n["type"] == "Softmax")["data"]["params"].update(dim="two"),
     "'dim' must be a number"),
])
def test_bad_input_gets_the_run_message_and_no_script(change, words):
    doc = lesson(EXAMPLES / "walkthrough.json")
    change(doc)
    with pytest.raises(service.RunRefused) as refused:
        as_python.python_script(document.normalise(doc), switches=False)
    assert words in str(refused.value)
    with pytest.raises(service.RunRefused) as run:
        service.plan(document.normalise(doc))
    assert run.value.problems == refused.value.problems


def test_variable_names_are_made_not_taken():
    names = Names({"torch"})
    assert [names.fresh("Softmax"), names.fresh("Softmax"), names.fresh("edu:KNN"), names.fresh("class")] == \
        ["softmax", "softmax_2", "knn", "class_"]
    assert identifier("x; import os") == "x_import_os"


def small_training(schedule: str, clip: float, patience: int = 0) -> dict:
    """The digit lesson, shortened: a one-layer model, two epochs, a learning-rate schedule and clipping."""
    doc = lesson(EXAMPLES / "train-digits.json")
    doc["nodes"].append({"id": "schedule", "type": "LRScheduler", "position": {"x": 0, "y": 400},
                         "data": {"params": {"type": schedule, "step_size": 1, "gamma": 0.5}}})
    doc["edges"] += [{"id": "e-opt-schedule", "source": "optimizer", "sourceHandle": "optimizer",
                      "target": "schedule", "targetHandle": "optimizer"},
                     {"id": "e-schedule-train", "source": "schedule", "sourceHandle": "scheduler",
                      "target": "train", "targetHandle": "lr_scheduler"}]
    for node in doc["nodes"]:
        if node["id"] == "model":
            node["data"]["params"]["layers"] = layers.dumps(layers.chain_of([
                ("f", "Flatten", {}), ("l", "Linear", {"in_features": 64, "out_features": 10})]))
        if node["id"] == "train":
            node["data"]["params"].update(epochs=2 + 2 * patience, grad_clip_norm=clip, early_stopping_patience=patience)
    return document.normalise(doc)


@pytest.mark.django_db
@pytest.mark.parametrize("schedule, clip, patience", [("StepLR", 1.0, 0), ("ReduceLROnPlateau", 0.0, 1)])
def test_a_schedule_clipping_and_early_stopping_train_to_the_same_losses(schedule, clip, patience, tmp_path):
    doc = small_training(schedule, clip, patience)
    made = as_python.python_script(doc)
    assert (made.exact, made.plain, made.total) == (True, made.total, 10), made.text
    assert "torch.optim.lr_scheduler." + schedule in made.text
    outcome, logs = run_on_server(doc)
    same_numbers(run_script(made.text, tmp_path), transcript(doc, made, outcome, logs))
    assert outcome.outputs["evaluate"]["accuracy"] > 0.5


@pytest.mark.parametrize("node_id, change", [
    ("train", {"precision": "bf16"}), ("train", {"accumulate_steps": 4}), ("train_data", {"name": "MNIST"})])
def test_settings_a_translation_does_not_cover_leave_that_node_to_the_engine(node_id, change):
    doc = lesson(EXAMPLES / "train-digits.json")
    next(n for n in doc["nodes"] if n["id"] == node_id)["data"]["params"].update(change)
    made = as_python.python_script(document.normalise(doc), switches=False)
    assert made.engine_nodes == [node_id] and made.plain == made.total - 1
    assert made.exact   # the engine's own node, seeded as the run seeds it


@pytest.mark.django_db
@pytest.mark.parametrize("name, split", [("Iris", "test"), ("Wine", "train"), ("Digits", "test")])
def test_a_bundled_datasets_examples_are_the_same(name, split, tmp_path):
    node = lambda i, t, **p: {"id": i, "type": t, "position": {"x": 0, "y": 0}, "data": {"params": p}}
    edge = lambda s, sh, t, th: {"id": f"{s}-{t}-{th}", "source": s, "sourceHandle": sh, "target": t, "targetHandle": th}
    doc = document.normalise({"name": name, "settings": {"seed": 3}, "nodes": [
        node("start", "Start"), node("data", "Dataset", name=name, split=split),
        node("batch", "DatasetBatch", batch_size=3, start_index=5), node("x", "Print", label="examples"),
        node("y", "Print", label="labels")], "edges": [
        {**edge("start", "trigger", "data", ""), "type": "trigger"}, edge("data", "dataset", "batch", "dataset"),
        edge("batch", "images", "x", "value"), edge("batch", "labels", "y", "value")]})
    made = as_python.python_script(doc)
    assert (made.exact, made.plain, made.total) == (True, 4, 4), made.text
    outcome, logs = run_on_server(doc)
    same_numbers(run_script(made.text, tmp_path), transcript(doc, made, outcome, logs))


def every_translated_op() -> dict:
    """One graph through most translated nodes, each printed: the tensor, layer, activation and
    normalisation nodes the lessons do not all use."""
    nodes, edges = [], []

    def add(i, t, inputs=(), **p):
        nodes.append({"id": i, "type": t, "position": {"x": 0, "y": 0}, "data": {"params": p}})
        for port, (src, out) in dict(inputs).items():
            edges.append({"id": f"{src}-{i}-{port}", "source": src, "sourceHandle": out, "target": i, "targetHandle": port})
        if t != "Start" and not inputs:
            edges.append({"id": f"t-{i}", "type": "trigger", "source": "start", "sourceHandle": "trigger",
                          "target": i, "targetHandle": ""})
        if t not in ("Start", "Print"):
            first = next(iter(("tensor", "output", "hidden", "chunk_0")), "tensor")
            nodes.append({"id": f"p-{i}", "type": "Print", "position": {"x": 0, "y": 0}, "data": {"params": {"label": i}}})
            port = {"LSTM": "output", "GRU": "hidden", "Split": "chunk_1"}.get(t, first)
            edges.append({"id": f"{i}-p", "source": i, "sourceHandle": port, "target": f"p-{i}", "targetHandle": "value"})

    t = lambda i: {"tensor": (i, "tensor")}
    add("start", "Start")
    add("img", "TensorInput", shape="2,3,6,6", value_mode="random", seed=4)
    add("conv", "Conv2d", t("img"), in_channels=3, out_channels=4, kernel_size=3, stride=1, padding=1)
    add("bn", "BatchNorm2d", t("conv"), num_features=4)
    add("drop", "Dropout", t("bn"), p=0.3)
    add("gn", "GroupNorm", t("drop"), num_groups=2, num_channels=4)
    add("inorm", "InstanceNorm2d", t("gn"), num_features=4, affine=True)
    add("up", "ConvTranspose2d", t("inorm"), in_channels=4, out_channels=2, kernel_size=2, stride=2, padding=0)
    add("avg", "AvgPool2d", t("up"), kernel_size=2, stride=2, padding=1)
    add("pool", "MaxPool2d", t("avg"), kernel_size=2, stride=2)
    add("adapt", "AdaptiveAvgPool2d", t("up"), output_height=2, output_width=3)
    add("flat", "Flatten", t("adapt"), start_dim=1)
    add("act", "Activation", t("flat"), function="gelu")
    add("lin", "Linear", t("act"), in_features=12, out_features=8)
    add("ln", "LayerNorm", t("lin"), normalized_shape="8")
    add("bn1", "BatchNorm1d", t("ln"), num_features=8)
    add("split", "Split", t("bn1"), chunks=2, dim=1)
    add("stack", "Stack", {"tensor_a": ("split", "chunk_0"), "tensor_b": ("split", "chunk_1")}, dim=0)
    add("perm", "Permute", t("stack"), dims="1,0,2")
    add("sum", "Add", {"tensor_a": ("perm", "tensor"), "tensor_b": ("perm", "tensor")}, alpha=0.5)
    add("mul", "Multiply", {"tensor_a": ("sum", "tensor"), "tensor_b": ("sum", "tensor")})
    add("noise", "TensorCreate", shape="4,3", fill="randn")
    add("mm", "MatMul", {"tensor_a": ("mul", "tensor"), "tensor_b": ("noise", "tensor")})
    add("mean", "Mean", t("mm"), dim="0,2", keepdim=True)
    add("sq", "Squeeze", t("mean"), dim=-1)
    add("unsq", "Unsqueeze", t("sq"), dim=0)
    add("scale", "ScalarMultiply", t("unsq"), scalar=-2.5)
    add("cat", "Concat", {"tensor_a": ("scale", "tensor"), "tensor_b": ("scale", "tensor")}, dim=1)
    add("soft", "Softmax", t("cat"), dim=1)
    add("arg", "Argmax", t("soft"), dim=1, keepdim=False)
    add("ids", "TensorInput", shape="2,3", dtype="int64", value_mode="arange")
    add("emb", "Embedding", t("ids"), num_embeddings=6, embedding_dim=4, padding_idx=0)
    add("lstm", "LSTM", t("emb"), input_size=4, hidden_size=5, num_layers=2, batch_first=True, bidirectional=True)
    add("gru", "GRU", t("emb"), input_size=4, hidden_size=3)
    add("seq", "Reshape", t("emb"), shape="2,4,3")
    add("c1", "Conv1d", t("seq"), in_channels=4, out_channels=2, kernel_size=2, stride=1, padding=0)
    return document.normalise({"name": "Every op", "settings": {"seed": 11}, "nodes": nodes, "edges": edges})


@pytest.mark.django_db
def test_every_translated_op_gives_the_same_numbers(tmp_path):
    doc = every_translated_op()
    made = as_python.python_script(doc)
    assert (made.exact, made.engine_nodes) == (True, []), made.text
    outcome, logs = run_on_server(doc)
    same_numbers(run_script(made.text, tmp_path), transcript(doc, made, outcome, logs))


@pytest.mark.django_db
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_linear_regression_predicts_the_same_numbers(fit_intercept, tmp_path):
    """Issue 51 item 2: the classical category's LinearRegression as scikit-learn code."""
    node = lambda i, t, **p: {"id": i, "type": t, "position": {"x": 0, "y": 0}, "data": {"params": p}}
    edge = lambda s, sh, t, th: {"id": f"{s}-{t}-{th}", "source": s, "sourceHandle": sh, "target": t, "targetHandle": th}
    doc = document.normalise({"name": "line", "settings": {"seed": 5}, "nodes": [
        node("start", "Start"), node("x", "TensorInput", shape="8,2", value_mode="random", seed=1),
        node("y", "TensorInput", shape="8", value_mode="random", seed=2),
        node("q", "TensorInput", shape="3,2", value_mode="random", seed=3),
        node("fit", "LinearRegression", fit_intercept=fit_intercept),
        node("p", "Print", label="predictions"), node("c", "Print", label="coef"), node("i", "Print", label="intercept")],
        "edges": [*({**edge("start", "trigger", t, ""), "type": "trigger"} for t in "xyq"),
                  edge("x", "tensor", "fit", "x_train"), edge("y", "tensor", "fit", "y_train"),
                  edge("q", "tensor", "fit", "x_query"), edge("fit", "predictions", "p", "value"),
                  edge("fit", "coef", "c", "value"), edge("fit", "intercept", "i", "value")]})
    made = as_python.python_script(doc)
    assert (made.exact, made.engine_nodes) == (True, []), made.text
    assert "linear_model.LinearRegression(fit_intercept=" in made.text
    outcome, logs = run_on_server(doc)
    same_numbers(run_script(made.text, tmp_path), transcript(doc, made, outcome, logs))
