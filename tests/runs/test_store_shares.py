"""One class cannot empty another's capture store: each class keeps its share, evicting only its
own runs (whole, oldest first); students without a class share the rest."""
from __future__ import annotations

import pytest
import torch

from apps.runs import shares
from apps.runs.engine.storage import RecordingStopped
from apps.runs.store import REST, MemoryCaptureStore, Share

MB = 2**20
A, B = Share("class-1"), Share("class-2")


def put_run(store, run_id, share, megabytes=1):
    store.open_run(run_id, share)
    store.put(run_id, "n", "tensor", torch.zeros(megabytes * MB // 4))
    store.close_run(run_id)


def held(store, *run_ids):
    return [run_id for run_id in run_ids if store.has_run(run_id)]


def test_a_class_filling_its_share_evicts_only_its_own_oldest_runs():
    store = MemoryCaptureStore(max_runs=20, max_bytes=8 * MB, class_share=25)   # 2 MB a class
    put_run(store, "b1", B)
    put_run(store, "b2", B)
    for i in range(5):
        put_run(store, f"a{i}", A)
    assert held(store, "a0", "a1", "a2", "a3", "a4") == ["a3", "a4"]
    assert held(store, "b1", "b2") == ["b1", "b2"]


def test_a_class_keeps_its_newest_runs_by_count_without_touching_another_class():
    store = MemoryCaptureStore(max_runs=3, max_bytes=0, class_share=25)
    put_run(store, "b1", B)
    for i in range(6):
        put_run(store, f"a{i}", A)
    assert held(store, *(f"a{i}" for i in range(6))) == ["a3", "a4", "a5"] and store.has_run("b1")


def test_students_without_a_class_share_the_rest():
    store = MemoryCaptureStore(max_runs=20, max_bytes=8 * MB, class_share=25)
    put_run(store, "a1", A)
    put_run(store, "a2", A)
    for i in range(8):   # the rest: 8 MB less class A's 2 MB
        put_run(store, f"r{i}", REST)
    assert held(store, *(f"r{i}" for i in range(8))) == ["r2", "r3", "r4", "r5", "r6", "r7"]
    assert held(store, "a1", "a2") == ["a1", "a2"]
    assert store.usage()["bytes"] == 8 * MB


def test_a_class_size_set_in_the_admin_overrides_the_setting():
    store = MemoryCaptureStore(max_runs=20, max_bytes=8 * MB, class_share=25)
    big = Share("class-1", max_mb=4)
    for i in range(6):
        put_run(store, f"a{i}", big)
    assert held(store, *(f"a{i}" for i in range(6))) == ["a2", "a3", "a4", "a5"]


def test_a_run_larger_than_its_class_share_stops_recording_and_evicts_no_other_class():
    store = MemoryCaptureStore(max_runs=20, max_bytes=8 * MB, class_share=25)
    put_run(store, "b1", B)
    store.open_run("big", A)
    store.put("big", "a", "tensor", torch.zeros(MB // 4))
    with pytest.raises(RecordingStopped):
        store.put("big", "b", "tensor", torch.zeros(2 * MB // 4))
    store.close_run("big")
    assert store.has_run("b1") and store.ports("big") == [("a", "tensor")]


def test_when_shares_add_up_to_more_than_the_store_the_class_that_ran_longest_ago_gives_back():
    store = MemoryCaptureStore(max_runs=20, max_bytes=4 * MB, class_share=50)   # 2 MB a class
    put_run(store, "c1", Share("class-3"), 2)   # an earlier lesson
    put_run(store, "b1", B)
    put_run(store, "a1", A, 2)
    assert held(store, "c1", "b1", "a1") == ["b1", "a1"]
    assert store.usage()["bytes"] <= 4 * MB


def test_no_share_setting_puts_classes_without_their_own_size_with_the_rest():
    store = MemoryCaptureStore(max_runs=20, max_bytes=2 * MB, class_share=0)
    put_run(store, "b1", B)
    put_run(store, "a1", A)
    put_run(store, "a2", A)
    assert held(store, "b1", "a1", "a2") == ["a1", "a2"]


def test_a_run_takes_the_share_of_its_owners_class(django_user_model):
    from apps.accounts.models import Classroom
    from apps.accounts.roles import enrol

    seven, nine = Classroom.objects.create(name="7B"), Classroom.objects.create(name="9C", store_mb=300)
    amir, bea, cleo = (django_user_model.objects.create_user(n) for n in ("amir", "bea", "cleo"))
    enrol(amir, seven)
    enrol(bea, nine)
    assert shares.of(amir.pk) == Share(f"class-{seven.pk}")
    assert shares.of(bea.pk) == Share(f"class-{nine.pk}", 300)
    assert shares.of(cleo.pk) == REST


@pytest.mark.django_db(transaction=True)
def test_a_students_run_is_kept_in_their_class_share(student, fresh_store, walkthrough):
    """The share is found when the run is queued; the store's writes ask no database."""
    from apps.accounts.models import Classroom
    from apps.accounts.roles import enrol
    from apps.graphs import document
    from apps.runs import service

    seven = Classroom.objects.create(name="7B")
    enrol(student, seven)
    run = service.wait_for(service.start_run(student, document.normalise(walkthrough)).pk)
    assert run.status == "succeeded" and fresh_store.ports(str(run.pk))
    assert fresh_store._runs[str(run.pk)].share == f"class-{seven.pk}"
