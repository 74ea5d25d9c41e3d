"""Capture gradients: the backward pass after the forward one, its target, and the gradients
kept for the Backward tab, checked against autograd run directly on the same weights."""
from __future__ import annotations

import math

import pytest
import torch

from apps.graphs import document
from apps.graphs import layers as layers_json
from apps.graphs.nodes import base
from apps.graphs.nodes.base import Node, Port
from apps.runs.engine import WEIGHTS, ExecutionCache, RunOptions, execute, plan_run
from apps.runs.engine import events as ev
from apps.runs.engine import gradients as gr


def chain(*specs, seed=7):
    """Start -> each (type, params) in turn, wired tensor -> tensor; node ids n0, n1, ..."""
    nodes = [{"id": "start", "type": "Start"}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "n0"}]
    for i, (kind, params) in enumerate(specs):
        nodes.append({"id": f"n{i}", "type": kind, "data": {"params": params}})
        if i:
            edges.append({"id": f"e{i}", "source": f"n{i-1}", "sourceHandle": "tensor",
                          "target": f"n{i}", "targetHandle": "tensor"})
    return document.normalise({"nodes": nodes, "edges": edges, "settings": {"seed": seed}})


def run(doc, store, **options):
    events = []
    options.setdefault("gradients", True)
    outcome = execute(plan_run(doc), RunOptions(run_id=options.pop("run_id", "g1"), seed=7, **options),
                      events.append, captures=store)
    assert outcome.status == "succeeded", outcome.error
    return outcome, events


def kept(store, node, port, run_id="g1"):
    capture = store.get(run_id, node, port)
    assert capture is not None, f"nothing kept for {node}.{port}"
    return capture.value


def logs(events):
    return [e.text for e in events if e.kind == ev.LOG]


INPUT = ("TensorInput", {"shape": "3,4", "value_mode": "random", "seed": 5})


def layers(scope):
    return {key[1]: module for key, module in WEIGHTS.entries(scope)}


def test_a_linear_chain_matches_autograd(fresh_store):
    """GR1, SP13: every output port's and every parameter's gradient is what autograd gives for
    sum() of the last output, computed directly on the same weights."""
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 5}), ("Activation", {"function": "tanh"}),
                ("Linear", {"in_features": 5, "out_features": 2}), ("BackwardOnce", {}))
    outcome, _ = run(doc, fresh_store, persist_weights=True, weights_scope="chain")
    fc1, fc2 = (layers("chain")[n] for n in ("n1", "n3"))
    x = outcome.outputs["n0"]["tensor"].detach().clone().requires_grad_(True)
    h1 = fc1(x)
    h1.retain_grad()
    a = torch.tanh(h1)
    a.retain_grad()
    fc1.zero_grad(), fc2.zero_grad()
    fc2(a).sum().backward()
    torch.testing.assert_close(kept(fresh_store, "n0", gr.output_port("tensor")), x.grad)
    torch.testing.assert_close(kept(fresh_store, "n1", gr.output_port("tensor")), h1.grad)
    torch.testing.assert_close(kept(fresh_store, "n2", gr.output_port("tensor")), a.grad)
    for node, layer in (("n1", fc1), ("n3", fc2)):
        for name, param in layer.named_parameters():
            torch.testing.assert_close(kept(fresh_store, node, gr.weight_port(name)), param.grad)
    assert kept(fresh_store, "n1", gr.INDEX) == {"outputs": ["tensor"], "weights": ["weight", "bias"]}


def test_weight_gradients_are_kept_without_persisted_weights(fresh_store):
    """GR1: each layer's gradient is kept whether or not Persist weights is on."""
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 2}), ("BackwardOnce", {}))
    run(doc, fresh_store)
    grad = kept(fresh_store, "n1", gr.weight_port("weight"))
    assert grad.shape == (2, 4) and grad.abs().sum() > 0


