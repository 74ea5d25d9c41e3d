from django.contrib import admin

from .models import Graph, PackSwitch
from .nodes.packs import installed


@admin.register(Graph)
class GraphAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "updated")
    list_filter = ("owner",)
    search_fields = ("name", "owner__username")


@admin.register(PackSwitch)
class PackSwitchAdmin(admin.ModelAdmin):
    """One row per installed pack; untick enabled to hide its nodes from students."""

    list_display = ("name", "enabled")
    list_editable = ("enabled",)
    fields = ("name", "enabled")

    def get_queryset(self, request):
        PackSwitch.for_installed()  # a pack installed since the last visit gets its row
        return super().get_queryset(request).filter(name__in=installed())

    def has_add_permission(self, request) -> bool:
        return False  # rows come from what is installed

    def get_readonly_fields(self, request, obj=None):
        return ("name",)
