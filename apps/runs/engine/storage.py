"""The bytes a value holds in tensors, each storage counted once: views of one tensor, and
the same tensor reached twice, share their storage. A picture's PNG bytes (a PngImage, or
plain bytes) count too, once per bytes object. The capture store and the execution cache
budget their bytes this way."""
from __future__ import annotations

from typing import Any, Iterator

import torch
from torch.utils.data import DataLoader, Dataset

StorageKey = tuple[str, int]  # (device, address): unique among storages alive together


def tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in a value: itself, a module's parameters and buffers, a dataset's samples
    (a data loader's too), inside containers."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, torch.nn.Module):
        yield from value.parameters()
        yield from value.buffers()
    elif isinstance(value, (Dataset, DataLoader)):
        yield from tensors(vars(value))
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from tensors(v)


def blobs(value: Any) -> Iterator[bytes]:
    """Every bytes object in a value: a picture's PNG (anything with bytes ``data`` and a
    ``width``, such as a PngImage), plain bytes, inside containers."""
    if isinstance(value, bytes | bytearray):
        yield value
    elif isinstance(getattr(value, "data", None), bytes) and hasattr(value, "width"):
        yield value.data
    elif isinstance(value, dict):
        for v in value.values():
            yield from blobs(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from blobs(v)


def count_storages(value: Any, storages: dict[StorageKey, int]) -> None:
    """Add the value's storages (key -> bytes) to ``storages``; one already there adds nothing."""
    plain = isinstance(value, torch.Tensor)   # most captures: no container to walk, no picture to look for
    for t in (value,) if plain else tensors(value):
        storage = t.untyped_storage()
        device = "cpu" if t.is_cpu else str(t.device)   # str() of a device costs more than the rest
        storages.setdefault((device, storage.data_ptr()), storage.nbytes())
    if not plain:
        for blob in blobs(value):
            storages.setdefault(("bytes", id(blob)), len(blob))


class RecordingStopped(Exception):
    """A capture store's answer to a put that would take the run past the store's budget:
    nothing more of the run is kept. ``kept_bytes``: what the run keeps."""

    def __init__(self, kept_bytes: int):
        self.kept_bytes = kept_bytes
        super().__init__(f"recording stopped after {kept_bytes} bytes")
