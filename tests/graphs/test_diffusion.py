"""The Diffusion nodes against torch's own functions and a direct computation of the DDPM
formulas, with their messages, their limits, seeded determinism, training and Stop."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from apps.graphs.nodes.base import NodeError, registry
from apps.graphs.nodes.library.diffusion import UNet, betas


def run(ctx, type_key, raw=None, **inputs):
    node = registry()[type_key]
    params, problems = node.coerce_params(raw or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def sample(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


TINY_UNET = {"in_channels": 1, "base_channels": 4, "channel_mult": "1,2", "time_emb_dim": 8, "num_groups": 2}


def tiny_unet(ctx, **changes):
    return run(ctx, "DiffusionUNet", {**TINY_UNET, **changes})["model"]


# -- GaussianNoise, Lerp, Upsample -----------------------------------------------------------------

def test_gaussian_noise_is_torchs_normal_numbers_from_its_seed(ctx):
    out = run(ctx, "GaussianNoise", {"shape": "2,3,4", "mean": 1.5, "std": 0.5, "seed": 7})["noise"]
    assert torch.equal(out, torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(7)) * 0.5 + 1.5)
    again = run(ctx, "GaussianNoise", {"shape": "2,3,4", "mean": 1.5, "std": 0.5, "seed": 7})["noise"]
    assert torch.equal(out, again)


def test_gaussian_noise_copies_shape_ref(ctx):
    out = run(ctx, "GaussianNoise", {}, shape_ref=torch.zeros(1, 1, 5, 2, dtype=torch.long))["noise"]
    assert list(out.shape) == [1, 1, 5, 2] and out.dtype == torch.float32


def test_gaussian_noise_messages_and_limit(ctx):
    with pytest.raises(NodeError, match="'shape' sizes must be 1 or more"):
        run(ctx, "GaussianNoise", {"shape": "1,0"})
    with pytest.raises(NodeError, match="'shape' must be whole numbers"):
        run(ctx, "GaussianNoise", {"shape": "a,b"})
    with pytest.raises(NodeError, match="GaussianNoise's tensor"):
        run(ctx, "GaussianNoise", {"shape": "100000,100000"})
    assert not registry()["GaussianNoise"].cacheable


def test_lerp_is_torch_lerp_from_b_to_a(ctx):
    a, b = sample(2, 3), sample(3, seed=1)
    out = run(ctx, "Lerp", {"alpha": 0.3}, tensor_a=a, tensor_b=b)["tensor"]
    assert torch.allclose(out, torch.lerp(b.expand(2, 3), a, 0.3))
    assert torch.allclose(run(ctx, "Lerp", {"alpha": 1.0}, tensor_a=a, tensor_b=b)["tensor"], a)


def test_lerp_alpha_input_replaces_the_param(ctx):
    a, b = sample(4, 1, 2, 2), sample(4, 1, 2, 2, seed=1)
    alpha = torch.tensor([0.0, 0.25, 0.5, 1.0]).reshape(4, 1, 1, 1)
    out = run(ctx, "Lerp", {"alpha": 0.9}, tensor_a=a, tensor_b=b, alpha=alpha)["tensor"]
    assert torch.allclose(out, torch.lerp(b, a, alpha))


def test_lerp_messages(ctx):
    with pytest.raises(NodeError, match=r"cannot blend \[2, 3\] and \[4\]"):
        run(ctx, "Lerp", {}, tensor_a=sample(2, 3), tensor_b=sample(4))
    with pytest.raises(NodeError, match=r"'alpha' of shape \[5\] does not fit the blended shape \[2, 3\]"):
        run(ctx, "Lerp", {}, tensor_a=sample(2, 3), tensor_b=sample(2, 3), alpha=sample(5))


@pytest.mark.parametrize("mode,scale", [("nearest", 2.0), ("bilinear", 2.0), ("area", 0.5), ("nearest", 1.5)])
def test_upsample_is_torchs_interpolate(ctx, mode, scale):
    x = sample(1, 2, 4, 4)
    out = run(ctx, "Upsample", {"mode": mode, "scale_factor": scale}, tensor=x)["tensor"]
    options = {"align_corners": False} if mode == "bilinear" else {}
    assert torch.allclose(out, F.interpolate(x, scale_factor=scale, mode=mode, **options))


def test_upsample_doubles_a_sequence_and_keeps_whole_numbers(ctx):
    out = run(ctx, "Upsample", {}, tensor=torch.tensor([[[1, 2]]]))["tensor"]
    assert out.tolist() == [[[1, 1, 2, 2]]] and out.dtype == torch.int64


def test_upsample_messages_and_a_huge_result_is_refused(ctx):
    with pytest.raises(NodeError, match=r"Upsample \(bilinear\) expects a 4-D tensor"):
        run(ctx, "Upsample", {"mode": "bilinear"}, tensor=sample(1, 2, 4))
    with pytest.raises(NodeError, match="no pixels left"):
        run(ctx, "Upsample", {"scale_factor": 0.1}, tensor=sample(1, 1, 4, 4))
    with pytest.raises(NodeError, match=r"Upsample expects|Upsample \(nearest\) expects"):
        run(ctx, "Upsample", {}, tensor=sample(4, 4))
    with pytest.raises(NodeError, match="Upsample's result"):
        run(ctx, "Upsample", {"scale_factor": 10000.0}, tensor=sample(1, 1, 4, 4))


# -- TimestepEmbedding -------------------------------------------------------------------------------

def test_timestep_embedding_is_sinusoids_then_the_mlp(ctx):
    built = []
    ctx.module = lambda build: built.append(build()) or built[-1]
    t = torch.tensor([0.0, 3.0, 50.0])
    out = run(ctx, "TimestepEmbedding", {"embed_dim": 8, "max_period": 100}, timestep=t)["embedding"]
    freqs = torch.tensor([100 ** (-i / 4) for i in range(4)])
    angles = t[:, None] * freqs
    sinusoids = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    mlp = built[0]
    assert torch.allclose(out, mlp.fc2(F.silu(mlp.fc1(sinusoids))), atol=1e-6)
    assert list(out.shape) == [3, 8]
    assert torch.all(mlp.fc1.bias == 0)


def test_timestep_embedding_seed_fixes_the_weights_and_a_number_is_one_step(ctx):
    one = run(ctx, "TimestepEmbedding", {}, timestep=torch.tensor(5))["embedding"]
    same = run(ctx, "TimestepEmbedding", {}, timestep=torch.tensor([[5]]))["embedding"]
    other = run(ctx, "TimestepEmbedding", {"seed": 1}, timestep=torch.tensor(5))["embedding"]
    assert list(one.shape) == [1, 32] and torch.equal(one, same) and not torch.equal(one, other)


def test_timestep_embedding_messages(ctx):
    with pytest.raises(NodeError, match="'embed_dim' = 7 must be even"):
        run(ctx, "TimestepEmbedding", {"embed_dim": 7}, timestep=torch.tensor(1))
    with pytest.raises(NodeError, match=r"timestep as one number or a list .* \[2, 2\]"):
        run(ctx, "TimestepEmbedding", {}, timestep=torch.zeros(2, 2))


# -- DiffusionUNet -------------------------------------------------------------------------------------

def test_unet_predicts_noise_of_the_images_shape_and_counts_its_weights(ctx):
    model = run(ctx, "DiffusionUNet", {})["model"]
    assert isinstance(model, nn.Module)
    assert sum(p.numel() for p in model.parameters()) == UNet.weights(3, 16, [1, 2, 4], 32)
    out = model(sample(2, 3, 16, 16), torch.tensor([3]))
    assert list(out.shape) == [2, 3, 16, 16]


def test_unet_seed_fixes_the_weights(ctx):
    x, t = sample(1, 1, 8, 8), torch.tensor([4])
    assert torch.equal(tiny_unet(ctx)(x, t), tiny_unet(ctx)(x, t))
    assert not torch.equal(tiny_unet(ctx)(x, t), tiny_unet(ctx, seed=1)(x, t))


def test_unet_messages(ctx):
    with pytest.raises(NodeError, match=r"num_groups=3 must divide every level's channel count .* not 16"):
        run(ctx, "DiffusionUNet", {"num_groups": 3})
    with pytest.raises(NodeError, match="'channel_mult' must be whole numbers"):
        run(ctx, "DiffusionUNet", {"channel_mult": "1,x"})
    with pytest.raises(NodeError, match="every 'channel_mult' entry must be 1 or more"):
        run(ctx, "DiffusionUNet", {"channel_mult": "1,0"})
    with pytest.raises(NodeError, match="at most 6 are allowed"):
        run(ctx, "DiffusionUNet", {"channel_mult": "1,1,1,1,1,1,1"})
    with pytest.raises(NodeError, match="'time_emb_dim' = 5 must be even"):
        run(ctx, "DiffusionUNet", {"time_emb_dim": 5})
    model = tiny_unet(ctx)
    with pytest.raises(NodeError, match=r"height and width must be divisible by 2, but the input is 5 × 5"):
        model(sample(1, 1, 5, 5), torch.tensor([1]))
    with pytest.raises(NodeError, match=r"expects images \[batch, 1, height, width\], but got shape \[1, 3, 4, 4\]"):
        model(sample(1, 3, 4, 4), torch.tensor([1]))


def test_a_huge_unet_is_refused_before_it_is_built(ctx):
    ctx.size_limit = 10_000_000
    with pytest.raises(NodeError, match="DiffusionUNet weights"):
        run(ctx, "DiffusionUNet", {"base_channels": 512})


# -- DDPMSampler ----------------------------------------------------------------------------------------

class ConstantNoise(nn.Module):
    """A 'model' that always predicts the same noise, so the update can be computed by hand."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(0.5))

    def forward(self, x, t):
        return torch.ones_like(x) * self.scale


