from django.contrib import admin, messages

from .models import Run, ScriptNodes


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "graph_name", "status", "device", "created")
    list_filter = ("status", "owner")
    readonly_fields = ("nodes", "log", "options")


@admin.register(ScriptNodes)
class ScriptNodesAdmin(admin.ModelAdmin):
    """One switch: it can be added once and changed, never deleted. Beside it, whether this
    machine can build the sandbox scripts run in (without it they never run, whatever the switch)."""
    list_display = ("__str__", "enabled", "sandbox")
    readonly_fields = ("sandbox",)

    @admin.display(description="Sandbox")
    def sandbox(self, obj=None) -> str:
        from .sandbox import sandbox_problem
        return sandbox_problem() or "Ready: each script runs in a bubblewrap sandbox."

    def changelist_view(self, request, extra_context=None):
        """The list says whether scripts can run here, even before the switch's row exists."""
        from .sandbox import sandbox_problem
        if problem := sandbox_problem():
            self.message_user(request, problem, messages.WARNING)
        return super().changelist_view(request, extra_context)

    def has_add_permission(self, request):
        return not ScriptNodes.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False
