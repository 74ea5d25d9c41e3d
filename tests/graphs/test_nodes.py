"""The node catalogue: declarations, and each node run on tiny inputs through a fake context."""
from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from apps.graphs.nodes.base import CATEGORY_ORDER, NodeError, registry


def t(*shape):
    return torch.arange(1, 1 + torch.Size(shape).numel(), dtype=torch.float32).reshape(shape) / 10


# For every node whose inputs are all TENSOR: (small params, inputs).
SMALL_RUNS = {
    "Start": ({}, {}),
    "TensorInput": ({}, {}),
    "TensorCreate": ({"shape": "1,2,3"}, {}),
    "Dataset": ({"name": "Iris"}, {}),
    "SyntheticShapes": ({"n_samples": 8, "image_size": 8}, {}),
    "SyntheticSegmentation": ({"n_samples": 4, "image_size": 16}, {}),
    "Loss": ({}, {}),
    "SyntheticDataset": ({"n_samples": 20}, {}),
    "CSVReader": ({"target_column": "species"}, {}),
    "Normalize": ({"mode": "minmax"}, {"tensor": t(3, 2)}),
    "LinearRegression": ({}, {"x_train": t(4, 2), "y_train": t(4), "x_query": t(2, 2)}),
    "Add": ({"alpha": 2.0}, {"tensor_a": t(2, 3), "tensor_b": t(3)}),
    "Multiply": ({}, {"tensor_a": t(2, 3), "tensor_b": t(2, 3)}),
    "MatMul": ({}, {"tensor_a": t(2, 3), "tensor_b": t(3, 4)}),
    "Mean": ({"dim": "0,1"}, {"tensor": t(2, 3, 4)}),
    "Permute": ({}, {"tensor": t(1, 3, 5)}),
    "Squeeze": ({}, {"tensor": t(4, 1)}),
    "Unsqueeze": ({}, {"tensor": t(4)}),
    "Stack": ({}, {"tensor_a": t(2, 3), "tensor_b": t(2, 3)}),
    "Split": ({"chunks": 3}, {"tensor": t(6, 2)}),
    "Argmax": ({}, {"tensor": t(2, 5)}),
    "ScalarMultiply": ({"scalar": 3.0}, {"tensor": t(2, 2)}),
    "Softmax": ({}, {"tensor": t(2, 3)}),
    "Reshape": ({"shape": "1,16"}, {"tensor": t(1, 4, 4)}),
    "Flatten": ({}, {"tensor": t(1, 4, 4)}),
    "Concat": ({"dim": 1}, {"tensor_a": t(2, 3), "tensor_b": t(2, 1)}),
    "Linear": ({"in_features": 16, "out_features": 4}, {"tensor": t(2, 16)}),
    "Embedding": ({"num_embeddings": 10, "embedding_dim": 3, "padding_idx": 0},
                  {"tensor": torch.tensor([[1, 2, 0]])}),
    "Conv2d": ({"out_channels": 2}, {"tensor": t(1, 1, 5, 5)}),
    "ConvTranspose2d": ({"in_channels": 2, "out_channels": 3}, {"tensor": t(1, 2, 3, 3)}),
    "MaxPool2d": ({}, {"tensor": t(1, 2, 4, 4)}),
    "AvgPool2d": ({"padding": 1}, {"tensor": t(1, 2, 4, 4)}),
    "AdaptiveAvgPool2d": ({"output_height": 2, "output_width": 1}, {"tensor": t(1, 2, 4, 4)}),
    "Activation": ({"function": "gelu"}, {"tensor": t(2, 3) - 0.3}),
    "Dropout": ({}, {"tensor": t(4, 4)}),
    "BatchNorm2d": ({"num_features": 2}, {"tensor": t(2, 2, 3, 3)}),
    "LayerNorm": ({"normalized_shape": "4"}, {"tensor": t(2, 4)}),
    "Conv1d": ({"out_channels": 2}, {"tensor": t(1, 1, 6)}),
    "Conv2dKernel": ({}, {}),
    "Conv2dExplicit": ({}, {"tensor": t(1, 2, 4, 4), "kernel": t(3, 3)}),
    "BatchNorm1d": ({"num_features": 3}, {"tensor": t(4, 3)}),
    "GroupNorm": ({"num_groups": 2, "num_channels": 4}, {"tensor": t(2, 4, 3)}),
    "InstanceNorm2d": ({"num_features": 2, "affine": True}, {"tensor": t(1, 2, 3, 3)}),
    "GaussianNoise": ({"shape": "2,3"}, {}),
    "Lerp": ({"alpha": 0.25}, {"tensor_a": t(2, 3), "tensor_b": t(3)}),
    "Upsample": ({}, {"tensor": t(1, 2, 3, 3)}),
    "TimestepEmbedding": ({"embed_dim": 8}, {"timestep": torch.tensor([0, 5])}),
    "DiffusionUNet": ({"in_channels": 1, "base_channels": 4, "channel_mult": "1,2", "time_emb_dim": 8,
                       "num_groups": 2}, {}),
    "RNNCell": ({}, {"tensor": t(1, 8)}),
    "LSTM": ({"input_size": 4, "hidden_size": 5, "bidirectional": True}, {"tensor": t(2, 3, 4)}),
    "GRU": ({"input_size": 4, "hidden_size": 5, "num_layers": 2}, {"tensor": t(2, 3, 4)}),
    "GraphInput": ({"default": "hi"}, {}),
    "MoELayer": ({"num_experts": 3, "top_k": 2, "hidden_dim": 4, "expert_hidden_dim": 6}, {"x": t(1, 3, 4)}),
    "MultiHeadAttention": ({"embed_dim": 8, "num_heads": 2},
                           {"query": t(3, 1, 8), "key": t(5, 1, 8), "value": t(5, 1, 8)}),
    "TransformerEncoder": ({"d_model": 8, "nhead": 2, "num_layers": 1, "dim_feedforward": 16},
                           {"tensor": t(1, 3, 8)}),
    "TransformerDecoder": ({"d_model": 8, "nhead": 2, "num_layers": 1, "dim_feedforward": 16},
                           {"tensor": t(1, 3, 8), "memory": t(1, 4, 8)}),
    "BackwardOnce": ({}, {"tensor": t(2, 2)}),
    "SequentialModel": ({}, {}),
    "PositionalEncoding": ({}, {"tensor": t(3, 4)}),
    "TextInput": ({}, {}),
    "EnvWrapper": ({"env_name": "Acrobot-v1"}, {}),
    "DQN": ({"hidden_dim": 8}, {"state": t(2, 4)}),
    "PPO": ({"hidden_dim": 8}, {"state": t(4)}),
    "RewardModel": ({"input_dim": 4, "hidden_dim": 3}, {"hidden_states": t(2, 4)}),
    "KLDivergence": ({"reduction": "none"}, {"p": torch.softmax(t(2, 3), -1), "q": torch.full((2, 3), 1 / 3)}),
}
READS_MY_FILES = {"FileReader", "ImageReader", "ImageBatchReader"}  # need a student's files: test_io_nodes.py
NEEDS_THE_INTERNET = {"HuggingFaceDataset", "KaggleDataset"}  # refuse to run here: test_datasets.py