def test_ddpm_sampler_follows_the_ddpm_update(ctx):
    noise = sample(1, 1, 2, 2)
    out = run(ctx, "DDPMSampler", {"num_steps": 3, "seed": 5}, model=ConstantNoise(), noise=noise)["image"]
    beta = torch.linspace(1e-4, 0.02, 3)
    alpha, generator, x = 1 - beta, torch.Generator().manual_seed(5), noise.clone()
    alpha_bar = torch.cumprod(alpha, 0)
    for t in (2, 1, 0):
        x = (x - beta[t] / torch.sqrt(1 - alpha_bar[t]) * 0.5) / torch.sqrt(alpha[t])
        if t > 0:
            x = x + torch.sqrt(beta[t]) * torch.randn(x.shape, generator=generator)
    assert torch.allclose(out, x)
    assert ctx.reports[-1] == {"step": 3, "of": 3}


def test_ddpm_sampler_is_deterministic_with_its_seed(ctx):
    model, noise = tiny_unet(ctx), sample(1, 1, 8, 8)
    first = run(ctx, "DDPMSampler", {"num_steps": 4}, model=model, noise=noise)["image"]
    again = run(ctx, "DDPMSampler", {"num_steps": 4}, model=model, noise=noise)["image"]
    other = run(ctx, "DDPMSampler", {"num_steps": 4, "seed": 1}, model=model, noise=noise)["image"]
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert list(first.shape) == [1, 1, 8, 8] and model.training  # its mode is given back


