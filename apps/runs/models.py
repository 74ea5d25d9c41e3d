import uuid

from django.conf import settings
from django.db import models

from apps.graphs.nodes.base import SCRIPTS_OFF
from codefyui import conf


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        INTERRUPTED = "interrupted"

    UNFINISHED = (Status.QUEUED, Status.RUNNING)
    paused = False   # not stored: a running run its worker pool paused for a stand-in (service.current says)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    graph = models.ForeignKey("graphs.Graph", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    graph_name = models.CharField(max_length=200, blank=True)
    # Where it was started: "tab:<id>" for an editor tab, so Inspect shows it only on that tab
    # (or on a tab of its saved graph); empty for the JSON API and the CLI.
    origin = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    options = models.JSONField(default=dict)        # record, verbose, gradients, seed, deterministic, device
    device = models.CharField(max_length=32, blank=True)   # the device actually used
    error = models.TextField(blank=True)
    nodes = models.JSONField(default=dict)          # node id -> {status, error?, summary?, seconds?}
    log = models.JSONField(default=list)            # run log lines: warnings and Print output
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Run {str(self.id)[:8]} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in self.UNFINISHED

    @property
    def duration(self) -> float | None:
        if self.started and self.finished:
            return (self.finished - self.started).total_seconds()
        return None


class ScriptNodes(models.Model):
    """The administrator's switch for script nodes (PythonScript), one row; CODEFYUI_SCRIPT_NODES=1
    turns them on whatever it says."""

    enabled = models.BooleanField(default=False, help_text=(
        "Let PythonScript nodes run on this server. Each script runs in a sandbox (bubblewrap) in a child "
        "process of its run worker: it sees only Python and its packages, read-only, and a scratch folder of its "
        "own; no network, no other process, and CPU, memory, file and time limits."))

    class Meta:
        verbose_name = verbose_name_plural = "Script nodes"

    def __str__(self) -> str:
        return "Script nodes are on" if self.enabled else "Script nodes are off"

    @classmethod
    def on(cls) -> bool:
        return conf.SCRIPT_NODES or cls.objects.filter(enabled=True).exists()

    @classmethod
    def refusal(cls) -> str | None:
        """Why a script node cannot run on this server now, or None: the switch is off, or the
        machine cannot build the sandbox scripts run in (they never run outside it)."""
        if not cls.on():
            return SCRIPTS_OFF
        from .sandbox import sandbox_problem   # torch: imported only when scripts are asked about
        return sandbox_problem()
