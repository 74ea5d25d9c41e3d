"""Routes under /api/execution/outputs/."""
from django.urls import path

from . import api

urlpatterns = [
    path("<uuid:run_id>", api.run_outputs, name="run-outputs"),
    path("<uuid:run_id>/value", api.port_value_by_query, name="port-value-query"),
    path("<uuid:run_id>/<str:node_id>/<str:port>", api.port_value, name="port-value"),
]
