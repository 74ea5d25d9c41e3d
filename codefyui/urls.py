"""URL wiring: the only place the project package names the apps' views."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from apps.accounts.forms import LoginForm
from apps.classes import api as classes_api
from apps.editor import api as editor_api
from apps.editor.views import home
from apps.graphs import api as graphs_api
from apps.runs import api as runs_api
from apps.runs import python_api

# The JSON API, named in the ``api`` namespace (``api:run``).
api_patterns = [
    path("graphs", graphs_api.graphs, name="graphs"),
    path("graphs/<int:pk>", graphs_api.graph_detail, name="graph"),
    path("graphs/<int:pk>/python", python_api.graph_python, name="graph-python"),
    path("graphs/python", python_api.document_python, name="document-python"),
    path("runs", runs_api.runs, name="runs"),
    path("runs/<uuid:run_id>", runs_api.run_detail, name="run"),
    path("runs/<uuid:run_id>/cancel", runs_api.run_cancel, name="run-cancel"),
    path("classes", classes_api.classes, name="classes"),
    path("classes/<int:class_id>", classes_api.class_detail, name="class"),
    path("health", editor_api.health, name="health"),
    path("execution/outputs/", include("apps.inspector.api_urls")),
    path("execution/outputs/", include("apps.stats.urls")),
]

urlpatterns = [
    path("", home.home, name="home"),
    path("graphs/import", home.import_graph, name="import-graph"),
    path("login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("editor/", include("apps.editor.urls")),
    path("classes/", include("apps.classes.urls")),
    path("api/", include((api_patterns, "api"))),
]

handler400 = "codefyui.api.bad_request"
handler403 = "codefyui.api.permission_denied"
handler404 = "codefyui.api.page_not_found"
handler500 = "codefyui.api.server_error"
