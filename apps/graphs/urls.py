from django.urls import path

from . import editor as v

urlpatterns = [
    path("", v.editor, name="editor"),
    path("prefs", v.prefs, name="prefs"),
    path("tabs/new", v.tab_new, name="tab-new"),
    path("tabs/open", v.tab_open, name="tab-open"),
    path("tabs/example", v.tab_example, name="tab-example"),
    path("tabs/import", v.tab_import, name="tab-import"),
    path("workspace/export", v.workspace_export, name="workspace-export"),
    path("runs/<str:run_id>/stop", v.run_stop, name="run-stop"),
    path("runs/<str:run_id>/delete", v.run_delete, name="run-delete"),
    path("runs/<str:run_id>/open", v.run_open, name="run-open"),
    path("<int:tab_id>/", v.editor_tab, name="editor-tab"),
    path("<int:tab_id>/rename", v.tab_rename, name="tab-rename"),
    path("<int:tab_id>/close", v.tab_close, name="tab-close"),
    path("<int:tab_id>/save", v.tab_save, name="tab-save"),
    path("<int:tab_id>/settings", v.tab_settings, name="tab-settings"),
    path("<int:tab_id>/undo", v.undo, name="undo"),
    path("<int:tab_id>/redo", v.redo, name="redo"),
    path("<int:tab_id>/layout", v.layout, name="layout"),
    path("<int:tab_id>/run", v.run, name="run"),
    path("<int:tab_id>/weights/reset", v.weights_reset, name="weights-reset"),
    path("<int:tab_id>/nodes/add", v.node_add, name="node-add"),
    path("<int:tab_id>/nodes/delete", v.nodes_delete, name="nodes-delete"),
    path("<int:tab_id>/nodes/<str:node_id>/params", v.node_params, name="node-params"),
    path("<int:tab_id>/nodes/<str:node_id>/grid", v.node_grid, name="node-grid"),
    path("<int:tab_id>/nodes/<str:node_id>/move", v.node_move, name="node-move"),
    path("<int:tab_id>/nodes/<str:node_id>/rename", v.node_rename, name="node-rename"),
    path("<int:tab_id>/connect", v.connect, name="connect"),
    path("<int:tab_id>/edges/<str:edge_id>/delete", v.edge_delete, name="edge-delete"),
]
