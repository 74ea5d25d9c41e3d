from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from apps.graphs import api as graphs_api
from apps.graphs import views as graphs_views
from apps.runs import api as runs_api

urlpatterns = [
    path("", graphs_views.home, name="home"),
    path("graphs/import", graphs_views.import_graph, name="import-graph"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("editor/", include("apps.graphs.urls")),
    path("editor/", include("apps.inspector.urls")),
    path("api/graphs", graphs_api.graphs, name="api-graphs"),
    path("api/graphs/<int:pk>", graphs_api.graph_detail, name="api-graph"),
    path("api/runs", runs_api.runs, name="api-runs"),
    path("api/runs/<uuid:run_id>", runs_api.run_detail, name="api-run"),
    path("api/runs/<uuid:run_id>/cancel", runs_api.run_cancel, name="api-run-cancel"),
    path("api/health", runs_api.health, name="api-health"),
    path("api/execution/outputs/", include("apps.inspector.api_urls")),
    path("api/execution/outputs/", include("apps.stats.urls")),
]

handler400 = "codefyui.api.bad_request"
handler403 = "codefyui.api.permission_denied"
handler404 = "codefyui.api.page_not_found"
handler500 = "codefyui.api.server_error"
