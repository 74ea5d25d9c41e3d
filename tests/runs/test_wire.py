"""The wire to a run worker: tensors cross as shared memory, views and modules intact."""
from __future__ import annotations

import socket
import threading

import pytest
import torch

from apps.runs.wire import Wire


@pytest.fixture
def ends():
    a, b = socket.socketpair()
    yield Wire(a), Wire(b)
    a.close()
    b.close()


def test_a_tensor_crosses_as_shared_memory_not_as_bytes(ends):
    sender, receiver = ends
    t = torch.arange(12.0).reshape(3, 4)
    sender.send(("capture", "node", "tensor", t, t[1:, 2:]))
    _, _, _, got, view = receiver.recv()
    assert torch.equal(got, t) and torch.equal(view, t[1:, 2:])
    got[0, 0] = 99.0  # one storage in shared memory, seen from both ends
    assert t[0, 0].item() == 99.0 and view.untyped_storage().data_ptr() == got.untyped_storage().data_ptr()


def test_modules_parameters_and_many_tensors_cross_in_one_message(ends):
    sender, receiver = ends
    layer = torch.nn.Linear(3, 2)
    many = [torch.full((2,), float(i)) for i in range(600)]  # more descriptors than one sendmsg carries
    thread = threading.Thread(target=sender.send, args=((layer, many, torch.empty(0), "text"),))
    thread.start()
    got_layer, got_many, empty, text = receiver.recv()
    thread.join()
    assert isinstance(got_layer.weight, torch.nn.Parameter) and got_layer.weight.requires_grad
    assert torch.equal(got_layer.weight, layer.weight) and [t[0].item() for t in got_many] == list(range(600))
    assert empty.numel() == 0 and text == "text"


def test_a_closed_end_reads_as_the_end(ends):
    sender, receiver = ends
    sender.close()
    with pytest.raises(EOFError):
        receiver.recv()


def test_a_storage_made_only_while_pickling_crosses(ends):
    """A generator pickles its state as a fresh tensor: its storage lives until the message has gone."""
    sender, receiver = ends
    generator = torch.Generator().manual_seed(7)
    sender.send(("capture", "node", "dataloader", generator))
    got = receiver.recv()[3]
    assert torch.equal(got.get_state(), generator.get_state())
