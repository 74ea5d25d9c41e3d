"""WebSocket routes."""
from django.urls import path

from apps.runs.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
]
