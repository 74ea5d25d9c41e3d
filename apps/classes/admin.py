from django.contrib import admin

from .models import Handout, HandoutCopy, Look


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


class HandoutCopyInline(admin.TabularInline):
    model = HandoutCopy
    fields = ("student", "tab")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Handout)
class HandoutAdmin(admin.ModelAdmin):
    """What each class was given: the document is the version a student's reset goes back to."""

    list_display = ("title", "classroom", "teacher", "source", "created")
    list_filter = ("classroom",)
    search_fields = ("title", "classroom__name", "teacher__username")
    readonly_fields = ("classroom", "teacher", "source", "created", "document")
    inlines = [HandoutCopyInline]

    def has_add_permission(self, request) -> bool:   # handed out from the class page, which makes the copies
        return False
