"""TrainingLoop and its neighbours, run on a tiny hand-made model and TensorDataset loaders."""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from apps.graphs.nodes.base import NodeError, registry
from apps.graphs.nodes.library import training
from apps.graphs.nodes.library.training import precision_available


def _params(node: str, **changes):
    cls = registry()[node]
    return {**cls.coerce_params({})[0], **changes}


def _data(n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def _loader(batch=8, n=32, seed=0):
    return DataLoader(_data(n, seed), batch_size=batch, shuffle=True, generator=torch.Generator().manual_seed(1))


def _model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def _train(ctx, model=None, loader=None, lr=0.1, optimizer="SGD", **params):
    model = model if model is not None else _model()
    opt = getattr(torch.optim, optimizer)(model.parameters(), lr=lr)
    inputs = {"model": model, "dataloader": loader or _loader(), "optimizer": opt, "loss_fn": nn.CrossEntropyLoss()}
    inputs.update({k: params.pop(k) for k in ("val_dataloader", "lr_scheduler") if k in params})
    return registry()["TrainingLoop"]().run(ctx, _params("TrainingLoop", **params), **inputs)


def test_training_loop_gives_the_losses_of_the_same_loop_written_by_hand(ctx):
    """Same seed, same model, data and order -> the same loss per epoch as plain PyTorch."""
    out = _train(ctx, epochs=3)
    model, loader = _model(), _loader()
    opt, loss_fn, expected = torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), []
    for _ in range(3):
        total = 0.0
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
        expected.append(total / len(loader))
    assert out["losses"].tolist() == pytest.approx(expected, rel=1e-6)
    assert out["val_losses"].numel() == 0 and out["metrics"]["total_epochs_run"] == 3


def test_the_last_batch_gradients_stay_on_the_weights(ctx):
    """No zero_grad after the last step: Capture gradients shows those gradients."""
    out = _train(ctx, epochs=1)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in out["model"].parameters())


def test_validation_loss_is_computed_each_epoch_without_training(ctx):
    out = _train(ctx, epochs=2, val_dataloader=_loader(batch=16, seed=5))
    assert out["val_losses"].shape == (2,)
    assert out["metrics"]["final_val_loss"] == pytest.approx(out["val_losses"][-1].item())


def test_early_stopping_stops_and_restores_the_best_weights(ctx):
    """A learning rate that makes the loss worse: stopped after `patience` epochs, best weights back."""
    model = _model()
    out = _train(ctx, model=model, lr=50.0, epochs=20, early_stopping_patience=2,
                 val_dataloader=_loader(batch=16, seed=5))
    metrics = out["metrics"]
    assert metrics["stopped_early"] and metrics["total_epochs_run"] < 20
    assert metrics["total_epochs_run"] - metrics["best_epoch"] == 2
    assert any("Early stopping" in line for line in ctx.logs)
    x, y = _data(32, 5).tensors
    with torch.no_grad():
        restored = nn.CrossEntropyLoss()(out["model"](x), y).item()
    assert restored == pytest.approx(out["val_losses"][metrics["best_epoch"] - 1].item(), rel=1e-4)


def test_grad_clipping_caps_the_gradient_norm_of_each_step(ctx):
    out = _train(ctx, lr=0.0, epochs=1, grad_clip_norm=0.01)
    norm = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in out["model"].parameters()]))
    assert norm.item() == pytest.approx(0.01, rel=1e-3)


def test_fp16_on_cpu_falls_back_to_fp32_with_a_warning(ctx):
    out = _train(ctx, epochs=1, precision="fp16")
    assert any("fp16 is not available on cpu" in line for line in ctx.logs)
    assert out["grad_scaler_state"] is None


