from django.contrib import admin, messages

from . import roster
from .models import ApiToken, Classroom, Enrolment


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "created")
    readonly_fields = ("digest",)


class EnrolmentInline(admin.TabularInline):
    model = Enrolment
    extra = 0
    autocomplete_fields = ("student",)
    verbose_name, verbose_name_plural = "student", "students"


@admin.register(Classroom)
class ClassroomAdmin(admin.ModelAdmin):
    """A class, its teachers and its students. A whole roster is added from the class's Students
    page (/classes/<id>/roster) or with ``manage.py importroster``."""

    list_display = ("name", "teacher_names", "student_count", "ended")
    list_filter = (("ended", admin.EmptyFieldListFilter),)
    search_fields = ("name", "teachers__username")
    filter_horizontal = ("teachers",)
    readonly_fields = ("ended",)
    inlines = (EnrolmentInline,)
    actions = ("end_classes", "reopen_classes")

    @admin.display(description="Teachers")
    def teacher_names(self, classroom: Classroom) -> str:
        return ", ".join(t.get_username() for t in classroom.teachers.all())

    @admin.display(description="Students")
    def student_count(self, classroom: Classroom) -> int:
        return classroom.enrolments.count()

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("teachers")

    @admin.action(description="End class (its students can no longer log in; their work is kept)")
    def end_classes(self, request, queryset):
        locked = sum(roster.end_class(classroom) for classroom in queryset)
        self.message_user(request, f"Ended {queryset.count()} class(es); {locked} student account(s) locked.",
                          messages.SUCCESS)

    @admin.action(description="Reopen class (its students can log in again)")
    def reopen_classes(self, request, queryset):
        opened = sum(roster.reopen_class(classroom) for classroom in queryset)
        self.message_user(request, f"Reopened {queryset.count()} class(es); {opened} student account(s) unlocked.",
                          messages.SUCCESS)
