"""PageState: the one place the editor's query strings are written and read."""
from __future__ import annotations

import pytest
from django.template import Context, Template
from django.test import RequestFactory

from apps.editor.state import PageState


def test_a_query_string_round_trips():
    state = PageState(node="reshape-1", run="abc", view="steps", panel="collapsed", inside="")
    assert PageState.read(dict(p.split("=") for p in state.query().split("&"))) == state


def test_unknown_views_and_panels_drop_out():
    assert PageState.read({"view": "nonsense", "panel": "wide", "node": "n"}) == PageState(node="n")
    assert PageState.read({"view": "forward"}).view == ""  # Forward is the default: never written


def test_changes_replace_fields_and_other_keys_follow_them():
    state = PageState(node="a", run="r1")
    assert state.query(node="", pane="stats", port="output") == "run=r1&pane=stats&port=output"
    assert state.url("/editor/1/", run="") == "/editor/1/?node=a"
    assert PageState().url("/editor/1/") == "/editor/1/"


def test_a_form_carries_the_state_in_its_hidden_field():
    request = RequestFactory().post("/", {"_state": "node=b&run=r2&view=backward&junk=1"})
    assert PageState.posted(request) == PageState(node="b", run="r2", view="backward")
    assert str(PageState.posted(request)) == "node=b&run=r2&view=backward"


@pytest.mark.django_db
def test_templates_build_urls_from_the_page_state():
    template = Template("{% load page_state %}{% page_url 'editor:tab' 7 node=n %}|{% page_query runs='failed' %}"
                        "|{% window_query 'out.output' 16 0 %}")
    html = template.render(Context({"state": PageState(node="x", run="r"), "n": "y/z"}))
    assert html == "/editor/7/?node=y%2Fz&amp;run=r|?node=x&amp;run=r&amp;runs=failed|?node=x&amp;run=r&amp;o.out.output=16%2C0"