def test_ddpm_sampler_stops_when_cancelled(ctx):
    ctx.stop_after = 2
    out = run(ctx, "DDPMSampler", {"num_steps": 50}, model=ConstantNoise(), noise=sample(1, 1, 2, 2))["image"]
    assert list(out.shape) == [1, 1, 2, 2]
    assert ctx.reports[-1] == {"step": 2, "of": 50}
    assert "stopped after 2 of 50 steps" in ctx.logs[-1]


def test_cosine_schedule_is_nichol_and_dhariwals():
    beta = betas("test", "cosine", 10, 0.0, 0.0)
    f = [math.cos((i / 10 + 0.008) / 1.008 * math.pi / 2) ** 2 for i in range(11)]
    expected = [min(max(1 - f[i + 1] / f[i], 0.0001), 0.999) for i in range(10)]
    assert torch.allclose(beta, torch.tensor(expected), atol=1e-6)


def test_ddpm_sampler_messages(ctx):
    noise = sample(1, 1, 2, 2)
    with pytest.raises(NodeError, match="needs a model .* received a Tensor"):
        run(ctx, "DDPMSampler", {}, model=noise, noise=noise)
    with pytest.raises(NodeError, match=r"0 < beta_start ≤ beta_end < 1, but beta_start is 0"):
        run(ctx, "DDPMSampler", {"beta_start": 0.0}, model=ConstantNoise(), noise=noise)

    class Wrong(nn.Module):
        def forward(self, x, t):
            return x.sum(dim=1)

    with pytest.raises(NodeError, match=r"model answered \[1, 2, 2\] for an image \[1, 1, 2, 2\]"):
        run(ctx, "DDPMSampler", {}, model=Wrong(), noise=noise)
    run(ctx, "DDPMSampler", {"num_steps": 1}, model=ConstantNoise(), noise=noise, condition=noise)
    assert "'condition' input is not used yet" in ctx.logs[-1]