def test_fp16_trains_with_a_grad_scaler_that_unscales_before_clipping(ctx, monkeypatch):
    """The fp16 path (autocast and a GradScaler) run on the CPU, where torch has both though the
    product falls back to fp32: CI has no CUDA, and this is how the path runs in every suite.
    The losses are the unscaled ones, and clipping sees the unscaled gradients."""
    monkeypatch.setattr(training, "precision_available", lambda precision, device: True)
    out = _train(ctx, lr=0.0, epochs=2, precision="fp16", grad_clip_norm=0.01)
    assert not ctx.logs and ctx.reports[-1]["config"]["precision"] == "fp16"
    assert out["grad_scaler_state"]["scale"] > 0
    assert out["losses"].tolist() == pytest.approx(_train(ctx, lr=0.0, epochs=2)["losses"].tolist(), rel=1e-2)
    norm = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in out["model"].parameters()]))
    assert norm.item() == pytest.approx(0.01, rel=1e-3)


def test_bf16_trains_under_autocast_on_cpu(ctx):
    out = _train(ctx, epochs=2, precision="bf16")
    assert not ctx.logs and torch.isfinite(out["losses"]).all()
    assert ctx.reports[-1]["config"]["precision"] == "bf16"


def test_a_device_without_the_precision_falls_back(ctx):
    assert not precision_available("bf16", torch.device("mps"))
    assert not precision_available("fp16", torch.device("cpu"))
    assert precision_available("fp32", torch.device("mps"))


def test_accumulating_four_batches_of_eight_steps_like_one_batch_of_thirty_two(ctx):
    """accumulate_steps: batch 8 x 4 steps behaves like batch 32."""
    data = _data(32)
    small = _train(ctx, model=_model(), loader=DataLoader(data, batch_size=8), epochs=1, accumulate_steps=4)
    large = _train(ctx, model=_model(), loader=DataLoader(data, batch_size=32), epochs=1)
    for a, b in zip(small["model"].parameters(), large["model"].parameters()):
        assert torch.allclose(a, b, atol=1e-6)


def test_a_model_trained_before_continues_and_the_log_says_so(ctx):
    """Persist weights: the model carries its epochs, and the next run says how many."""
    model = _model()
    _train(ctx, model=model, epochs=5)
    assert not ctx.logs
    _train(ctx, model=model, epochs=2)
    assert "Continuing from the weights of the last run: 5 epochs so far" in ctx.logs
    assert model.epochs_trained == 7


def test_stop_ends_training_within_a_batch_and_keeps_what_was_learnt(ctx):
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    ctx.stop_after = 6  # four batches an epoch: stopped in the second epoch
    out = _train(ctx, model=model, epochs=5)
    assert out["metrics"]["total_epochs_run"] == 1 and ctx.reports[-1]["epoch"] == 2
    assert any("stopped during epoch 2" in line for line in ctx.logs)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_progress_reports_epoch_batch_and_losses(ctx):
    _train(ctx, epochs=2, val_dataloader=_loader(batch=16, seed=5))
    last = ctx.reports[-1]
    assert (last["epoch"], last["epochs"], last["batch"], last["batches"]) == (2, 2, 4, 4)
    assert len(last["losses"]) == len(last["val_losses"]) == 2 and last["best_epoch"] in (1, 2)
    assert last["config"]["optimizer"] == "SGD" and last["config"]["validation"]


def test_record_on_captures_every_epoch_with_each_layer_weights(ctx):
    ctx.recording = True
    out = _train(ctx, epochs=3)
    assert sorted(ctx.captures) == ["__epoch1", "__epoch2", "__epoch3"]
    third = ctx.captures["__epoch3"]
    assert third["loss"] == pytest.approx(out["losses"][2].item())
    assert set(third["weights"]) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert not torch.equal(ctx.captures["__epoch1"]["weights"]["0.weight"], third["weights"]["0.weight"])


def test_record_off_captures_nothing_per_epoch(ctx):
    """Walkthrough step 7: with Record node outputs off no epoch is captured."""
    _train(ctx, epochs=2)
    assert ctx.captures == {}


def test_a_scheduler_is_rebuilt_on_the_loop_optimizer_and_steps_each_epoch(ctx):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = registry()["LRScheduler"]().run(ctx, _params("LRScheduler", step_size=1, gamma=0.5),
                                                 optimizer=opt)["scheduler"]
    out = registry()["TrainingLoop"]().run(ctx, _params("TrainingLoop", epochs=3), model=model,
                                           dataloader=_loader(), optimizer=opt, loss_fn=nn.CrossEntropyLoss(),
                                           lr_scheduler=scheduler)
    assert out["metrics"]["lr_history"] == pytest.approx([0.1, 0.05, 0.025])


