"""The wire to a run worker: tensors cross as shared memory, views and modules intact."""
from __future__ import annotations

import gc
import os
import socket
import threading

import pytest
import torch

from apps.runs.wire import Wire
from apps.runs.wire.arena import mapping_of


@pytest.fixture
def ends():
    a, b = socket.socketpair()
    yield Wire(a), Wire(b)
    a.close()
    b.close()


def test_a_tensor_crosses_as_shared_memory_not_as_bytes(ends, monkeypatch):
    sender, receiver = ends
    sizes = []
    real_sendall, real_sendmsg = socket.socket.sendall, socket.socket.sendmsg
    monkeypatch.setattr(socket.socket, "sendall", lambda self, data: (sizes.append(len(data)), real_sendall(self, data))[1])
    monkeypatch.setattr(socket.socket, "sendmsg", lambda self, buffers, *rest: (
        sizes.append(sum(len(b) for b in buffers)), real_sendmsg(self, buffers, *rest))[1])
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
    t = torch.rand(128, 256)   # over INLINE_MAX: in shared memory
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
        sender.send(torch.full((1 << 15,), float(i)))
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


# -- a worker's arena ----------------------------------------------------------------------

@pytest.fixture
def worker_and_server():
    """A worker's end (an arena of 1 MiB) and the server's, the arena offered as a worker does."""
    a, b = socket.socketpair()
    worker, server = Wire(a, keep_copies=True, arena_bytes=1 << 20), Wire(b)
    worker.send(("ready", 1, worker.offer()))
    server.recv()
    yield worker, server
    worker.close()
    server.close()


def _hand_back(worker, server):
    """What the server let go of reaches the worker (the server's next message carries it)."""
    gc.collect()
    server.send(("nothing",))
    while (message := worker.recv())[0] == "release":
        worker.handed_back(message[1])
    assert message == ("nothing",)


def test_a_worker_copies_into_its_arena_and_the_server_hands_the_slice_back(worker_and_server):
    worker, server = worker_and_server
    full = worker.arena.free_bytes()
    t = torch.rand(128, 256)                       # 128 KB: a slice, not inline
    worker.send(("captures", [t, t[1:]]))
    worker.send(("cache", t))
    (got, view), cached = server.recv()[1], server.recv()[1]
    assert torch.equal(got, t) and torch.equal(view, t[1:]) and torch.equal(cached, t)
    assert got.untyped_storage().data_ptr() == cached.untyped_storage().data_ptr() == view.untyped_storage().data_ptr()
    assert worker.arena.free_bytes() == full - t.untyped_storage().nbytes()
    t[0, 0] = 5.0
    assert got[0, 0].item() != 5.0                 # a copy: the worker's tensor is its own
    del got, view
    _hand_back(worker, server)
    assert worker.arena.free_bytes() < full        # the cache entry still holds it
    del cached
    _hand_back(worker, server)
    assert worker.arena.free_bytes() == full
    worker.forget()
    worker.send(("again", torch.full((128, 256), 2.0)))
    assert server.recv()[1].eq(2.0).all()          # the freed slice holds the new tensor


def test_a_slice_named_again_while_handed_back_stays_until_that_message_is_handed_back_too(worker_and_server):
    worker, server = worker_and_server
    full = worker.arena.free_bytes()
    t = torch.rand(64, 1024)
    worker.send(("captures", [t]))
    first = server.recv()[1][0]
    del first                                       # the store refused it at once
    gc.collect()
    worker.send(("cache", t))                       # the same storage, the same slice, named again
    second = server.recv()[1]
    _hand_back(worker, server)
    assert torch.equal(second, t)                   # not freed: the second message still holds it
    assert worker.arena.free_bytes() == full - t.untyped_storage().nbytes()
    del second
    _hand_back(worker, server)
    assert worker.arena.free_bytes() == full


def test_the_servers_tensors_outlive_a_worker_that_died(worker_and_server):
    """A worker that dies takes none of the captures the server keeps with it."""
    worker, server = worker_and_server
    t = torch.rand(256, 256)
    worker.send(("captures", [t]))
    got = server.recv()[1][0]
    worker.close()
    worker.arena = worker._copies = None
    gc.collect()
    assert torch.equal(got, t)
    del got
    gc.collect()
    with pytest.raises(EOFError):
        server.recv()   # its handed-back slices go nowhere, quietly