EXPECTED_SHAPES = {
    "Add": [2, 3], "MatMul": [2, 4], "Mean": [4], "Permute": [1, 5, 3], "Squeeze": [4],
    "Unsqueeze": [1, 4], "Stack": [2, 2, 3], "Argmax": [2], "Reshape": [1, 16],
    "Flatten": [1, 16], "Concat": [2, 4], "Linear": [2, 4], "Embedding": [1, 3, 3],
    "Conv2d": [1, 2, 5, 5], "ConvTranspose2d": [1, 3, 6, 6], "MaxPool2d": [1, 2, 2, 2],
    "AvgPool2d": [1, 2, 3, 3], "AdaptiveAvgPool2d": [1, 2, 2, 1], "LayerNorm": [2, 4],
    "TensorInput": [1, 4, 4], "TensorCreate": [1, 2, 3], "TransformerDecoder": [1, 3, 8],
    "Conv1d": [1, 2, 6], "Conv2dKernel": [3, 3], "Conv2dExplicit": [1, 2, 4, 4], "BatchNorm1d": [4, 3],
    "GroupNorm": [2, 4, 3], "InstanceNorm2d": [1, 2, 3, 3], "GaussianNoise": [2, 3], "Lerp": [2, 3],
    "Upsample": [1, 2, 6, 6], "TimestepEmbedding": [2, 8],
}


