"""The roles and the read rule they add: a teacher reads their own classes' students' work."""
from apps.accounts.roles import classes_of, is_teacher
from apps.graphs.models import Graph
from codefyui.access import readable_to, visible_to


def test_a_teacher_reads_their_students_work_and_changes_none_of_it(teacher, other_teacher, pupils, student):
    mine = Graph.objects.create(owner=pupils[0], name="amir's", document={})
    elsewhere = Graph.objects.create(owner=student, name="ada's", document={})
    assert is_teacher(teacher) and not is_teacher(pupils[0])
    assert list(readable_to(Graph.objects.all(), teacher)) == [mine]
    assert list(visible_to(Graph.objects.all(), teacher)) == []
    assert list(readable_to(Graph.objects.all(), other_teacher)) == []
    assert list(readable_to(Graph.objects.all(), pupils[1])) == []
    assert list(readable_to(Graph.objects.all(), student)) == [elsewhere]


def test_a_teacher_opens_only_their_own_classes(teacher, other_teacher, classroom, pupils):
    assert list(classes_of(teacher)) == [classroom]
    assert classroom not in classes_of(other_teacher)
    assert not classes_of(pupils[0]).exists()
