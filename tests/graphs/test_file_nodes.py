"""ModelSaver, ModelLoader, CheckpointSaver and CheckpointLoader (apps/graphs/nodes/library/files.py)
on hand-made models, in a student's own files (My files)."""
from __future__ import annotations

import io
import os

import pytest
import torch
from torch import nn

from apps.graphs.nodes.base import NodeError, registry
from apps.runs.engine.files import UserFiles


@pytest.fixture
def files(ctx, tmp_path):
    ctx.files = UserFiles(tmp_path / "ada", max_bytes=2**20)
    return ctx.files


def node(type_key):
    return registry()[type_key]()


def params(type_key, **given):
    return {**{p.name: p.default for p in registry()[type_key].params}, **given}


def small_cnn(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))


def save(ctx, model, **given):
    return node("ModelSaver").run(ctx, params("ModelSaver", **given), model=model)


def load(ctx, model=None, **given):
    return node("ModelLoader").run(ctx, params("ModelLoader", **given), model=model)["model"]


def test_the_nodes_have_codefyuis_ports_and_params():
    declared = {key: ([p.name for p in registry()[key].inputs], [p.name for p in registry()[key].outputs],
                      {p.name: p.default for p in registry()[key].params})
                for key in ("ModelSaver", "ModelLoader", "CheckpointSaver", "CheckpointLoader")}
    assert declared == {
        "ModelSaver": (["model"], ["path", "model"],
                       {"path": "model_weights.pt", "save_mode": "state_dict", "format": "pytorch"}),
        "ModelLoader": (["model"], ["model"], {"path": "", "load_mode": "state_dict", "device": "auto", "strict": True}),
        "CheckpointSaver": (["model", "optimizer", "losses"], ["path", "model"], {"path": "checkpoint.pt", "epoch": 0}),
        "CheckpointLoader": (["model", "optimizer"], ["model", "optimizer", "epoch", "losses"],
                             {"path": "", "device": "auto"}),
    }
    assert all(registry()[k].category == "IO" and not registry()[k].cacheable for k in declared)


def test_a_saved_state_dict_loads_into_a_fresh_model_and_computes_the_same(ctx, files):
    original, fresh = small_cnn(seed=1).eval(), small_cnn(seed=2).eval()
    saved = save(ctx, original)
    assert saved == {"path": "model_weights.pt", "model": original}
    loaded = load(ctx, fresh, path="model_weights.pt")
    x = torch.randn(2, 1, 4, 4)
    assert loaded is fresh and torch.equal(loaded(x), original(x))


def test_a_full_model_of_torch_layers_round_trips_without_a_model_wired(ctx, files):
    original = small_cnn(seed=3).eval()
    save(ctx, original, path="whole.pt", save_mode="full_model")
    loaded = load(ctx, path="whole.pt", load_mode="full_model")
    x = torch.randn(1, 1, 4, 4)
    assert isinstance(loaded, nn.Sequential) and loaded is not original and torch.equal(loaded(x), original(x))


def test_full_model_refuses_a_layer_class_the_loader_would_not_rebuild(ctx, files):
    class Mine(nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(NodeError, match="has Mine; choose save_mode state_dict"):
        save(ctx, nn.Sequential(nn.Linear(2, 2), Mine()), save_mode="full_model")
    assert files.list() == []


def test_a_file_that_would_run_code_is_refused_and_nothing_runs(ctx, files, tmp_path):
    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'ran'}",))

    buffer = io.BytesIO()
    torch.save({"weight": Boom()}, buffer)
    files.save("from_a_stranger.pt", buffer.getvalue())
    for load_mode in ("state_dict", "full_model"):
        with pytest.raises(NodeError, match=r"holds posix.system, which this server never loads"):
            load(ctx, nn.Linear(2, 2), path="from_a_stranger.pt", load_mode=load_mode)
    assert not (tmp_path / "ran").exists()


def test_a_file_that_is_not_a_pytorch_file_says_so(ctx, files):
    files.save("notes.pt", b"these are my notes, not weights")
    with pytest.raises(NodeError, match="'notes.pt' is not a PyTorch file this node can read"):
        load(ctx, nn.Linear(2, 2), path="notes.pt")


def test_strict_refuses_weights_of_another_shape_naming_what_differs(ctx, files):
    save(ctx, nn.Linear(4, 2))
    with pytest.raises(NodeError, match=r"do not fit the wired model \(Linear\): size mismatch for weight"):
        load(ctx, nn.Linear(3, 2), path="model_weights.pt")


def test_without_strict_missing_weights_are_left_as_they_are_and_logged(ctx, files):
    save(ctx, nn.Sequential(nn.Linear(2, 2)))
    target = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    load(ctx, target, path="model_weights.pt", strict=False)
    assert ctx.logs == ["ModelLoader: strict is off, so these did not match and were left as they are: "
                        "1.weight, 1.bias"]


def test_a_file_larger_than_the_tensor_limit_is_refused(ctx, files):
    save(ctx, nn.Linear(10, 10))
    ctx.size_limit = 100
    with pytest.raises(NodeError, match="Loading 'model_weights.pt' would need 110 elements"):
        load(ctx, nn.Linear(10, 10), path="model_weights.pt")


