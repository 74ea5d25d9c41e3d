from django.contrib import admin

from .models import Graph


@admin.register(Graph)
class GraphAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "updated")
    list_filter = ("owner",)
    search_fields = ("name", "owner__username")