def test_a_conv2d_matches_autograd(fresh_store):
    """GR1: a Conv2d's weight, bias and input gradients match autograd's."""
    doc = chain(("TensorInput", {"shape": "1,2,5,5", "value_mode": "random", "seed": 3}),
                ("Conv2d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1}),
                ("BackwardOnce", {}))
    outcome, _ = run(doc, fresh_store, persist_weights=True, weights_scope="conv")
    conv = layers("conv")["n1"]
    x = outcome.outputs["n0"]["tensor"].detach().clone().requires_grad_(True)
    conv.zero_grad()
    conv(x).sum().backward()
    torch.testing.assert_close(kept(fresh_store, "n0", gr.output_port("tensor")), x.grad)
    torch.testing.assert_close(kept(fresh_store, "n1", gr.weight_port("weight")), conv.weight.grad)
    torch.testing.assert_close(kept(fresh_store, "n1", gr.weight_port("bias")), conv.bias.grad)


class _ApplyModel(Node):
    """A test node that applies a MODEL to a tensor (the Inference node's forward pass)."""

    type = "TestApplyModel"
    category = "Test"
    inputs = (Port("model", "MODEL"), Port("tensor"))
    outputs = (Port("tensor"),)

    def run(self, ctx, params, model, tensor):
        return {"tensor": model(tensor)}


@pytest.fixture
def apply_node(monkeypatch):
    monkeypatch.setitem(base.registry(), _ApplyModel.type, _ApplyModel)


def model_graph():
    spec = layers_json.dumps(layers_json.chain_of([
        ("l1", "Linear", {"in_features": 4, "out_features": 3}), ("s", "Sigmoid", {}),
        ("l2", "Linear", {"in_features": 3, "out_features": 2})]))
    doc = chain(INPUT, ("TestApplyModel", {}), ("BackwardOnce", {}))
    doc["nodes"].append({"id": "model", "type": "SequentialModel", "data": {"params": {"layers": spec}}})
    doc["edges"] += [{"id": "m", "source": "model", "sourceHandle": "model", "target": "n1", "targetHandle": "model"},
                     {"id": "tm", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "model"}]
    return document.normalise(doc)


def test_a_model_gets_one_weight_gradient_per_parameter_and_one_layer_row_per_layer(fresh_store, apply_node):
    """GR1, GR2: a SequentialModel's parameters each have their gradient, as autograd computes
    them, kept under the node that built the model; the per-layer summary has a row for each
    of its layers that holds weights."""
    outcome, _ = run(model_graph(), fresh_store, persist_weights=True, weights_scope="model")
    model = layers("model")["model"]
    x = outcome.outputs["n0"]["tensor"].detach()
    model.zero_grad()
    model(x).sum().backward()
    index = kept(fresh_store, "model", gr.INDEX)
    assert index == {"outputs": [], "weights": ["layers.l1.weight", "layers.l1.bias", "layers.l2.weight", "layers.l2.bias"]}
    for name, param in model.named_parameters():
        torch.testing.assert_close(kept(fresh_store, "model", gr.weight_port(name)), param.grad)
    rows = kept(fresh_store, gr.RUN, gr.LAYERS)
    assert [r["name"] for r in rows] == ["SequentialModel › layers.l1 (Linear)", "SequentialModel › layers.l2 (Linear)"]
    l1 = model.layers.l1
    assert gr.layer_stats(rows[0], lambda node, port: kept(fresh_store, node, port)).norm == pytest.approx(math.sqrt(l1.weight.grad.square().sum() + l1.bias.grad.square().sum()),
                                                  rel=1e-5)


# -- the target ------------------------------------------------------------------------------

def test_the_first_backward_once_is_the_target_and_runs_backward_once(fresh_store):
    """SP13: the engine runs one backward pass from the first BackwardOnce, named in the run log;
    BackwardOnce does not run its own (gradients are not doubled)."""
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 2}), ("BackwardOnce", {}), ("BackwardOnce", {}))
    _, events = run(doc, fresh_store)
    assert not any(t.startswith("BackwardOnce:") for t in logs(events))
    assert "Capture gradients: backward pass from sum() of BackwardOnce's tensor [3, 2]" in logs(events)
    # d sum(x W^T + b) / d b is the batch size, once
    assert torch.equal(kept(fresh_store, "n1", gr.weight_port("bias")), torch.full((2,), 3.0))


def test_backward_once_runs_its_own_backward_without_capture_gradients(fresh_store):
    """Without Capture gradients BackwardOnce runs the backward pass itself, as it says."""
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 2}), ("BackwardOnce", {}))
    _, events = run(doc, fresh_store, gradients=False)
    assert "BackwardOnce: gradients computed from sum() of [3, 2]" in logs(events)
    assert fresh_store.get("g1", gr.RUN, gr.TARGET) is None


class _FakeTrainingLoop(Node):
    """Stands in for TrainingLoop: one training step that leaves its gradients on the weights."""

    type = gr.TRAINING_LOOP
    category = "Test"
    inputs = (Port("tensor"),)
    outputs = (Port("losses", "LIST"),)
    cacheable = False

    def run(self, ctx, params, tensor):
        def build():
            torch.manual_seed(3)
            return torch.nn.Linear(4, 1)
        model = ctx.module(build)
        loss = model(tensor.detach()).square().mean()
        loss.backward()
        self.expected = model.weight.grad.clone()
        return {"losses": [loss.item()]}


