"""PageState: what the editor page carries from request to request, in its query string
and in every form's hidden ``_state`` field. Never stored: a reload without it starts fresh.

Every URL that keeps the state is built here (or by the ``page_url`` / ``page_query``
template tags, which call it), so no view, template or script writes these query strings
by hand."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import parse_qsl, urlencode

from apps.inspector.panel import TABS

COLLAPSED = "collapsed"


@dataclass(frozen=True)
class PageState:
    node: str = ""    # the selected node
    run: str = ""     # the inspected run
    view: str = ""    # the Inspector tab ("" is Forward)
    panel: str = ""   # "collapsed" when the Inspector is folded away
    inside: str = ""  # the block whose inside the canvas shows

    @classmethod
    def read(cls, query: Mapping[str, str]) -> PageState:
        """The state a query string (or a parsed ``_state``) names; unknown values drop out."""
        view = query.get("view", "")
        return cls(node=query.get("node", ""), run=query.get("run", ""),
                   view=view if view in TABS and view != "forward" else "",
                   panel=COLLAPSED if query.get("panel") == COLLAPSED else "", inside=query.get("inside", ""))

    @classmethod
    def of(cls, request) -> PageState:
        """The state a GET carries in its query string."""
        return cls.read(request.GET)

    @classmethod
    def posted(cls, request) -> PageState:
        """The state a form carried in its hidden ``_state`` field."""
        return cls.read(dict(parse_qsl(request.POST.get("_state", ""))))

    def but(self, **changes: str) -> PageState:
        return dataclasses.replace(self, **changes)

    def query(self, **changes: str) -> str:
        """The query string of this state, changed as given; a change naming no field of the
        state (``pane``, ``key``, ``runs``, ...) is added after it. Empty values drop out."""
        fields = {f.name for f in dataclasses.fields(self)}
        state = self.but(**{k: v for k, v in changes.items() if k in fields})
        pairs = [(k, v) for k, v in dataclasses.asdict(state).items() if v]
        pairs += [(k, v) for k, v in changes.items() if k not in fields and v not in ("", None)]
        return urlencode(pairs)

    def url(self, path: str, **changes: str) -> str:
        """``path`` with this state (changed as given) as its query string."""
        query = self.query(**changes)
        return f"{path}?{query}" if query else path

    def items(self) -> list[tuple[str, str]]:
        """The fields that are set, as (name, value): a GET form's hidden inputs."""
        return [(k, v) for k, v in dataclasses.asdict(self).items() if v]

    def __str__(self) -> str:  # what a form's hidden _state field holds
        return self.query()
