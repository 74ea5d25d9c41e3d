"""Stats routes; the project includes them under /api/execution/outputs/."""
from django.urls import path

from . import api

urlpatterns = [
    path("<str:run_id>/stats", api.port_stats_by_query, name="port-stats-query"),
    path("<str:run_id>/<str:node_id>/<str:port>/stats", api.port_stats, name="port-stats"),
]
