"""The editor's routes, named in the ``editor`` namespace (``editor:run``)."""
from django.urls import path

from .views import details, edges, inspector, nodes, page, runs, segments, settings, stylesheet, tabs

app_name = "editor"

urlpatterns = [
    path("", page.editor, name="index"),
    path("prefs", settings.prefs, name="prefs"),
    path("palette.css", stylesheet.palette_css, name="palette-css"),
    path("tabs/new", tabs.tab_new, name="tab-new"),
    path("tabs/open", tabs.tab_open, name="tab-open"),
    path("tabs/example", tabs.tab_example, name="tab-example"),
    path("tabs/import", tabs.tab_import, name="tab-import"),
    path("workspace/export", tabs.workspace_export, name="workspace-export"),
    path("runs/<uuid:run_id>/stop", runs.run_stop, name="run-stop"),
    path("runs/<uuid:run_id>/delete", runs.run_delete, name="run-delete"),
    path("runs/<uuid:run_id>/open", runs.run_open, name="run-open"),
    path("<int:tab_id>/", page.editor_tab, name="tab"),
    path("<int:tab_id>/rename", tabs.tab_rename, name="tab-rename"),
    path("<int:tab_id>/close", tabs.tab_close, name="tab-close"),
    path("<int:tab_id>/save", tabs.tab_save, name="tab-save"),
    path("<int:tab_id>/undo", tabs.undo, name="undo"),
    path("<int:tab_id>/redo", tabs.redo, name="redo"),
    path("<int:tab_id>/settings", settings.tab_settings, name="tab-settings"),
    path("<int:tab_id>/weights/reset", settings.weights_reset, name="weights-reset"),
    path("<int:tab_id>/run", runs.run, name="run"),
    path("<int:tab_id>/layout", nodes.layout, name="layout"),
    path("<int:tab_id>/nodes/add", nodes.node_add, name="node-add"),
    path("<int:tab_id>/nodes/delete", nodes.nodes_delete, name="nodes-delete"),
    path("<int:tab_id>/nodes/<str:node_id>/params", nodes.node_params, name="node-params"),
    path("<int:tab_id>/nodes/<str:node_id>/grid", nodes.node_grid, name="node-grid"),
    path("<int:tab_id>/nodes/<str:node_id>/move", nodes.node_move, name="node-move"),
    path("<int:tab_id>/nodes/<str:node_id>/rename", nodes.node_rename, name="node-rename"),
    path("<int:tab_id>/collapse", nodes.collapse, name="collapse"),
    path("<int:tab_id>/nodes/<str:node_id>/expand", nodes.expand, name="expand"),
    path("<int:tab_id>/connect", edges.connect, name="connect"),
    path("<int:tab_id>/edges/<str:edge_id>/delete", edges.edge_delete, name="edge-delete"),
    path("<int:tab_id>/segments/create", segments.segment_create, name="segment-create"),
    path("<int:tab_id>/segments/clear", segments.segment_clear, name="segment-clear"),
    path("<int:tab_id>/segments/<str:segment_id>/remove", segments.segment_remove, name="segment-remove"),
    path("<int:tab_id>/segments/<str:segment_id>/activate", segments.segment_activate, name="segment-activate"),
    # The Inspector's fragments and Node details. Node ids inside a block contain "/" ("block/inner").
    path("<int:tab_id>/edges/<str:edge_id>/", inspector.edge_summary, name="edge-summary"),
    path("<int:tab_id>/inspect/<path:node_id>/row", inspector.inspect_row, name="inspect-row"),
    path("<int:tab_id>/training/<path:node_id>/", inspector.training, name="training"),
    path("<int:tab_id>/details/<path:node_id>/", details.node_details, name="node-details"),
]
