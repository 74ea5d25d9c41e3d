"""Conv1d, Conv2dKernel, Conv2dExplicit, BatchNorm1d, GroupNorm and InstanceNorm2d, each against
torch's own function on a small input, with their messages for bad input and their limits."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from apps.graphs.nodes.base import NodeError, registry


def run(ctx, type_key, raw=None, **inputs):
    node = registry()[type_key]
    params, problems = node.coerce_params(raw or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def layer_of(ctx, type_key, raw, **inputs):
    """The node's output and the layer it built (FakeContext.module builds it in place)."""
    built = []
    original = ctx.module
    ctx.module = lambda build: built.append(original(build)) or built[-1]
    out = run(ctx, type_key, raw, **inputs)["tensor"]
    return out, built[0]


def sample(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


# -- Conv1d ---------------------------------------------------------------------------------------

def test_conv1d_is_torchs_conv1d_with_the_layers_weights(ctx):
    x = sample(2, 3, 10)
    out, layer = layer_of(ctx, "Conv1d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3,
                                          "stride": 2, "padding": 1}, tensor=x)
    assert torch.allclose(out, F.conv1d(x, layer.weight, layer.bias, stride=2, padding=1))
    assert list(out.shape) == [2, 4, 5]


def test_conv1d_defaults_keep_the_length_and_accept_an_unbatched_signal(ctx):
    assert list(run(ctx, "Conv1d", {}, tensor=sample(1, 100))["tensor"].shape) == [32, 100]


def test_conv1d_messages(ctx):
    with pytest.raises(NodeError, match=r"Channel mismatch: Conv1d expected 1 channels, got 3 .*set in_channels to 3"):
        run(ctx, "Conv1d", {}, tensor=sample(1, 3, 8))
    with pytest.raises(NodeError, match=r"Conv1d expects a 2-D or 3-D tensor"):
        run(ctx, "Conv1d", {}, tensor=sample(1, 1, 4, 4))
    with pytest.raises(NodeError, match=r"length 2 .* smaller than kernel_size 5"):
        run(ctx, "Conv1d", {"kernel_size": 5, "padding": 0}, tensor=sample(1, 1, 2))


def test_conv1d_weights_are_bounded(ctx):
    ctx.size_limit = 1000
    with pytest.raises(NodeError, match="Conv1d weights"):
        run(ctx, "Conv1d", {"in_channels": 10, "out_channels": 10, "kernel_size": 15}, tensor=sample(1, 10, 20))


# -- Conv2dKernel and Conv2dExplicit ----------------------------------------------------------------

def test_kernel_presets_are_the_textbook_filters(ctx):
    laplacian = run(ctx, "Conv2dKernel", {})["tensor"]
    assert laplacian.tolist() == [[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]]
    assert run(ctx, "Conv2dKernel", {"preset": "Sharpen3x3"})["tensor"].tolist() == [[0, -1, 0], [-1, 5, -1], [0, -1, 0]]
    assert run(ctx, "Conv2dKernel", {"preset": "VerticalEdge3x3"})["tensor"].tolist() == [[-1, 0, 1]] * 3
    assert laplacian.dtype == torch.float32


def test_custom_kernel_takes_its_grid(ctx):
    out = run(ctx, "Conv2dKernel", {"preset": "Custom", "kernel_size": 2, "weights": [[1, 2], [3, 4]]})["tensor"]
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(NodeError, match=r"'weights' has 9 numbers, but kernel_size=5 needs 25"):
        run(ctx, "Conv2dKernel", {"preset": "Custom", "kernel_size": 5})
    with pytest.raises(NodeError, match="must be a number"):
        run(ctx, "Conv2dKernel", {"preset": "Custom", "kernel_size": 1, "weights": [["x"]]})
    _, problems = registry()["Conv2dKernel"].coerce_params({"kernel_size": 16})
    assert problems == ["'kernel_size' value 16 is above maximum 15"]


@pytest.mark.parametrize("shape", [(3, 3), (1, 1, 3, 3)])
def test_conv2d_explicit_applies_one_kernel_to_every_channel(ctx, shape):
    x, kernel = sample(2, 3, 6, 6), sample(*shape, seed=1)
    out = run(ctx, "Conv2dExplicit", {"padding": 0}, tensor=x, kernel=kernel)["tensor"]
    weight = kernel.reshape(1, 1, 3, 3).expand(3, 1, 3, 3)
    assert torch.allclose(out, F.conv2d(x, weight, groups=3))
    assert list(out.shape) == [2, 3, 4, 4]


def test_conv2d_explicit_one_kernel_per_channel_with_stride(ctx):
    x, kernel = sample(1, 2, 7, 7), sample(2, 1, 3, 3, seed=2)
    out = run(ctx, "Conv2dExplicit", {"stride": 2}, tensor=x, kernel=kernel)["tensor"]
    assert torch.allclose(out, F.conv2d(x, kernel, stride=2, padding=1, groups=2))


def test_kernel_lesson_chain_edge_detection_on_a_flat_image_is_zero_inside(ctx):
    kernel = run(ctx, "Conv2dKernel", {})["tensor"]
    out = run(ctx, "Conv2dExplicit", {"padding": 0}, tensor=torch.ones(1, 1, 5, 5), kernel=kernel)["tensor"]
    assert torch.equal(out, torch.zeros(1, 1, 3, 3))


