"""Tabs as a whole: new, from an example or a file, and workspace files (each tab's graph
and run settings; never run results or weights)."""
from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.utils.text import slugify

from apps.graphs import document
from apps.graphs.models import Graph, blank_document
from codefyui import conf

from .models import Tab

EXAMPLES_DIR = Path(django_settings.BASE_DIR) / "examples"
WORKSPACE_FORMAT = "codefyui-workspace"
MAX_TABS, MAX_BYTES = 32, 64 * 2**20

# The tab's on/off rows of the Settings popover: every boolean run setting.
TAB_TOGGLES = tuple(k for k, v in document.RUN_SETTINGS_DEFAULTS.items() if isinstance(v, bool))


class ImportRefused(Exception):
    pass


class TabQuotaFull(Exception):
    """The student has as many tabs open as one may (CODEFYUI_MAX_TABS_PER_USER)."""


# The welcome screen's lesson topics, in this order; a lesson names one in its top-level "topic".
TOPICS = ("Tensors", "CNNs", "Training", "Classical ML", "Text and attention", "Generative",
          "Reinforcement learning")
MORE_LESSONS = "More lessons"   # lessons without a topic (or with one not listed above)


def examples() -> list[dict[str, Any]]:
    """The lesson examples shipped in examples/, walkthrough first."""
    found = []
    for path in sorted(EXAMPLES_DIR.glob("*.json"), key=lambda p: (p.stem != "walkthrough", p.stem)):
        doc = json.loads(path.read_text())
        topic = doc.get("topic")
        found.append({"slug": path.stem, "name": doc.get("name", path.stem), "description": doc.get("description", ""),
                      "topic": topic if isinstance(topic, str) else ""})
    return found


def lesson_groups(lessons: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The lessons by topic, in TOPICS' order, then "More lessons"; topics without a lesson left out."""
    lessons = examples() if lessons is None else lessons
    groups = {topic: [] for topic in (*TOPICS, MORE_LESSONS)}
    for lesson in lessons:
        groups[lesson["topic"] if lesson["topic"] in TOPICS else MORE_LESSONS].append(lesson)
    return [{"topic": topic, "slug": slugify(topic), "lessons": found} for topic, found in groups.items() if found]


def example(slug: str) -> dict[str, Any] | None:
    path = EXAMPLES_DIR / f"{slug}.json"
    if slug not in {e["slug"] for e in examples()} or not path.is_file():
        return None
    return document.load(path.read_text())


def check_room_for_tabs(user, adding: int = 1, what: str = "") -> None:
    """TabQuotaFull unless the student may open ``adding`` more tabs (``what``: which file holds them)."""
    limit, open_now = conf.MAX_TABS_PER_USER, Tab.objects.filter(owner=user).count()
    if open_now + adding <= limit:
        return
    asked = f"{what} holds {adding} tabs and you have {open_now} open" if what else f"You have {open_now} tabs open"
    raise TabQuotaFull(f"{asked}: one student may keep at most {limit} open (CODEFYUI_MAX_TABS_PER_USER). "
                       "Close tabs you no longer need, then try again.")


def new_tab(user, doc: dict[str, Any] | None = None, title: str = "", graph: Graph | None = None) -> Tab:
    """A new tab of the student's, last in the row; TabQuotaFull when they may open no more."""
    check_room_for_tabs(user)
    position = (Tab.objects.filter(owner=user).order_by("-position").values_list("position", flat=True).first() or 0) + 1
    title = (title or "").strip() or f"Tab {position}"
    return Tab.objects.create(owner=user, title=title[:80], position=position,
                              document=doc or blank_document(), graph=graph)


def read_upload(upload, what: str = "a graph (.json) file") -> bytes:
    """An uploaded file's bytes, refused with a message when missing or too large."""
    if upload is None:
        raise ImportRefused(f"Choose {what} to import.")
    if upload.size > MAX_BYTES:
        raise ImportRefused(f"{upload.name} is larger than 64 MB.")
    return upload.read()


def load_graph(raw: bytes, filename: str) -> dict[str, Any]:
    """A graph file's document, or ImportRefused naming every problem."""
    try:
        return document.placed_in_view(document.load(raw))
    except document.DocumentError as exc:
        raise ImportRefused(f"{filename} could not be imported: " + "; ".join(exc.problems)) from None


def import_file(user, upload) -> list[Tab]:
    """A graph JSON file becomes one tab; a workspace file adds each of its tabs."""
    raw = read_upload(upload, "a graph (.json) or workspace (.cduiworkspace) file")
    try:
        data = document.parse(raw)
    except document.DocumentError:
        data = None  # load_graph says why
    if isinstance(data, dict) and data.get("format") == WORKSPACE_FORMAT:
        return _import_workspace(user, data, upload.name)
    doc = load_graph(raw, upload.name)
    return [new_tab(user, doc, title=doc.get("name") or Path(upload.name).stem)]


def _import_workspace(user, data: dict[str, Any], filename: str) -> list[Tab]:
    entries = data.get("tabs")
    if not isinstance(entries, list) or not entries:
        raise ImportRefused(f"{filename} holds no tabs.")
    if len(entries) > MAX_TABS:
        raise ImportRefused(f"{filename} holds {len(entries)} tabs; at most {MAX_TABS} can be imported.")
    docs = []
    for i, entry in enumerate(entries):
        try:
            docs.append((str(entry.get("title", "")), document.placed_in_view(document.normalise(entry.get("graph")))))
        except (document.DocumentError, AttributeError) as exc:
            problems = getattr(exc, "problems", ["not a tab"])
            raise ImportRefused(f"{filename}, tab {i + 1}: " + "; ".join(problems)) from None
    check_room_for_tabs(user, len(docs), filename)
    with transaction.atomic():  # all tabs or none
        return [new_tab(user, doc, title=title) for title, doc in docs]


def export(user) -> tuple[bytes, str]:
    tabs = [{"title": t.title, "graph": t.document} for t in Tab.objects.filter(owner=user)
            if t.document["nodes"]]
    body = {"format": WORKSPACE_FORMAT, "version": 1, "tabs": tabs}
    return json.dumps(body, indent=2).encode(), f"workspace-{date.today().isoformat()}.cduiworkspace"


def with_tab_settings(doc: dict[str, Any], form) -> dict[str, Any]:
    """The document with the Settings rows a section's form carries: the toggles it lists in
    ``_keys`` (an unchecked box is off) and the Random seed if it has that field."""
    new = json.loads(json.dumps(doc))
    settings = new.setdefault("settings", {})
    for key in set(form.get("_keys", "").split(",")) & set(TAB_TOGGLES):
        settings[key] = form.get(key) in ("on", "true", "1")
    if not settings.get("capture_gradients"):  # Auto-synthesize loss needs Capture gradients
        settings["auto_synthesize_loss"] = False
    if "seed" in form:
        settings["seed"] = form.get("seed", "").strip()
    return document.normalise(new)
