"""``{% page_url 'editor:tab' tab.pk node=card.id %}``: a URL that keeps the page's state
(the template's ``state``, a PageState), changed as given. ``{% page_query panel='' %}``:
the same as a relative ``?query``. ``{% window_query row.key r c %}``: a link to another
window of a row's value grid (``step=`` / ``pane=`` keep a Steps row or a details pane). ``{% tab_url t %}``: another tab, on the run it last started."""
import time

from django import template
from django.urls import reverse

from ..state import PageState

register = template.Library()


@register.simple_tag(takes_context=True)
def page_url(context, name: str, *args, **changes) -> str:
    return context["state"].url(reverse(name, args=args), **changes)


@register.simple_tag(takes_context=True)
def page_query(context, **changes) -> str:
    return "?" + context["state"].query(**changes)


@register.simple_tag(takes_context=True)
def window_query(context, key: str, row: int, col: int, **extra) -> str:
    return "?" + context["state"].query(**{f"o.{key}": f"{row},{col}"}, **extra)


@register.simple_tag
def tab_url(tab) -> str:
    return PageState(run=str(tab.last_run_id or "")).url(reverse("editor:tab", args=[tab.pk]))


# Where a running page's self-refresh puts the Inspector column (no JavaScript): the part that
# changes while the run goes, marked id="watching" (Forward's outputs, Training's progress).
WATCHING = "watching"


@register.simple_tag(takes_context=True)
def refresh_url(context) -> str:
    """The running page's next self-refresh: the same page with a new ``refresh`` value (an
    address differing only in its #anchor would only scroll, not load) and the anchor, so the
    column does not jump back to its top every second."""
    request = context["request"]
    query = request.GET.copy()
    query["refresh"] = str(int(time.time()))
    return f"{request.path}?{query.urlencode()}#{WATCHING}"
