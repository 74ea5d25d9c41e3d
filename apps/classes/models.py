"""The audit log of looks: every time a teacher opens a student's work (a graph page, a run,
its outputs), one row, so the administrator can see who looked at whose work and when."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

SAME_LOOK_S = 60   # the same page asked again within a minute (a click inside it) is one look


class Look(models.Model):
    WHAT = [("graph", "Graph"), ("details", "Node details"), ("viewer", "Viewer"), ("download", "Download"),
            ("run", "Run (API)"), ("outputs", "Outputs (API)")]

    teacher = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="looks_taken")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="looks_had")
    what = models.CharField(max_length=12, choices=WHAT)
    ref = models.CharField(max_length=64, help_text="The id of the graph tab or run looked at.")
    path = models.CharField(max_length=300, blank=True)
    when = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-when"]

    def __str__(self) -> str:
        return f"{self.teacher} looked at {self.student}'s {self.get_what_display().lower()} {self.ref}"

    @classmethod
    def record(cls, teacher, student_id: int, what: str, ref: str, path: str = "") -> None:
        """One row per look; the same look again within SAME_LOOK_S is the same row."""
        since = timezone.now() - timedelta(seconds=SAME_LOOK_S)
        if not cls.objects.filter(teacher=teacher, student_id=student_id, what=what, ref=ref, when__gte=since).exists():
            cls.objects.create(teacher=teacher, student_id=student_id, what=what, ref=ref, path=path)


class Handout(models.Model):
    """A lesson a teacher handed to a class: the graph as it was at that moment (the teacher's
    later edits do not reach it), its run settings inside. Each student's copy is a tab of theirs
    (HandoutCopy); Reset puts this document back."""

    classroom = models.ForeignKey("accounts.Classroom", on_delete=models.CASCADE, related_name="handouts")
    title = models.CharField(max_length=80)
    document = models.JSONField()
    teacher = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                related_name="handouts_given")
    source = models.CharField(max_length=120, blank=True, help_text="Where it came from: a lesson or a saved graph.")
    created = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.title} for {self.classroom}"


class HandoutCopy(models.Model):
    """A student's copy of a handout. The row stays when the student closes the tab (``tab``
    empty), so handing the same lesson to the class again never gives them a second copy."""

    handout = models.ForeignKey(Handout, on_delete=models.CASCADE, related_name="copies")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="handout_copies")
    tab = models.OneToOneField("editor.Tab", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["handout", "student"], name="one_copy_per_student")]

    def __str__(self) -> str:
        return f"{self.student}'s copy of {self.handout.title}"