def test_after_a_training_loop_no_extra_backward_runs(fresh_store, monkeypatch):
    """SP13: after a TrainingLoop the weights' gradients are its last batch's; no extra backward."""
    monkeypatch.setitem(base.registry(), gr.TRAINING_LOOP, _FakeTrainingLoop)
    seen = []
    monkeypatch.setattr(_FakeTrainingLoop, "run", _remember(_FakeTrainingLoop.run, seen))
    doc = chain(INPUT, (gr.TRAINING_LOOP, {}))
    _, events = run(doc, fresh_store, auto_loss=True)
    assert any("no extra backward pass after TrainingLoop" in t for t in logs(events))
    torch.testing.assert_close(kept(fresh_store, "n1", gr.weight_port("weight")), seen[0].expected)
    assert kept(fresh_store, gr.RUN, gr.TARGET)["ran"] is False


def test_a_backward_once_comes_before_a_training_loop(fresh_store, monkeypatch):
    """SP13: the target order: the first BackwardOnce, before a TrainingLoop's gradients."""
    monkeypatch.setitem(base.registry(), gr.TRAINING_LOOP, _FakeTrainingLoop)
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 4}), ("BackwardOnce", {}), (gr.TRAINING_LOOP, {}))
    _, events = run(doc, fresh_store)
    assert "Capture gradients: backward pass from sum() of BackwardOnce's tensor [3, 4]" in logs(events)
    assert kept(fresh_store, gr.RUN, gr.TARGET)["ran"] is True


def _remember(run_method, seen):
    def wrapped(self, ctx, params, **inputs):
        seen.append(self)
        return run_method(self, ctx, params, **inputs)
    return wrapped


def test_auto_synthesize_loss_picks_the_largest_output_that_tracks_gradients(fresh_store):
    """SP14: with no BackwardOnce or TrainingLoop, Auto-synthesize loss differentiates sum() of the
    largest output that tracks gradients (the first of equals), and the run log names it."""
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 6}), ("Linear", {"in_features": 6, "out_features": 2}))
    _, events = run(doc, fresh_store, auto_loss=True)
    assert any("synthesised loss, sum() of Linear.tensor [3, 6]" in t for t in logs(events))
    assert torch.equal(kept(fresh_store, "n1", gr.output_port("tensor")), torch.ones(3, 6))
    assert torch.equal(kept(fresh_store, "n1", gr.weight_port("bias")), torch.full((6,), 3.0))
    assert kept(fresh_store, "n2", gr.output_port("tensor")) is None  # after the loss: no gradient
    assert kept(fresh_store, "n2", gr.weight_port("weight")) is None


def test_without_a_target_no_backward_runs_and_the_reason_is_kept(fresh_store):
    """SP14: no BackwardOnce, no TrainingLoop and Auto-synthesize loss off: no backward pass,
    and the run log and the Backward tab's capture say why."""
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 2}))
    _, events = run(doc, fresh_store)
    target = kept(fresh_store, gr.RUN, gr.TARGET)
    assert target["ran"] is False and target["shown"] is False
    assert "turn on Auto-synthesize loss" in target["text"] and target["text"] in logs(events)
    assert fresh_store.get("g1", "n1", gr.INDEX) is None


def test_a_backward_once_on_whole_numbers_runs_no_backward(fresh_store):
    doc = chain(("TensorInput", {"shape": "2,2", "dtype": "int64", "value_mode": "ones"}), ("BackwardOnce", {}))
    run(doc, fresh_store)
    assert "does not track gradients" in kept(fresh_store, gr.RUN, gr.TARGET)["text"]


def test_a_failing_backward_is_logged_and_the_run_still_succeeds(fresh_store, monkeypatch):
    """§12: a failing backward is logged; the run still succeeds."""
    def fail(self, target, keep=None):
        raise RuntimeError("element 0 of tensors does not require grad")
    monkeypatch.setattr(gr.GradientCapture, "backward", fail)
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 2}), ("BackwardOnce", {}))
    outcome, events = run(doc, fresh_store)
    assert outcome.status == "succeeded"
    assert "Capture gradients: the backward pass failed: RuntimeError: element 0 of tensors does not require grad" in logs(events)
    assert kept(fresh_store, gr.RUN, gr.TARGET)["shown"] is False


def test_nothing_is_served_from_cache_with_capture_gradients(fresh_store):
    """SP13: with Capture gradients on, every node re-executes, cached entries or not."""
    doc = chain(("TensorInput", {"shape": "2,2", "value_mode": "ones"}), ("Softmax", {}), ("BackwardOnce", {}))
    cache = ExecutionCache()
    first = execute(plan_run(doc), RunOptions(run_id="warm"), lambda e: None, cache=cache)
    assert first.status == "succeeded"
    outcome = execute(plan_run(doc), RunOptions(run_id="g1", gradients=True), lambda e: None,
                      captures=fresh_store, cache=cache)
    assert {r.status for r in outcome.nodes.values()} == {"completed"}
    assert kept(fresh_store, "n0", gr.output_port("tensor")).shape == (2, 2)