def test_a_slice_sent_back_to_its_worker_crosses_where_it_lies(worker_and_server):
    """A cache hit or a kept layer goes back to a worker as the slice it is, not as a copy."""
    worker, server = worker_and_server
    t = torch.rand(128, 256)
    worker.send(("cache", t))
    hit = server.recv()[1]
    server.send(("run", hit))
    back = worker.recv()[1]
    assert torch.equal(back, t)
    # the same slice of the arena (both ends are in this process here, so through one mapping of it)
    assert mapping_of(back.untyped_storage())[1] == mapping_of(hit.untyped_storage())[1]
    worker.send(("captures", [back]))               # served from the cache: the same storage again
    assert server.recv()[1][0].untyped_storage().data_ptr() == hit.untyped_storage().data_ptr()


def test_hand_backs_go_with_the_next_message_but_never_take_its_descriptors(worker_and_server):
    """A "release" goes out with the server's next message (one system call, one wake-up of
    the worker), or just before it when that message carries descriptors: they travel with a
    call's first byte, and must be read with their own message's head."""
    worker, server = worker_and_server
    full = worker.arena.free_bytes()
    sliced, big = torch.rand(128, 256), torch.rand(512, 1024)   # a slice; more than the arena holds
    worker.send(("captures", [sliced, big]))
    got_sliced, got_big = server.recv()[1]
    del got_sliced
    gc.collect()                                      # a hand-back waits for the server's next message
    server.send(("run", got_big))                     # fresh shared memory: a descriptor goes with it
    release = worker.recv()
    assert release[0] == "release"
    worker.handed_back(release[1])
    message = worker.recv()
    assert message[0] == "run" and torch.equal(message[1], big)
    assert worker.arena.free_bytes() == full


def test_a_full_arena_sends_fresh_shared_memory_and_small_storages_go_inline(worker_and_server):
    worker, server = worker_and_server
    big, small = torch.rand(512, 1024), torch.arange(10.0)   # 2 MB: more than the arena holds
    worker.send(("captures", [big, small]))
    got_big, got_small = server.recv()[1]
    assert torch.equal(got_big, big) and got_big.untyped_storage().is_shared()
    assert torch.equal(got_small, small) and not got_small.untyped_storage().is_shared()


def test_a_message_that_cannot_be_pickled_leaves_no_slice_in_use(worker_and_server):
    worker, server = worker_and_server
    full = worker.arena.free_bytes()
    with pytest.raises(Exception):
        worker.send(("captures", [torch.rand(128, 256), lambda: None]))
    assert worker.arena.free_bytes() == full


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_tensors_of_every_layout_and_flag_cross_as_they_were(ends):
    """Plain CPU tensors take the wire's short form (storage, dtype, offset, size, stride); the
    rest (a parameter, a conjugate or negative view, a sparse tensor) torch's own reductions."""
    sender, receiver = ends
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    weight = torch.ones(3, requires_grad=True)
    values = [base.t(), base[1:, ::2], torch.tensor(3, dtype=torch.int8), torch.ones(2, dtype=torch.bfloat16),
              weight, torch.nn.Parameter(torch.zeros(2)), torch.tensor([1 + 2j]).conj(),
              torch.eye(3).to_sparse(), torch.empty(0)]
    sender.send(("values", values))
    _, got = receiver.recv()
    for sent, came in zip(values, got):
        assert type(came) is type(sent) and came.dtype == sent.dtype and came.shape == sent.shape
        assert came.requires_grad == sent.requires_grad
        assert torch.equal(came.to_dense().resolve_conj(), sent.detach().to_dense().resolve_conj())
        if sent.layout == torch.strided:
            assert came.stride() == sent.stride()


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_storages_received_in_fresh_shared_memory_hold_no_descriptor(worker_and_server):
    """A server keeps thousands of captures: one open descriptor each ran it out of them (a
    process may open 1024 by default) and refused every student's connection."""
    worker, server = worker_and_server
    before = open_descriptors()
    sent = [torch.full((512, 1024), float(i)) for i in range(40)]   # 2 MB each: past the arena
    worker.send(("captures", sent))
    got = server.recv()[1]
    worker.forget()   # the worker's copies are let go when its run ends
    assert all(torch.equal(g, s) for g, s in zip(got, sent))
    assert open_descriptors() <= before + 2


def test_a_storage_received_in_fresh_shared_memory_crosses_again(worker_and_server):
    """A capture that came in its own memfd goes back to a worker (a cache hit) as a copy."""
    worker, server = worker_and_server
    worker.send(("captures", [torch.full((512, 1024), 7.0)]))
    got = server.recv()[1][0]
    server.send(("hits", [got, got[1:]]))
    back, view = worker.recv()[1]
    assert torch.equal(back, got) and torch.equal(view, got[1:])
    assert view.untyped_storage().data_ptr() == back.untyped_storage().data_ptr()
