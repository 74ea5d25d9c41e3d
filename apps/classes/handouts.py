"""Handing out a lesson: a shipped lesson or one of the teacher's saved graphs, as it is at that
moment (run settings inside: seed, recording, ...), becomes a tab of every student of the class,
in one transaction. A student's Reset puts the handed-out version back as one undo step.

A student who joins the class later gets the handouts of the last FRESH_DAYS days when they are
enrolled (``on_enrolment``); a student whose tabs are full is left out and named, and gets the
copy when the teacher hands out to the students who have none yet (``give``).
"""
from __future__ import annotations

import copy
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, Max
from django.urls import reverse
from django.utils import timezone

from apps.editor import workspace
from apps.editor.models import Tab
from apps.editor.tab_actions import TabAction
from apps.graphs.models import Graph
from codefyui import conf

from . import lookup
from .models import Handout, HandoutCopy

FRESH_DAYS = 7


def sources(teacher) -> list[tuple[str, list[tuple[str, str]]]]:
    """What a teacher may hand out, grouped for a select: the shipped lessons, then their saved graphs."""
    lessons = [(f"lesson:{e['slug']}", e["name"]) for e in workspace.examples()]
    graphs = [(f"graph:{pk}", str(name) or f"Graph {pk}")
              for pk, name in Graph.objects.filter(owner=teacher).values_list("pk", "name")]
    return [("Lessons", lessons), ("Your saved graphs", graphs)]


def snapshot(teacher, source: str) -> tuple[dict, str] | None:
    """The document ``source`` names now and its name, or None (an unknown lesson, a graph not theirs)."""
    kind, _, key = source.partition(":")
    if kind == "lesson":
        doc = workspace.example(key)
        return (doc, doc.get("name") or key) if doc is not None else None
    if kind == "graph" and key.isdigit():
        graph = Graph.objects.filter(owner=teacher, pk=int(key)).first()
        return (copy.deepcopy(graph.document), graph.name or f"Graph {graph.pk}") if graph else None
    return None


def hand_out(classroom, teacher, document: dict, title: str, source: str = "") -> tuple[Handout, list, list]:
    """A handout and a copy for every student of the class: (handout, given, left out for want of room)."""
    students = list(lookup.students(classroom))
    with transaction.atomic():
        handout = Handout.objects.create(classroom=classroom, teacher=teacher, document=document,
                                         title=title[:80], source=source[:120])
        given, full = give(handout, students)
    return handout, given, full


def give(handout: Handout, students: list) -> tuple[list, list]:
    """A new last tab, named after the handout, for each of ``students`` without a copy yet and
    with room for one more tab (CODEFYUI_MAX_TABS_PER_USER): a fixed number of queries however
    large the class. Returns (given, left out because their tabs are full)."""
    have = set(handout.copies.values_list("student_id", flat=True))
    wanting = [s for s in students if s.pk not in have]
    held = {owner: (n, last) for owner, n, last in Tab.objects.filter(owner__in=wanting).values("owner")
            .annotate(n=Count("id"), last=Max("position")).values_list("owner", "n", "last")}
    given = [s for s in wanting if held.get(s.pk, (0, 0))[0] < conf.MAX_TABS_PER_USER]
    full = [s for s in wanting if s not in given]
    with transaction.atomic():
        tabs = Tab.objects.bulk_create([
            Tab(owner=s, title=handout.title, position=(held.get(s.pk, (0, 0))[1] or 0) + 1,
                document=handout.document) for s in given])   # written out per row: no copy shares it
        HandoutCopy.objects.bulk_create([HandoutCopy(handout=handout, student_id=t.owner_id, tab=t) for t in tabs])
    return given, full


def on_enrolment(sender, instance, **kwargs) -> None:
    """A student put in a class gets the class's handouts of the last FRESH_DAYS days."""
    since = timezone.now() - timedelta(days=FRESH_DAYS)
    for handout in Handout.objects.filter(classroom_id=instance.classroom_id, created__gte=since).order_by("created"):
        give(handout, [instance.student])


def handout_of(tab: Tab) -> Handout | None:
    """The handout this tab is a copy of, if it is one."""
    found = HandoutCopy.objects.filter(tab=tab).select_related("handout").first()
    return found.handout if found else None


def reset(tab: Tab) -> bool:
    """Put the handed-out version back in the student's copy as one undo step (Undo brings their
    work back); False when there was nothing to change. The caller holds the tab's row."""
    handout = handout_of(tab)
    if handout is None:
        return False
    before = tab.revision
    tab.apply(copy.deepcopy(handout.document))
    return tab.revision != before


def reset_action(tab: Tab) -> list[TabAction]:
    """The editor's File menu offers Reset on a handed-out copy (``apps.editor.tab_actions``)."""
    if not HandoutCopy.objects.filter(tab_id=tab.pk).exists():
        return []
    return [TabAction(label="Reset to the handed-out version", url=reverse("classes:handout-reset", args=[tab.pk]),
                      help="Puts the lesson back as your teacher handed it out. Undo brings your changes back.")]
