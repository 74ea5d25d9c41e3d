from django.contrib import admin

from .models import Run, ScriptNodes


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "graph_name", "status", "device", "created")
    list_filter = ("status", "owner")
    readonly_fields = ("nodes", "log", "options")



@admin.register(ScriptNodes)
class ScriptNodesAdmin(admin.ModelAdmin):
    """One switch: it can be added once and changed, never deleted."""
    list_display = ("__str__", "enabled")

    def has_add_permission(self, request):
        return not ScriptNodes.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False
