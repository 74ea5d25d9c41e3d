"""Routes under /api/execution/outputs/."""
from django.urls import path

from . import api

urlpatterns = [
    path("<str:run_id>", api.run_outputs, name="run-outputs"),
    path("<str:run_id>/value", api.port_value_by_query, name="port-value-query"),
    path("<str:run_id>/<str:node_id>/<str:port>", api.port_value, name="port-value"),
]
