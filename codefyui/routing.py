"""WebSocket routes. Live run progress joins here with the editor."""
websocket_urlpatterns: list = []