def run(ctx, type_key, raw_params=None, **inputs):
    node = registry()[type_key]
    params, problems = node.coerce_params(raw_params or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def library_nodes():
    """The built-in catalogue of runnable nodes (other tests may register nodes of their own;
    blocks run as their inside and are tested in test_subgraphs, script nodes need a run
    worker's sandbox and are tested in tests/runs/test_sandbox.py)."""
    return {k: n for k, n in registry().items()
            if n.__module__.startswith("apps.graphs.nodes.library.") and not n.subgraph and not n.script}


def only_tensor_inputs(node):
    return all(p.type == "TENSOR" for p in node.inputs)


# -- declarations ---------------------------------------------------------------------------

def test_every_node_is_documented_and_its_defaults_coerce():
    """Category, one-line description, details and every param default are usable as declared."""
    for key, node in library_nodes().items():
        assert node.type == key
        assert node.category in CATEGORY_ORDER, key
        assert node.description and "\n" not in node.description, key
        assert len(node.details) > 80, key
        for param in node.params:
            assert param.coerce(param.default) == param.default, (key, param.name)
        node.describe()


def test_every_tensor_only_node_has_a_small_run():
    """New nodes with TENSOR inputs must be added to SMALL_RUNS."""
    missing = [k for k, n in library_nodes().items()
               if only_tensor_inputs(n) and k not in {*SMALL_RUNS, *READS_MY_FILES, *NEEDS_THE_INTERNET}]
    assert missing == []


def test_out_of_range_params_are_refused():
    _, problems = registry()["Linear"].coerce_params({"in_features": 0})
    assert problems == ["'in_features' value 0 is below minimum 1"]
    _, problems = registry()["Dropout"].coerce_params({"p": 1.5})
    assert problems == ["'p' value 1.5 is above maximum 1"]


# -- every node runs ----------------------------------------------------------------------------

@pytest.mark.parametrize("type_key", sorted(SMALL_RUNS))
@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
def test_node_runs_and_returns_every_output(ctx, type_key, verbose):
    """Each node returns every declared output and leaves its inputs untouched."""
    ctx.verbose = verbose
    node = registry()[type_key]
    raw, inputs = SMALL_RUNS[type_key]
    before = {k: v.clone() for k, v in inputs.items()}
    result = run(ctx, type_key, raw, **inputs)
    params, _ = node.coerce_params(raw)
    assert set(result) == {p.name for p in node.output_ports(params) if p.type != "TRIGGER"}
    for name, value in inputs.items():
        assert torch.equal(value, before[name]), f"{type_key} changed input {name}"
    if type_key in EXPECTED_SHAPES:
        assert list(next(iter(result.values())).shape) == EXPECTED_SHAPES[type_key]
    if verbose and node.records_steps:
        assert ctx.steps and all(s["name"] for s in ctx.steps)
    elif not verbose:
        assert ctx.steps == []


def test_records_steps_names_follow_the_reference(ctx):
    ctx.verbose = True
    expected = {
        "Softmax": ["logits", "max_subtract", "exp", "partition", "divide"],
        "Linear": ["input", "weight_matrix", "bias_vector", "linear_output"],
        "Conv2d": ["input_tensor", "kernel_weights", "convolved_output"],
        "BatchNorm2d": ["input", "per_channel_mean", "per_channel_var", "normalize", "scale_shift"],
        "LayerNorm": ["input", "compute_mean", "compute_var", "normalize", "scale_shift"],
        "Embedding": ["indices", "embedding_table", "lookup"],
        "MultiHeadAttention": ["inputs_qkv", "scaled_scores", "softmax_weights", "attended_output"],
    }
    for type_key, names in expected.items():
        ctx.steps.clear()
        raw, inputs = SMALL_RUNS[type_key]
        run(ctx, type_key, raw, **inputs)
        assert [s["name"] for s in ctx.steps] == names, type_key


def traced(ctx, type_key):
    ctx.verbose = True
    raw, inputs = SMALL_RUNS[type_key]
    result = run(ctx, type_key, raw, **inputs)
    return result, {s["name"]: s for s in ctx.steps}


def test_multihead_attention_steps_trace_the_layers_real_projections(ctx):
    """The traced weights, averaged over heads, are the layer's own; its last step holds its output."""
    result, steps = traced(ctx, "MultiHeadAttention")
    weights = steps["softmax_weights"]["tensors"]["weights"]
    assert torch.allclose(weights.mean(dim=1), result["weights"], atol=1e-6)
    assert torch.equal(steps["attended_output"]["tensors"]["output"], result["output"])
    assert steps["scaled_scores"]["scalars"] == {"d_k": 4.0}
    assert set(steps["inputs_qkv"]["tensors"]) == {"Q", "K", "V"}


@pytest.mark.parametrize("type_key, last, port", [("Softmax", "divide", "tensor"), ("LayerNorm", "scale_shift", "tensor"),
                                                   ("Linear", "linear_output", "tensor"), ("Conv2d", "convolved_output", "tensor"),
                                                   ("Embedding", "lookup", "tensor")])
def test_a_traces_last_step_is_the_nodes_output(ctx, type_key, last, port):
    result, steps = traced(ctx, type_key)
    assert torch.equal(steps[last]["tensors"]["output"], result[port])


def test_layer_norm_steps_compute_the_normalised_values(ctx):
    result, steps = traced(ctx, "LayerNorm")
    normal = steps["normalize"]["tensors"]["normalized"]
    assert torch.allclose(normal.mean(dim=-1), torch.zeros(2), atol=1e-6)
    assert torch.allclose(normal * steps["scale_shift"]["tensors"]["gamma"] + steps["scale_shift"]["tensors"]["beta"],
                          result["tensor"], atol=1e-6)


def test_step_descriptions_are_markdown_with_formulas_for_students(ctx):
    """Each built-in trace explains itself with maths ($…$), never a raw LaTeX command outside one."""
    for type_key in ("Softmax", "MultiHeadAttention", "Conv2d", "Linear", "BatchNorm2d", "LayerNorm", "Embedding"):
        ctx.steps.clear()
        traced(ctx, type_key)
        assert all(s["description"] for s in ctx.steps), type_key
        for s in ctx.steps:
            outside = re.sub(r"\$\$.*?\$\$|\$.*?\$", "", s["description"])  # the text between formulas
            assert "\\" not in outside, (type_key, s["name"])


# -- particular behaviours ------------------------------------------------------------------

def test_reshape_default_refuses_sixteen_values(ctx):
    with pytest.raises(NodeError, match=r"16 values cannot be reshaped to \[-1, 784\]; .*1,16"):
        run(ctx, "Reshape", tensor=t(1, 4, 4))


def test_reshape_fills_in_minus_one(ctx):
    assert run(ctx, "Reshape", {"shape": "-1,8"}, tensor=t(1, 4, 4))["tensor"].shape == (2, 8)


def test_tensor_input_explicit_values(ctx):
    values = [[[float(4 * r + c) for c in range(4)] for r in range(4)]]
    out = run(ctx, "TensorInput", {"value_mode": "explicit", "values": values})["tensor"]
    assert out.dtype == torch.float32
    assert out.tolist() == values


def test_tensor_input_explicit_count_mismatch(ctx):
    with pytest.raises(NodeError, match=r"values has 3 elements but shape \[1, 4, 4\] requires 16"):
        run(ctx, "TensorInput", {"value_mode": "explicit", "values": [[1, 2, 3]]})
    with pytest.raises(NodeError, match="value_mode=explicit requires 'values' to be set"):
        run(ctx, "TensorInput", {"value_mode": "explicit", "values": []})


# Measured by running CodefyUI's own TensorInput and RNNCell node code (its repository, beside
# ours, outside this one), so a worksheet made with CodefyUI shows the same numbers here.
CODEFYUI_RANDOM = {0: [1.540996, -0.293429, -2.178789, 0.568431], 1: [0.661352, 0.266924, 0.061677, 0.621317]}


@pytest.mark.parametrize("seed", [0, 1])
def test_tensor_input_random_draws_codefyuis_normal_numbers_from_its_seed(ctx, seed):
    """Random mode is torch.randn from a generator seeded with 'seed'; 0 is a seed like any other."""
    out = run(ctx, "TensorInput", {"shape": "1,4", "seed": seed})["tensor"]
    assert out.flatten().tolist() == pytest.approx(CODEFYUI_RANDOM[seed], abs=1e-6)


def test_tensor_input_random_whole_numbers_and_flags_match_codefyui(ctx):
    assert run(ctx, "TensorInput", {"shape": "1,4", "dtype": "int64", "seed": 3})["tensor"].tolist() == [[6, 8, 7, 7]]
    assert run(ctx, "TensorInput", {"shape": "1,4", "dtype": "bool", "seed": 3})["tensor"].tolist() == [[False, False, True, True]]


def test_tensor_input_random_repeats_on_every_run(ctx):
    first = run(ctx, "TensorInput", {"seed": 7})["tensor"]
    assert torch.equal(first, run(ctx, "TensorInput", {"seed": 7})["tensor"])
    assert not torch.equal(first, run(ctx, "TensorInput", {"seed": 8})["tensor"])
    assert torch.equal(run(ctx, "TensorInput", {})["tensor"], run(ctx, "TensorInput", {"seed": 0})["tensor"])


def test_tensor_input_bad_shape_names_the_param(ctx):
    with pytest.raises(NodeError, match="'shape'"):
        run(ctx, "TensorInput", {"shape": "1,x"})


def test_softmax_rows_sum_to_one(ctx):
    out = run(ctx, "Softmax", tensor=torch.tensor([[0.5, 1.0, 2.0], [3.0, -1.0, 0.0]]))["tensor"]
    assert torch.allclose(out.sum(dim=-1), torch.ones(2))
    assert out[0].argmax() == 2


def test_split_outputs_follow_chunks(ctx):
    split = registry()["Split"]
    assert [p.name for p in split.output_ports({"chunks": 3})] == ["chunk_0", "chunk_1", "chunk_2"]
    assert [p.name for p in split.output_ports({})] == ["chunk_0", "chunk_1"]
    result = run(ctx, "Split", {"chunks": 2}, tensor=t(5, 2))
    assert [r.shape[0] for r in result.values()] == [3, 2]


def test_print_logs_with_label_and_passes_value_on(ctx):
    value = [1, 2]
    assert run(ctx, "Print", {"label": "x"}, value=value)["value"] is value
    run(ctx, "Print", value="plain")
    assert ctx.logs == ["[x] [1, 2]", "plain"]


def test_print_writes_at_most_a_screenful_of_a_huge_value(ctx):
    """A million predictions are not written whole into the run log (13 MB for every reader)."""
    from apps.graphs.nodes.library.utility import PRINT_LIMIT
    run(ctx, "Print", {"label": "predictions"}, value=list(range(1_000_000)))
    run(ctx, "Print", value="x" * 10_000)
    assert ctx.logs[0].startswith("[predictions] [0, 1, 2, ")
    assert ctx.logs[0].endswith(f" … (cut at {PRINT_LIMIT:,} characters)")
    assert len(ctx.logs[0]) < PRINT_LIMIT + 60 and ctx.logs[1] == "x" * PRINT_LIMIT + " … (cut at 4,000 characters)"


def test_print_reads_optimizers_dicts_and_grad_fn_in_words(ctx):
    """Issue 49 item 7: no raw Python repr a 14-year-old stumbles on; the notation stays where it teaches."""
    model = torch.nn.Linear(2, 1)
    run(ctx, "Print", value=torch.optim.Adam(model.parameters(), lr=0.01))
    run(ctx, "Print", value={"final_train_loss": 0.123456789, "epochs": 3})
    run(ctx, "Print", value=torch.tanh(model(torch.ones(1, 2))))
    adam, metrics, tanh = ctx.logs
    assert adam.startswith("Adam optimizer: learning rate 0.01, updates 2 weight tensors (betas (0.9, 0.999)")
    assert "Parameter Group" not in adam and "amsgrad" not in adam
    assert metrics == "final train loss = 0.123457 · epochs = 3"
    assert "grad_fn=<TanhBackward0>" in tanh and "made by tanh, so Backward can send gradients back" in tanh


def test_matmul_size_mismatch_names_both_shapes(ctx):
    with pytest.raises(NodeError, match=r"Size mismatch: cannot multiply \[2, 3\] by \[4, 5\]"):
        run(ctx, "MatMul", tensor_a=t(2, 3), tensor_b=t(4, 5))


def test_linear_and_conv_mismatches_are_explained(ctx):
    with pytest.raises(NodeError, match=r"Size mismatch: .*in_features=16.*\[1, 8\]"):
        run(ctx, "Linear", {"in_features": 16, "out_features": 2}, tensor=t(1, 8))
    with pytest.raises(NodeError, match="Channel mismatch: expected 1 channels, got 3"):
        run(ctx, "Conv2d", {"out_channels": 2}, tensor=t(1, 3, 4, 4))


def test_tensor_create_requires_grad(ctx):
    out = run(ctx, "TensorCreate", {"shape": "2,2", "fill": "full", "value": 3.0,
                                    "requires_grad": True})["tensor"]
    assert out.requires_grad and out.is_leaf and out.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_dropout_keeps_the_average_scale(ctx):
    out = run(ctx, "Dropout", {"p": 0.5}, tensor=torch.ones(1000))["tensor"]
    assert set(out.unique().tolist()) == {0.0, 2.0}


def test_layers_are_built_through_the_context(ctx):
    built = []
    ctx.module = lambda build: built.append(build()) or built[-1]
    run(ctx, "Linear", {"in_features": 4, "out_features": 2}, tensor=t(1, 4))
    assert isinstance(built[0], nn.Linear) and built[0].weight.shape == (2, 4)


def test_optimizer_needs_trainable_parameters(ctx):
    with pytest.raises(NodeError, match="no trainable parameters"):
        run(ctx, "Optimizer", model=nn.ReLU())
    opt = run(ctx, "Optimizer", {"type": "SGD", "lr": 0.1}, model=nn.Linear(2, 1))["optimizer"]
    assert isinstance(opt, torch.optim.SGD) and opt.param_groups[0]["lr"] == 0.1


def test_backward_once_fills_gradients_or_logs_why_not(ctx):
    leaf = torch.ones(2, 2, requires_grad=True)
    doubled = leaf * 2
    assert run(ctx, "BackwardOnce", tensor=doubled)["tensor"] is doubled
    assert leaf.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    run(ctx, "BackwardOnce", tensor=torch.tensor([1, 2]))
    assert "nothing to differentiate" in ctx.logs[-1]


def test_rnn_cell_seed_fixes_the_weights(ctx):
    first = run(ctx, "RNNCell", tensor=t(1, 8))["hidden"]
    assert torch.equal(first, run(ctx, "RNNCell", tensor=t(1, 8))["hidden"])
    assert first.shape == (1, 16)


def test_rnn_cell_starts_from_codefyuis_weights(ctx):
    """Normal weights × 1/√hidden_size from 'seed', zero biases: CodefyUI's hidden state for this input."""
    params = {"input_size": 3, "hidden_size": 4, "seed": 42}
    hidden = run(ctx, "RNNCell", params, tensor=torch.tensor([[1.0, -0.5, 0.25]]))["hidden"]
    assert hidden.flatten().tolist() == pytest.approx([0.163957, 0.356255, 0.867109, 0.100776], abs=1e-6)


def test_loss_node_gives_the_chosen_function(ctx):
    assert isinstance(run(ctx, "Loss", {"type": "MSELoss"})["loss_fn"], nn.MSELoss)
    assert len(registry()["Loss"].params[0].options) == 11


def test_only_random_modes_count_as_random():
    """draws_random narrows uses_rng so the engine can cache the deterministic modes."""
    nodes = registry()
    assert not nodes["TensorInput"].draws_random({})  # random mode draws from its own seed
    assert nodes["TensorCreate"].draws_random({"fill": "randn"})
    assert not nodes["TensorCreate"].draws_random({})
    assert nodes["Dropout"].draws_random({}) and not nodes["Dropout"].draws_random({"p": 0})


def test_the_cheap_manual_seed_draws_what_torch_manual_seed_draws():
    from apps.graphs.nodes.library._helpers import manual_seed, seeded

    manual_seed(7)
    ours = torch.rand(4)
    torch.manual_seed(7)
    assert torch.equal(ours, torch.rand(4))
    before = torch.get_rng_state()
    assert torch.equal(seeded(7, lambda: torch.rand(4)), ours)
    assert torch.equal(torch.get_rng_state(), before)  # seeded leaves the global state as it was
