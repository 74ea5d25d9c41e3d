"""The Package Center and Plugin Center: pages listing the installed packs (and, in the Package
Center, the datasets and tokenizer encodings on this server); staff switch a pack on or off for
the server, and anyone opens an example of an enabled pack as a new tab."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.graphs.document import DocumentError
from apps.graphs.models import PackSwitch
from apps.graphs.nodes.packs import installed
from codefyui.access import find_visible

from .. import centers, workspace
from ..models import Tab
from .tabs import open_tab


def _page(request: HttpRequest, plugins_only: bool) -> HttpResponse:
    tab = find_visible(Tab.objects, request.user, request.GET.get("tab", ""))  # where Back leads
    data = None if plugins_only else centers.datasets(request.user)
    return render(request, "editor/centers.html", {"tab": tab, "data": data,
                                                   **centers.center(request.user, plugins_only)})


@require_GET
def package_center(request: HttpRequest) -> HttpResponse:
    return _page(request, plugins_only=False)


@require_GET
def plugin_center(request: HttpRequest) -> HttpResponse:
    return _page(request, plugins_only=True)


@require_POST
def pack_switch(request: HttpRequest) -> HttpResponse:
    """Enable or disable a pack for the whole server (staff only)."""
    if not request.user.is_staff:
        raise PermissionDenied("Only an administrator can enable or disable a pack.")
    name, enabled = request.POST.get("pack", ""), request.POST.get("enabled") == "true"
    if name not in installed():
        messages.error(request, f"There is no pack '{name[:40]}' on this server.")
    else:
        PackSwitch.switch(name, enabled)
        messages.success(request, f"Pack {name} enabled: students see its nodes." if enabled else
                         f"Pack {name} disabled: students no longer see its nodes; graphs that use them "
                         "still open, but do not run.")
    url = reverse("editor:package-center")
    tab = request.POST.get("_tab", "")
    return redirect(f"{url}?tab={tab}" if tab.isdigit() else url)


@require_POST
def pack_example(request: HttpRequest) -> HttpResponse:
    """Open one of a pack's example graphs as a new tab."""
    try:
        doc = centers.example(request.POST.get("pack", ""), request.POST.get("example", ""),
                              PackSwitch.enabled_packs())
    except DocumentError as exc:
        messages.error(request, "This example could not be opened: " + "; ".join(exc.problems))
        return redirect("editor:package-center")
    if doc is None:
        messages.error(request, "There is no such example in an enabled pack on this server.")
        return redirect("editor:package-center")
    return open_tab(request, doc, title=doc.get("name", ""))