def _scheduled(ctx, epochs, **settings):
    """A TrainingLoop's run with an LRScheduler node's scheduler (``settings``) wired in."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = registry()["LRScheduler"]().run(ctx, _params("LRScheduler", **settings), optimizer=opt)["scheduler"]
    return registry()["TrainingLoop"]().run(ctx, _params("TrainingLoop", epochs=epochs), model=model,
                                            dataloader=_loader(), optimizer=opt, loss_fn=nn.CrossEntropyLoss(),
                                            lr_scheduler=scheduler)


def test_multistep_lr_keeps_its_milestones_and_the_rate_drops_at_each(ctx):
    """MultiStepLR's state keeps its milestones as a Counter, which the loop's rebuilt scheduler
    once dropped ("missing 1 required positional argument: 'milestones'"): with step_size 2 the
    milestones are epochs 2, 4, 6 and 8, and the rate is halved after each of them."""
    out = _scheduled(ctx, 7, type="MultiStepLR", step_size=2, gamma=0.5)
    assert out["metrics"]["lr_history"] == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125])


@pytest.mark.parametrize("kind", training.SCHEDULERS)
def test_every_schedule_steps_through_a_training_loop_as_it_would_on_its_own(ctx, kind):
    """Each schedule the LRScheduler node offers is rebuilt with all its settings (OneCycleLR's
    max_lr lives in the optimizer's groups, not in its state): the loop's rates are those of the
    same schedule stepped by hand."""
    settings = {"type": kind, "step_size": 1, "gamma": 0.5, "T_max": 3, "max_lr": 0.2, "total_steps": 10}
    out = _scheduled(ctx, 4, **settings)
    by_hand = registry()["LRScheduler"]().run(
        ctx, _params("LRScheduler", **settings),
        optimizer=torch.optim.SGD(_model().parameters(), lr=0.1))["scheduler"]
    rates = []
    for loss in out["losses"].tolist():
        rates.append(by_hand.optimizer.param_groups[0]["lr"])
        by_hand.optimizer.step()   # no gradients: changes nothing, but a scheduler steps after its optimizer
        by_hand.step(loss) if kind == "ReduceLROnPlateau" else by_hand.step()
    assert out["metrics"]["lr_history"] == pytest.approx(rates)


def test_training_loop_names_a_wrong_input(ctx):
    with pytest.raises(NodeError, match="needs a DataLoader on 'dataloader'"):
        _train(ctx, loader=[1, 2, 3][0])


def test_evaluate_model_counts_right_answers(ctx):
    model = nn.Linear(4, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[-1.0, 0, 0, 0], [1.0, 0, 0, 0]]))  # class 1 when x0 > 0
        model.bias.zero_()
    data = _data(40)
    out = registry()["EvaluateModel"]().run(ctx, _params("EvaluateModel", batch_size=16), model=model, dataset=data)
    assert out == {"accuracy": 1.0, "correct": 40, "total": 40}


def test_inference_runs_in_eval_mode_without_gradients(ctx):
    model = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.9))
    out = registry()["Inference"]().run(ctx, _params("Inference"), model=model, input=torch.ones(3, 4))
    assert out["output"].shape == (3, 2) and not out["output"].requires_grad
    assert torch.equal(out["output"], model[0](torch.ones(3, 4)).detach()) and model.training


@pytest.mark.skipif(not torch.cuda.is_available(), reason="fp16 with a GradScaler needs CUDA")
def test_fp16_on_cuda_trains_with_a_grad_scaler(ctx):
    ctx.device = torch.device("cuda")
    out = _train(ctx, epochs=2, precision="fp16", device="cuda")
    assert not ctx.logs and torch.isfinite(out["losses"]).all()
    assert out["grad_scaler_state"]["scale"] > 0
