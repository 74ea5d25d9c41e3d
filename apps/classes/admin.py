from django.contrib import admin

from .models import Look


@admin.register(Look)
class LookAdmin(admin.ModelAdmin):
    """The audit log: read-only, for the administrator."""

    list_display = ("when", "teacher", "student", "what", "ref")
    list_filter = ("what", "teacher")
    search_fields = ("teacher__username", "student__username", "ref")
    date_hierarchy = "when"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
