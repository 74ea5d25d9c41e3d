from django.urls import path

from . import details, views

urlpatterns = [
    path("<int:tab_id>/details/<path:node_id>/", details.node_details, name="node-details"),
    path("<int:tab_id>/edges/<str:edge_id>/", views.edge_summary, name="edge-summary"),
    # Node ids inside a block contain "/" ("block/inner").
    path("<int:tab_id>/inspect/<path:node_id>/row", views.inspect_row, name="inspect-row"),
    path("<int:tab_id>/inspect/<path:node_id>/", views.inspect_panel, name="inspect-panel"),
]
