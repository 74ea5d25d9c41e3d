"""The fair queue: round-robin across students."""
from codefyui.fairqueue import FairQueue


def test_a_students_second_run_waits_behind_every_other_students_first():
    queue = FairQueue()
    for owner, item in [("ada", "a1"), ("ada", "a2"), ("ada", "a3"), ("bob", "b1"), ("cy", "c1"), ("bob", "b2")]:
        queue.push(owner, item)
    assert queue.order() == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert [queue.place(i) for i in ("a1", "c1", "a3")] == [1, 3, 6] and queue.place("zz") is None
    assert [queue.pop() for _ in range(3)] == ["a1", "b1", "c1"]
    queue.push("cy", "c2")  # cy was served last: behind ada and bob again
    assert queue.order() == ["a2", "b2", "c2", "a3"] and queue.count("ada") == 2


def test_a_removed_or_returned_item_keeps_the_others_in_turn():
    queue = FairQueue()
    for owner, item in [("ada", "a1"), ("bob", "b1"), ("bob", "b2")]:
        queue.push(owner, item)
    assert queue.remove("b1") and not queue.remove("b1")
    first = queue.pop()
    queue.push_front("ada", first)
    assert queue.order() == ["a1", "b2"] and len(queue) == 2
