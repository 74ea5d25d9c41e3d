"""Saving and loading models and training checkpoints in the student's own files (My files).

Files are named by a plain file name in the student's folder on the server, never a server
path (``ctx.user_file``, ``ctx.save_user_file``). Loading never unpickles an arbitrary object:
every file is read with torch's ``weights_only`` loader, which rebuilds only tensors, numbers,
text, lists and dicts, plus, for a whole model, the layer classes of torch.nn and of this
product's catalogue and packs (``loadable_layers``). A file naming anything else (a function, a
class of its author's own) is refused with a message, since loading it would run its code.
"""
from __future__ import annotations

import io
import pickle
import re
import threading
from typing import Any

import torch
from torch import nn

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode

CATEGORY = "IO"
DEVICES = ("auto", "cpu", "cuda", "mps")
MODES = ("state_dict", "full_model")
FORMATS = ("pytorch", "safetensors")
DEVICE_HELP = "Where the model goes: auto is the run's device"
PATH_HELP = "A file of My files (the folder of your own files on the server), such as {}"
_LOADING = threading.Lock()  # torch's allowlist of safe globals is process-wide: one load at a time


# -- reading and writing files ---------------------------------------------------------------

def loadable_layers() -> list[type[nn.Module]]:
    """The module classes a whole model may be rebuilt from: torch.nn's layers and those of
    this product's catalogue and packs (their code is the server's, never the file's)."""
    found, todo = set(), [nn.Module]
    while todo:
        for cls in todo.pop().__subclasses__():
            if cls not in found:
                found.add(cls)
                todo.append(cls)
    return [c for c in found if c.__module__.startswith(("torch.nn.modules.", "apps.graphs.", "codefyui_"))]


def save(ctx, params: dict[str, Any], value: Any) -> str:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return ctx.save_user_file(params["path"], buffer.getvalue(), "path")


def load(ctx, params: dict[str, Any]) -> Any:
    """A file of the student's, read safely onto the CPU."""
    path = ctx.user_file(params["path"], "path")
    name = path.name
    try:
        with _LOADING, torch.serialization.safe_globals(loadable_layers()):
            found = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # whatever a malformed file makes the unpickler raise
        named = re.search(r"GLOBAL ([\w.]+)", str(exc)) if isinstance(exc, pickle.UnpicklingError) else None
        if named is None:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise NodeError(f"'{name}' is not a PyTorch file this node can read ({first[:200]})") from None
        raise NodeError(f"'{name}' holds {named.group(1)}, which this server never loads from a file (loading "
                        "it would run code the file names). Files may hold tensors, state_dicts, checkpoints "
                        "and models built from torch.nn's layers: ask for the model saved as a state_dict, "
                        "and load it into a model built here") from None
    ctx.check_size(elements(found), f"Loading '{name}'")
    return found


def elements(value: Any) -> int:
    """How many numbers the tensors in a loaded file hold together."""
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, nn.Module):
        value = value.state_dict()
    if isinstance(value, dict):
        value = list(value.values())
    return sum(elements(v) for v in value) if isinstance(value, (list, tuple)) else 0


def load_weights(model: nn.Module, state: Any, name: str, strict: bool = True) -> list[str]:
    """Load a state_dict into the model itself; the keys it left out (when not strict)."""
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise NodeError(f"'{name}' holds no state_dict (a name → tensor map of a model's weights)")
    try:
        result = model.load_state_dict(state, strict=strict)
    except RuntimeError as exc:
        details = "; ".join(line.strip() for line in str(exc).splitlines()[1:] if line.strip())
        raise NodeError(f"The weights in '{name}' do not fit the wired model ({type(model).__name__}): "
                        f"{details[:600]}") from None
    return [*result.missing_keys, *result.unexpected_keys]


def as_model(value: Any, node: str) -> nn.Module:
    if not isinstance(value, nn.Module):
        raise NodeError(f"{node} needs a model (a network of layers) on 'model', but received a "
                        f"{type(value).__name__}")
    return value


def device(ctx, name: str) -> torch.device:
    if name == "auto":
        return ctx.device
    if name == "cpu" or (name == "cuda" and torch.cuda.is_available()) or (
            name == "mps" and torch.backends.mps.is_available()):
        return torch.device(name)
    ctx.log(f"No {name} on this server: the model stays on {ctx.device}")
    return ctx.device