def test_conv2d_explicit_takes_an_unbatched_image(ctx):
    out = run(ctx, "Conv2dExplicit", {}, tensor=sample(3, 5, 5), kernel=torch.eye(3))["tensor"]
    assert list(out.shape) == [3, 5, 5]


def test_conv2d_explicit_messages(ctx):
    x = sample(1, 3, 5, 5)
    with pytest.raises(NodeError, match=r"must be square, but it is 2 × 3"):
        run(ctx, "Conv2dExplicit", {}, tensor=x, kernel=sample(2, 3))
    with pytest.raises(NodeError, match=r"\[2, 1, 3, 3\] does not fit an image with 3 channels"):
        run(ctx, "Conv2dExplicit", {}, tensor=x, kernel=sample(2, 1, 3, 3))
    with pytest.raises(NodeError, match=r"'kernel' must be \[k, k\]"):
        run(ctx, "Conv2dExplicit", {}, tensor=x, kernel=sample(3))
    with pytest.raises(NodeError, match=r"smaller than kernel_size 7"):
        run(ctx, "Conv2dExplicit", {"padding": 0}, tensor=x, kernel=sample(7, 7))
    with pytest.raises(NodeError, match=r"Conv2dExplicit expects a 3-D or 4-D tensor"):
        run(ctx, "Conv2dExplicit", {}, tensor=sample(5, 5), kernel=sample(3, 3))


# -- normalisation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5)])
def test_batchnorm1d_uses_the_batchs_statistics(ctx, shape):
    x = sample(*shape)
    out, layer = layer_of(ctx, "BatchNorm1d", {"num_features": 4}, tensor=x)
    assert torch.allclose(out, F.batch_norm(x, None, None, layer.weight, layer.bias, training=True), atol=1e-6)
    assert torch.equal(layer.running_mean, torch.zeros(4))  # running averages untouched


def test_batchnorm1d_in_eval_mode_uses_running_statistics(ctx):
    layer = torch.nn.BatchNorm1d(2).eval()
    layer.running_mean.fill_(1.0)
    ctx.module = lambda build: layer
    x = sample(1, 2)
    assert torch.allclose(run(ctx, "BatchNorm1d", {"num_features": 2}, tensor=x)["tensor"], layer(x))


def test_batchnorm1d_messages(ctx):
    with pytest.raises(NodeError, match=r"expected 128 channels, got 4 .*set num_features to 4"):
        run(ctx, "BatchNorm1d", {}, tensor=sample(2, 4))
    with pytest.raises(NodeError, match="more than one value per feature"):
        run(ctx, "BatchNorm1d", {"num_features": 4}, tensor=sample(1, 4))
    with pytest.raises(NodeError, match="BatchNorm1d expects a 2-D or 3-D tensor"):
        run(ctx, "BatchNorm1d", {"num_features": 4}, tensor=sample(4))


def test_groupnorm_is_torchs_group_norm(ctx):
    x = sample(2, 6, 3, 3)
    out, layer = layer_of(ctx, "GroupNorm", {"num_groups": 3, "num_channels": 6}, tensor=x)
    assert torch.allclose(out, F.group_norm(x, 3, layer.weight, layer.bias), atol=1e-6)


def test_groupnorm_messages(ctx):
    with pytest.raises(NodeError, match=r"num_channels=6 is not divisible by num_groups=4.*\(e\.g\. 3\)"):
        run(ctx, "GroupNorm", {"num_groups": 4, "num_channels": 6}, tensor=sample(1, 6, 2))
    with pytest.raises(NodeError, match=r"expected 256 channels, got 8 .*set num_channels to 8"):
        run(ctx, "GroupNorm", {}, tensor=sample(1, 8, 2))
    with pytest.raises(NodeError, match=r"GroupNorm expects a tensor \[batch, channels, ...\]"):
        run(ctx, "GroupNorm", {"num_groups": 1, "num_channels": 1}, tensor=sample(4))


@pytest.mark.parametrize("affine", [False, True])
def test_instancenorm2d_is_torchs_instance_norm(ctx, affine):
    x = sample(2, 3, 4, 4)
    out, layer = layer_of(ctx, "InstanceNorm2d", {"num_features": 3, "affine": affine}, tensor=x)
    assert torch.allclose(out, F.instance_norm(x, weight=layer.weight, bias=layer.bias), atol=1e-5)
    assert (layer.weight is not None) == affine


def test_instancenorm2d_messages(ctx):
    with pytest.raises(NodeError, match=r"expected 64 channels, got 3"):
        run(ctx, "InstanceNorm2d", {}, tensor=sample(1, 3, 4, 4))
    with pytest.raises(NodeError, match="more than one pixel per channel"):
        run(ctx, "InstanceNorm2d", {"num_features": 3}, tensor=sample(1, 3, 1, 1))


def test_norm_parameters_are_bounded(ctx):
    ctx.size_limit = 100
    with pytest.raises(NodeError, match="GroupNorm parameters"):
        run(ctx, "GroupNorm", {"num_groups": 1, "num_channels": 256}, tensor=sample(1, 256, 1))
    with pytest.raises(NodeError, match="BatchNorm1d parameters"):
        run(ctx, "BatchNorm1d", {}, tensor=sample(2, 128))