# -- DiffusionTrainingLoop ----------------------------------------------------------------------------

def shapes(ctx, n=32):
    return run(ctx, "SyntheticShapes", {"image_size": 8, "n_samples": n})["dataset"]


TRAIN = {"epochs": 12, "batch_size": 16, "lr": 0.01, "num_timesteps": 20}


def test_training_lowers_the_noise_prediction_loss(ctx):
    out = run(ctx, "DiffusionTrainingLoop", TRAIN, model=tiny_unet(ctx), dataset=shapes(ctx))
    losses = out["losses"]
    assert losses.shape == (12,) and losses.dtype == torch.float32
    assert losses[-3:].mean() < 0.8 * losses[:3].mean()
    assert out["model"].epochs_trained == 12


def test_training_reports_what_the_training_pane_shows(ctx):
    run(ctx, "DiffusionTrainingLoop", {**TRAIN, "epochs": 2}, model=tiny_unet(ctx), dataset=shapes(ctx))
    last = ctx.reports[-1]
    assert (last["epoch"], last["epochs"], last["batch"], last["batches"]) == (2, 2, 2, 2)
    assert len(last["losses"]) == 2 and last["val_losses"] == [] and last["best_epoch"] in (1, 2)
    assert last["config"]["optimizer"] == "Adam" and last["config"]["batch_size"] == 16
    assert registry()["DiffusionTrainingLoop"].reports_training


def test_training_is_deterministic_with_its_seed(ctx):
    first = run(ctx, "DiffusionTrainingLoop", {**TRAIN, "epochs": 2}, model=tiny_unet(ctx), dataset=shapes(ctx))
    again = run(ctx, "DiffusionTrainingLoop", {**TRAIN, "epochs": 2}, model=tiny_unet(ctx), dataset=shapes(ctx))
    assert torch.equal(first["losses"], again["losses"])


def test_training_stops_within_a_batch_when_cancelled(ctx):
    ctx.stop_after = 3
    out = run(ctx, "DiffusionTrainingLoop", TRAIN, model=tiny_unet(ctx), dataset=shapes(ctx))
    assert len(out["losses"]) == 1  # epoch 1 (2 batches) finished, epoch 2 stopped after its first batch
    assert "stopped during epoch 2" in ctx.logs[-1]


def test_training_records_each_epochs_weights(ctx):
    ctx.recording = True
    run(ctx, "DiffusionTrainingLoop", {**TRAIN, "epochs": 2}, model=tiny_unet(ctx), dataset=shapes(ctx))
    assert set(ctx.captures) == {"__epoch1", "__epoch2"}
    assert "stem.weight" in ctx.captures["__epoch2"]["weights"]


def test_training_messages(ctx):
    model = tiny_unet(ctx)
    with pytest.raises(NodeError, match="needs a model .* received a Tensor"):
        run(ctx, "DiffusionTrainingLoop", {}, model=torch.zeros(1), dataset=shapes(ctx))
    with pytest.raises(NodeError, match="needs a dataset"):
        run(ctx, "DiffusionTrainingLoop", {}, model=model, dataset=torch.zeros(3))
    table = run(ctx, "Dataset", {"name": "Iris"})["dataset"]
    with pytest.raises(NodeError, match=r"needs a dataset of images \[C, H, W\]"):
        run(ctx, "DiffusionTrainingLoop", {}, model=model, dataset=table)
    with pytest.raises(NodeError, match=r"expects images \[batch, 3, height, width\]"):
        run(ctx, "DiffusionTrainingLoop", {**TRAIN, "epochs": 1}, model=tiny_unet(ctx, in_channels=3),
            dataset=shapes(ctx))
    dataset = shapes(ctx)
    ctx.size_limit = 100
    with pytest.raises(NodeError, match="DiffusionTrainingLoop's batch"):
        run(ctx, "DiffusionTrainingLoop", TRAIN, model=model, dataset=dataset)


def test_trained_model_samples_through_the_sampler(ctx):
    trained = run(ctx, "DiffusionTrainingLoop", {**TRAIN, "epochs": 2}, model=tiny_unet(ctx), dataset=shapes(ctx))
    noise = run(ctx, "GaussianNoise", {"shape": "2,1,8,8"})["noise"]
    image = run(ctx, "DDPMSampler", {"num_steps": 20, "beta_end": 0.05}, model=trained["model"], noise=noise)["image"]
    assert list(image.shape) == [2, 1, 8, 8] and torch.isfinite(image).all()
