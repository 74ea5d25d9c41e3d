"""The training nodes as plain PyTorch (each node in training.py names its function here as its
``to_python``; the module is apart only to keep training.py under 600 lines).

Each function writes what the node's ``run`` computes, in the same order, so that a seeded
script gives the same losses and the same accuracy: the TrainingLoop's loop is
``_Training.train_epoch`` and ``validate`` written out for one configuration (fp32, one batch
per step, no early stopping); other settings raise ``NotPlain`` and the engine runs the node.
"""
from __future__ import annotations

from ..python import NotPlain


def loss(cls, code, params):
    return {"loss_fn": code.value(f"nn.{params['type']}()", "loss_fn")}


def optimizer(cls, code, params, model):
    decay = f", weight_decay={params['weight_decay']!r}" if params["weight_decay"] else ""
    return {"optimizer": code.value(f"torch.optim.{params['type']}({model}.parameters(), lr={params['lr']!r}{decay})",
                                    "optimizer")}


def backward_once(cls, code, params, tensor):
    code.block(f"if {tensor}.is_floating_point() and {tensor}.requires_grad:\n"
               f"    {tensor}.sum().backward(retain_graph=True)  # every weight upstream now has its .grad")
    return {"tensor": tensor}


SCHEDULES = {   # LRScheduler's choices, as the node builds them
    "StepLR": "StepLR({o}, step_size={step_size}, gamma={gamma})",
    "CosineAnnealingLR": "CosineAnnealingLR({o}, T_max={T_max})",
    "ExponentialLR": "ExponentialLR({o}, gamma={gamma})",
    "ReduceLROnPlateau": "ReduceLROnPlateau({o}, factor={gamma})",
    "CosineAnnealingWarmRestarts": "CosineAnnealingWarmRestarts({o}, T_0={T_max})",
    "MultiStepLR": "MultiStepLR({o}, milestones={milestones}, gamma={gamma})",
    "OneCycleLR": "OneCycleLR({o}, max_lr={max_lr}, total_steps={total_steps})",
}


def lr_scheduler(cls, code, params, optimizer):
    if params["type"] == "ReduceLROnPlateau" and not params["gamma"] < 1:
        raise NotPlain("gamma must be below 1")   # the engine's message says so
    values = {k: repr(v) for k, v in params.items()}
    values["milestones"] = repr([params["step_size"] * i for i in range(1, 5)])
    made = SCHEDULES[params["type"]].format(o=optimizer, **values)
    return {"scheduler": code.value(f"torch.optim.lr_scheduler.{made}", "scheduler")}


def training_loop(cls, code, params, model, dataloader, optimizer, loss_fn, val_dataloader=None, lr_scheduler=None):
    if params["precision"] != "fp32" or params["accumulate_steps"] != 1:
        raise NotPlain("16-bit numbers and several batches per step are CodefyUI's loop")
    if params["device"] not in ("auto", "cpu"):
        raise NotPlain("it trains on a device the script does not ask for")
    epochs, clip, patience = params["epochs"], params["grad_clip_norm"], params["early_stopping_patience"]
    losses, val_losses, lrs = code.name("losses"), code.name("val_losses"), code.name("learning_rates")
    code.reseed()
    code.line(f"{losses}, {val_losses}, {lrs} = [], [], []")
    if patience:
        code.line("best_loss, best_epoch, waited, best_weights = math.inf, 0, 0, None  # for early stopping")
    code.line(f"for epoch in range(1, {epochs!r} + 1):")
    code.block(f"""    {model}.train()
    total, batches = 0.0, 0
    for inputs, targets in {dataloader}:
        {optimizer}.zero_grad()
        loss = {loss_fn}({model}(inputs), targets)
        loss.backward()""")
    if clip:
        code.line(f"        nn.utils.clip_grad_norm_({model}.parameters(), {clip!r})")
    code.block(f"""        {optimizer}.step()
        total += loss.item()
        batches += 1
    {losses}.append(total / batches)""")
    watched = losses
    if val_dataloader is not None:
        watched = val_losses
        code.block(f"""    {model}.eval()
    total, batches = 0.0, 0
    with torch.no_grad():
        for inputs, targets in {val_dataloader}:
            total += {loss_fn}({model}(inputs), targets).item()
            batches += 1
    {val_losses}.append(total / batches)""")
    code.line(f"    {lrs}.append({optimizer}.param_groups[0]['lr'])")
    if patience:
        code.block(f"""    if {watched}[-1] < best_loss:  # a better loss: remember these weights
        best_loss, best_epoch, waited = {watched}[-1], epoch, 0
        best_weights = {{k: v.detach().clone() for k, v in {model}.state_dict().items()}}
    else:
        waited += 1""")
    if lr_scheduler is not None:
        code.block(f"""    if isinstance({lr_scheduler}, torch.optim.lr_scheduler.ReduceLROnPlateau):
        {lr_scheduler}.step({watched}[-1])
    else:
        {lr_scheduler}.step()""")
    shown = f", validation loss {{{val_losses}[-1]}}" if val_dataloader is not None else ""
    code.line(f"    print(f\"epoch {{epoch}}: loss {{{losses}[-1]}}{shown}\")")
    if patience:
        code.block(f"""    if waited >= {patience!r}:  # no better loss for {patience!r} epochs: stop early
        break
if best_weights is not None:
    {model}.load_state_dict(best_weights)  # keep the best epoch's weights""")
    metrics = code.value(
        f"{{'final_train_loss': {losses}[-1], 'final_val_loss': {val_losses}[-1] if {val_losses} else None,\n"
        f"    'best_epoch': {watched}.index(min({watched})) + 1, 'total_epochs_run': len({losses}),\n"
        f"    'stopped_early': {'waited >= ' + repr(patience) if patience else 'False'}, 'lr_history': {lrs}}}", "metrics")
    return {"model": model, "metrics": metrics, "grad_scaler_state": "None",
            "losses": code.value(f"torch.tensor({losses}, dtype=torch.float32)", "loss_curve"),
            "val_losses": code.value(f"torch.tensor({val_losses}, dtype=torch.float32)", "val_loss_curve")}


def evaluate_model(cls, code, params, model, dataset):
    if params["device"] != "cpu":
        raise NotPlain("it evaluates on a device the script does not ask for")
    accuracy, correct, total = code.name("accuracy"), code.name("correct_count"), code.name("example_count")
    code.block(f"""was_training = {model}.training
{model}.eval()
{correct} = {total} = 0
with torch.no_grad():
    for inputs, targets in DataLoader({dataset}, batch_size={params['batch_size']!r}):
        scores = {model}(inputs)
        {correct} += int((scores.argmax(dim=1) == targets).sum())
        {total} += int(targets.numel())
{model}.train(was_training)
{accuracy} = {correct} / {total} if {total} else 0.0
print(f"accuracy {{{accuracy}}} ({{{correct}}} of {{{total}}} right)")""")
    return {"accuracy": accuracy, "correct": correct, "total": total}


def inference(cls, code, params, model, input):
    if params["device"] not in ("auto", "cpu"):
        raise NotPlain("it runs on a device the script does not ask for")
    output = code.name("output")
    code.block(f"""was_training = {model}.training
{model}.eval()
with torch.no_grad():
    {output} = {model}({input})
{model}.train(was_training)""")
    return {"output": output, "model": model}