# -- the nodes ---------------------------------------------------------------------------------

@register
class ModelSaver(LibraryNode):
    type = "ModelSaver"
    category = CATEGORY
    description = "Saves a model's weights in your files, to load them again later."
    details = (
        "Writes the model to a file of My files (your own folder on the server; the editor's File "
        "menu opens it, to download, upload or delete files). state_dict saves the weights only: "
        "ModelLoader puts them back into a model of the same layers, which is the usual way. "
        "full_model saves the layers too, so ModelLoader needs no model wired in; it works for "
        "models built from torch.nn's layers. A file of the same name is replaced, and a file that "
        "would not fit in your space (CODEFYUI_USER_FILES_MAX_MB) is not written at all. The model "
        "passes on unchanged. The safetensors format is not available on this server."
    )
    inputs = (Port("model", "MODEL"),)
    outputs = (Port("path", "STRING"), Port("model", "MODEL"))
    params = (
        Param("path", "string", "model_weights.pt", PATH_HELP.format("model_weights.pt")),
        Param("save_mode", "select", "state_dict", "state_dict: the weights only; full_model: the layers too",
              options=MODES),
        Param("format", "select", "pytorch", "File format; safetensors is not available on this server",
              options=FORMATS),
    )
    cacheable = False

    def run(self, ctx, params, model):
        model = as_model(model, self.type)
        if params["format"] == "safetensors":
            raise NodeError("The safetensors format is not available on this server (its package is not "
                            "installed); choose format pytorch")
        if params["save_mode"] == "state_dict":
            return {"path": save(ctx, params, model.state_dict()), "model": model}
        foreign = sorted(cls.__name__ for cls in {type(m) for m in model.modules()} - set(loadable_layers()))
        if foreign:
            raise NodeError(f"save_mode full_model saves only models built from torch.nn's layers, and this one "
                            f"has {', '.join(foreign)}; choose save_mode state_dict")
        return {"path": save(ctx, params, model), "model": model}


@register
class ModelLoader(LibraryNode):
    type = "ModelLoader"
    category = CATEGORY
    description = "Loads a model's weights from your files."
    details = (
        "Reads a file of My files (your own folder on the server: saved there by ModelSaver, or "
        "uploaded on the My files page, such as a .pt file from your teacher). state_dict puts the "
        "weights into the model wired into 'model' (it must have the same layers; strict also "
        "refuses weights with other names); full_model loads a whole model saved with its layers, "
        "built from torch.nn's layers only. Files are read safely: one that would run code when "
        "loaded is refused."
    )
    inputs = (Port("model", "MODEL", optional=True),)
    outputs = (Port("model", "MODEL"),)
    params = (
        Param("path", "string", "", PATH_HELP.format("model_weights.pt")),
        Param("load_mode", "select", "state_dict", "state_dict: into the wired model; full_model: a whole model",
              options=MODES),
        Param("device", "select", "auto", DEVICE_HELP, options=DEVICES),
        Param("strict", "bool", True, "The file's weights and the model's must match name for name"),
    )
    cacheable = False

    def run(self, ctx, params, model=None):
        found = load(ctx, params)
        name = params["path"].strip()
        if params["load_mode"] == "full_model":
            if not isinstance(found, nn.Module):
                raise NodeError(f"'{name}' holds no whole model (perhaps a state_dict): set load_mode to "
                                "state_dict and wire the model to load it into")
            return {"model": found.to(device(ctx, params["device"]))}
        if model is None:
            raise NodeError("load_mode state_dict loads weights into a model: wire one into 'model' (such as a "
                            "SequentialModel), or set load_mode to full_model")
        model = as_model(model, self.type)
        if isinstance(found, nn.Module):
            raise NodeError(f"'{name}' holds a whole model: set load_mode to full_model")
        left_out = load_weights(model, found, name, params["strict"])
        if left_out:
            ctx.log(f"ModelLoader: strict is off, so these did not match and were left as they are: "
                    f"{', '.join(left_out)}")
        return {"model": model.to(device(ctx, params["device"]))}


