from django.contrib import admin

from .models import ApiToken, Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "graph_name", "status", "device", "created")
    list_filter = ("status", "owner")
    readonly_fields = ("nodes", "log", "options")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "created")
    readonly_fields = ("digest",)
