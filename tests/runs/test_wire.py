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


def test_a_tensor_crosses_as_shared_memory_not_as_bytes(ends, monkeypatch):
    sender, receiver = ends
    sizes = []
    real = socket.socket.sendall
    monkeypatch.setattr(socket.socket, "sendall", lambda self, data: (sizes.append(len(data)), real(self, data))[1])
    t = torch.arange(1 << 16, dtype=torch.float32).reshape(256, 256)
    sender.send(("capture", "node", "tensor", t, t[1:, 2:]))
    _, _, _, got, view = receiver.recv()
    assert torch.equal(got, t) and torch.equal(view, t[1:, 2:])
    assert got.untyped_storage().is_shared() and view.untyped_storage().data_ptr() == got.untyped_storage().data_ptr()
    assert max(sizes) < 4096   # 256 KB of floats, and no more than a few hundred bytes went through the socket
    t[0, 0] = 99.0             # the sender's tensor is its own still: what crossed is a copy
    assert got[0, 0].item() == 0.0


def test_a_storage_sent_twice_is_one_storage_at_the_other_end():
    """A worker's run output goes as a capture and as a cache entry: the server maps one storage."""
    a, b = socket.socketpair()
    sender, receiver = Wire(a, keep_copies=True), Wire(b)
    t = torch.rand(64, 64)
    sender.send(("capture", t))
    sender.send(("cache", t[3:]))
    first, second = receiver.recv()[1], receiver.recv()[1]
    assert first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr()
    assert torch.equal(second, t[3:])
    sender.forget()   # the run ended: the next send of it is a fresh copy
    sender.send(("capture", t))
    assert receiver.recv()[1].untyped_storage().data_ptr() != first.untyped_storage().data_ptr()
    a.close()
    b.close()


def test_a_dead_storages_copy_is_never_served_for_a_new_one():
    a, b = socket.socketpair()
    sender, receiver = Wire(a, keep_copies=True), Wire(b)
    for i in range(20):   # freed and allocated again, often at the same address
        sender.send(torch.full((4096,), float(i)))
        assert receiver.recv()[0].item() == float(i)
    a.close()
    b.close()


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
