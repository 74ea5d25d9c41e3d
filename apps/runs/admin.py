from django.contrib import admin

from .models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "graph_name", "status", "device", "created")
    list_filter = ("status", "owner")
    readonly_fields = ("nodes", "log", "options")