def test_kept_layers_start_each_run_without_the_last_runs_gradients(fresh_store):
    """§12 step 1: persisted layers' gradients are cleared first, so runs do not add up."""
    doc = chain(INPUT, ("Linear", {"in_features": 4, "out_features": 2}), ("BackwardOnce", {}))
    run(doc, fresh_store, persist_weights=True, weights_scope="again", run_id="a")
    run(doc, fresh_store, persist_weights=True, weights_scope="again", run_id="b")
    assert torch.equal(kept(fresh_store, "n1", gr.weight_port("bias"), "b"), torch.full((2,), 3.0))
    assert torch.equal(kept(fresh_store, "n1", gr.weight_port("bias"), "a"), torch.full((2,), 3.0))


# -- verdicts --------------------------------------------------------------------------------

def stats(norm=1.0, mean=1e-3, largest=1.0):
    return gr.GradStats(norm, mean, largest)


@pytest.mark.parametrize("figures, verdict", [
    (dict(norm=0.99e-7), gr.VANISHING), (dict(norm=1.01e-7), gr.HEALTHY),
    (dict(mean=0.99e-8), gr.VANISHING), (dict(mean=1.01e-8), gr.HEALTHY),
    (dict(norm=1.01e3), gr.EXPLODING), (dict(norm=0.99e3), gr.HEALTHY),
    (dict(largest=1.01e2), gr.EXPLODING), (dict(largest=0.99e2), gr.HEALTHY),
    (dict(norm=float("nan")), gr.EXPLODING),
])
def test_each_verdict_at_its_threshold(figures, verdict):
    """GR3: vanishing when ‖g‖ < 1e-7 or mean |g| < 1e-8; exploding when ‖g‖ > 1e3 or max |g| > 1e2;
    healthy otherwise (just below and just above each threshold)."""
    assert stats(**figures).verdict == verdict


def test_grad_stats_of_several_tensors_are_those_of_all_their_entries():
    """GR3: ‖g‖, mean |g| and max |g| over a layer's parameters together."""
    s = gr.GradStats.of([torch.tensor([3.0, -4.0]), torch.tensor([0.0])])
    assert (s.norm, s.mean, s.max) == (5.0, pytest.approx(7 / 3), 4.0)
    assert gr.GradStats.of([]) is None


def test_a_failed_run_says_no_backward_pass_ran(fresh_store):
    doc = chain(INPUT, ("Linear", {"in_features": 9, "out_features": 2}), ("BackwardOnce", {}))
    outcome = execute(plan_run(doc), RunOptions(run_id="g1", gradients=True), lambda e: None, captures=fresh_store)
    assert outcome.status == "failed"
    assert kept(fresh_store, gr.RUN, gr.TARGET)["text"] == "Capture gradients: no backward pass ran: the run did not finish"


def test_the_vanishing_gradients_lesson_shows_the_difference(fresh_store):
    """GR1: in the lesson "Why gradients vanish" the sigmoid network's first layers are vanishing
    and every ReLU layer is healthy, with its own settings (Capture gradients on, seeded)."""
    from tests.conftest import example

    doc = document.normalise(example("vanishing_gradients"))
    settings = document.run_settings(doc)
    assert settings["capture_gradients"] is True
    outcome = execute(plan_run(doc), RunOptions(run_id="g1", seed=settings["seed"], gradients=True),
                      lambda e: None, captures=fresh_store)
    assert outcome.status == "succeeded", outcome.error
    verdicts = {row["name"]: gr.layer_stats(row, lambda node, port: kept(fresh_store, node, port)).verdict
                for row in kept(fresh_store, gr.RUN, gr.LAYERS)}
    assert len(verdicts) == 22
    assert verdicts["Sigmoid L1"] == verdicts["Sigmoid L2"] == gr.VANISHING
    assert {v for name, v in verdicts.items() if name.startswith("ReLU")} == {gr.HEALTHY}


@pytest.mark.parametrize("size", [1e-30, 1e30])
def test_grad_stats_keep_tiny_and_huge_norms(size):
    """‖g‖ of gradients whose squares leave float32's range is still their norm."""
    s = gr.GradStats.of([torch.full((4,), size)])
    assert s.norm == pytest.approx(2 * size, rel=1e-5) and s.max == pytest.approx(size, rel=1e-6)