def test_state_dict_mode_needs_a_model_wired_in(ctx, files):
    save(ctx, nn.Linear(2, 2))
    with pytest.raises(NodeError, match="wire one into 'model'"):
        load(ctx, path="model_weights.pt")


def test_safetensors_is_offered_and_says_it_is_not_available_here(ctx, files):
    with pytest.raises(NodeError, match="safetensors format is not available on this server"):
        save(ctx, nn.Linear(2, 2), format="safetensors")


@pytest.mark.parametrize("path", ["../x.pt", "/etc/passwd", "models/../../x.pt"])
def test_paths_outside_the_students_files_are_refused_by_every_node(ctx, files, path):
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    attempts = [lambda: save(ctx, model, path=path), lambda: load(ctx, model, path=path),
                lambda: node("CheckpointSaver").run(ctx, params("CheckpointSaver", path=path), model=model,
                                                    optimizer=optimizer),
                lambda: node("CheckpointLoader").run(ctx, params("CheckpointLoader", path=path), model=model,
                                                     optimizer=optimizer)]
    for attempt in attempts:
        with pytest.raises(NodeError, match=r"^'path' = .*(leaves your files|path on the server)"):
            attempt()


def test_a_save_past_the_quota_is_refused_and_leaves_no_file(ctx, files):
    files.max_bytes = 4096
    with pytest.raises(NodeError, match="does not fit in your files.*CODEFYUI_USER_FILES_MAX_MB"):
        save(ctx, nn.Linear(64, 64))
    assert files.list() == [] and sorted(os.listdir(files.folder)) == [".lock", ".usage"]


def test_a_save_past_the_file_count_is_refused_naming_the_setting_but_saving_over_one_is_not(ctx, files):
    files.max_files = 1
    save(ctx, nn.Linear(2, 2), path="first.pt")
    with pytest.raises(NodeError, match="you already have 1 file in My files.*CODEFYUI_USER_FILES_MAX_FILES"):
        save(ctx, nn.Linear(2, 2), path="second.pt")
    save(ctx, nn.Linear(3, 3), path="first.pt")
    assert [f.name for f in files.list()] == ["first.pt"]


# -- checkpoints ----------------------------------------------------------------------------------

def train(model, optimizer, steps):
    x = torch.linspace(-1, 1, 24).reshape(8, 3)
    y = x.sum(dim=1, keepdim=True) * 0.5 - 0.2
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return torch.tensor(losses)


def mlp(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))


def test_training_resumed_from_a_checkpoint_goes_on_exactly_as_uninterrupted(ctx, files):
    uninterrupted = mlp(seed=0)
    train(uninterrupted, torch.optim.Adam(uninterrupted.parameters(), lr=0.05), steps=6)

    first = mlp(seed=0)
    first_optimizer = torch.optim.Adam(first.parameters(), lr=0.05)
    losses = train(first, first_optimizer, steps=3)
    saved = node("CheckpointSaver").run(ctx, params("CheckpointSaver", epoch=3), model=first,
                                        optimizer=first_optimizer, losses=losses)
    assert saved["path"] == "checkpoint.pt"

    resumed = mlp(seed=99)  # other weights, a fresh optimizer: the checkpoint brings back both
    resumed_optimizer = torch.optim.Adam(resumed.parameters(), lr=0.05)
    loaded = node("CheckpointLoader").run(ctx, params("CheckpointLoader", path="checkpoint.pt"), model=resumed,
                                          optimizer=resumed_optimizer)
    assert loaded["model"] is resumed and loaded["optimizer"] is resumed_optimizer
    assert loaded["epoch"] == 3 and torch.equal(loaded["losses"], losses)
    train(resumed, resumed_optimizer, steps=3)
    for a, b in zip(uninterrupted.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


def test_a_checkpoint_into_an_optimizer_of_another_model_is_refused(ctx, files):
    model = mlp(0)
    node("CheckpointSaver").run(ctx, params("CheckpointSaver"), model=model,
                                optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    other = mlp(1)
    with pytest.raises(NodeError, match="does not update this model's weights"):
        node("CheckpointLoader").run(ctx, params("CheckpointLoader", path="checkpoint.pt"), model=model,
                                     optimizer=torch.optim.SGD(other.parameters(), lr=0.1))
    with pytest.raises(NodeError, match="saved with a SGD optimizer, but a Adam is wired in"):
        node("CheckpointLoader").run(ctx, params("CheckpointLoader", path="checkpoint.pt"), model=model,
                                     optimizer=torch.optim.Adam(model.parameters()))


def test_a_weights_file_is_no_checkpoint(ctx, files):
    model = mlp(0)
    save(ctx, model, path="weights.pt")
    with pytest.raises(NodeError, match="'weights.pt' is not a training checkpoint"):
        node("CheckpointLoader").run(ctx, params("CheckpointLoader", path="weights.pt"), model=model,
                                     optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