@register
class CheckpointSaver(LibraryNode):
    type = "CheckpointSaver"
    category = CATEGORY
    description = "Saves a training checkpoint in your files: the model, the optimizer, the epoch and the losses."
    details = (
        "A checkpoint lets training stop and go on later exactly where it was: besides the model's "
        "weights it keeps the optimizer's state (Adam's running averages, SGD's momentum), the epoch "
        "number and the loss history. CheckpointLoader restores all of them. The file goes in My "
        "files (your own folder on the server); the model passes on unchanged."
    )
    inputs = (Port("model", "MODEL"), Port("optimizer", "OPTIMIZER"), Port("losses", optional=True))
    outputs = (Port("path", "STRING"), Port("model", "MODEL"))
    params = (
        Param("path", "string", "checkpoint.pt", PATH_HELP.format("checkpoint.pt")),
        Param("epoch", "int", 0, "The epoch number kept in the checkpoint", min=0),
    )
    cacheable = False

    def run(self, ctx, params, model, optimizer, losses=None):
        model = as_model(model, self.type)
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise NodeError(f"CheckpointSaver needs an optimizer on 'optimizer', but received a "
                            f"{type(optimizer).__name__}")
        checkpoint = {"epoch": params["epoch"], "model_state_dict": model.state_dict(),
                      "optimizer_state_dict": optimizer.state_dict(), "optimizer_type": type(optimizer).__name__}
        if losses is not None:
            checkpoint["losses"] = losses.detach().float().cpu()
        return {"path": save(ctx, params, checkpoint), "model": model}


@register
class CheckpointLoader(LibraryNode):
    type = "CheckpointLoader"
    category = CATEGORY
    description = "Loads a training checkpoint from your files, to go on training where it stopped."
    details = (
        "Reads a checkpoint of My files, as CheckpointSaver wrote it, and puts the weights into the "
        "wired model and the optimizer's state (and its learning rate) into the wired optimizer, so "
        "the next training steps are the ones the interrupted training would have taken. The "
        "optimizer must be made from the same model, and be of the kind the checkpoint was saved "
        "with. Also gives the saved epoch number and loss history."
    )
    inputs = (Port("model", "MODEL"), Port("optimizer", "OPTIMIZER"))
    outputs = (Port("model", "MODEL"), Port("optimizer", "OPTIMIZER"), Port("epoch", "SCALAR"), Port("losses"))
    params = (
        Param("path", "string", "", PATH_HELP.format("checkpoint.pt")),
        Param("device", "select", "auto", DEVICE_HELP, options=DEVICES),
    )
    cacheable = False

    def run(self, ctx, params, model, optimizer):
        model = as_model(model, self.type)
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise NodeError(f"CheckpointLoader needs an optimizer on 'optimizer', but received a "
                            f"{type(optimizer).__name__}")
        weights = {id(p) for p in model.parameters()}
        if not all(id(p) in weights for group in optimizer.param_groups for p in group["params"]):
            raise NodeError("The wired optimizer does not update this model's weights: make the Optimizer from "
                            "the same model that goes into CheckpointLoader")
        found, name = load(ctx, params), params["path"].strip()
        if not isinstance(found, dict) or not {"model_state_dict", "optimizer_state_dict"} <= found.keys():
            raise NodeError(f"'{name}' is not a training checkpoint (CheckpointSaver writes those); to load a "
                            "model's weights only, use ModelLoader")
        saved_with = found.get("optimizer_type", type(optimizer).__name__)
        if saved_with != type(optimizer).__name__:
            raise NodeError(f"'{name}' was saved with a {saved_with} optimizer, but a {type(optimizer).__name__} "
                            f"is wired in: choose {saved_with} in the Optimizer node")
        load_weights(model, found["model_state_dict"], name)
        model.to(device(ctx, params["device"]))  # in place: the optimizer keeps the same weights
        try:
            optimizer.load_state_dict(found["optimizer_state_dict"])
        except (ValueError, KeyError) as exc:
            raise NodeError(f"The optimizer state in '{name}' does not fit the wired optimizer: {exc}") from None
        losses = found.get("losses")
        return {"model": model, "optimizer": optimizer, "epoch": int(found.get("epoch", 0)),
                "losses": losses if isinstance(losses, torch.Tensor) else torch.tensor([])}
