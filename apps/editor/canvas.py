"""Where everything sits on the canvas: node cards, port anchors and edge paths, computed
on the server so the canvas draws without JavaScript. No Django here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

from apps.graphs import document, segments
from apps.graphs.nodes.base import PORT_COLOURS, Port, resolve
from apps.graphs.nodes.packs import MissingPack, missing_pack
from apps.inspector.pictures import CARD_ROOM as PICTURE_H  # room under the ports for an output's picture

CARD_W, HEADER_H, ROW_H, NOTE_H = 184, 30, 22, 60
SHAPE_LABEL_BEFORE = 30  # px before the input an edge enters: its shape is written over the gap between cards
PROGRESS_H = 30          # room under a training node's ports for its progress bar
NOTE_COLOUR = "#FFF59D"  # editor/palette.css colours note cards with it
MARGIN = 240


@dataclass
class PortView:
    name: str
    type: str
    colour: str
    optional: bool
    x: float
    y: float
    side: str              # "in" | "out"
    source: str = ""       # for a wired input: "Node.port" it comes from (said in its label)


@dataclass
class CardView:
    id: str
    type: str
    label: str
    category: str
    description: str
    x: float
    y: float
    h: float
    inputs: list[PortView] = field(default_factory=list)
    outputs: list[PortView] = field(default_factory=list)
    is_note: bool = False
    text: str = ""
    entry: bool = False    # a trigger edge starts execution here
    status: dict = field(default_factory=dict)   # this node in the inspected run
    badge: str = ""
    picture: Any = None    # a small picture of its output in that run (apps.inspector.pictures)
    missing: MissingPack | None = None  # the pack it needs that this server does not offer now
    trains: bool = False   # reports training (or a loop's) progress: its card has a progress bar
    progress: Any = None   # that bar in the inspected run (apps.runs.status.progress_line)
    script: bool = False   # a script node: its card says so while script nodes are off
    notice: str = ""


@dataclass
class EdgeView:
    id: str
    path: str
    colour: str
    trigger: bool
    label: str
    source: str = ""
    port: str = ""
    target: str = ""
    label_at: tuple[float, float] = (0.0, 0.0)   # where the shape that crossed it is written
    shape: str = ""        # that shape, after a run: "[1, 16]"


@dataclass
class BubbleView:
    """A segment's light-orange bubble around its head-to-tail nodes."""

    id: str
    head: str
    tail: str
    x: float
    y: float
    w: float
    h: float
    head_badge: tuple[float, float]
    tail_badge: tuple[float, float]
    active: bool
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)    # x, y, w, h: one round each member
    bridges: list[tuple[float, float, float, float]] = field(default_factory=list)  # joining two wired members


@dataclass
class CanvasView:
    cards: list[CardView]
    edges: list[EdgeView]
    width: float
    height: float
    bubbles: list[BubbleView] = field(default_factory=list)


BUBBLE_PAD = 28


def layout(doc: dict[str, Any], style: str = "circuit", active_segment: str = "",
           pictured: Collection[str] | Mapping[str, float] = frozenset(),
           enabled: Collection[str] | None = None) -> CanvasView:
    """``pictured``: the nodes whose cards show a picture of their output (they are taller: by
    PICTURE_H, or by the room a mapping names, as a viewer's larger picture needs);
    ``enabled``: the packs on for this server (None: all installed), for the cards that need another."""
    entries = {e["target"] for e in doc["edges"] if document.is_trigger(e)}
    cards = {n["id"]: _card(n, n["id"] in entries, doc["edges"], enabled) for n in doc["nodes"]}
    heights = pictured if isinstance(pictured, Mapping) else dict.fromkeys(pictured, PICTURE_H)
    for node_id in heights.keys() & cards.keys():
        cards[node_id].h += heights[node_id]
    for e in doc["edges"]:  # say on each input where it comes from (edges are drawn, not read)
        if not document.is_trigger(e) and e["source"] in cards and e["target"] in cards:
            for port in cards[e["target"]].inputs:
                if port.name == e.get("targetHandle"):
                    port.source = f"{cards[e['source']].label}.{e['sourceHandle']}"
    edges = []
    for e in doc["edges"]:
        src, dst = cards.get(e["source"]), cards.get(e["target"])
        if src is None or dst is None:
            continue
        start = next((p for p in src.outputs if p.name == e.get("sourceHandle")), None)
        if document.is_trigger(e):
            end_x, end_y, colour = dst.x, dst.y + HEADER_H / 2, "#9E9E9E"
        else:
            end = next((p for p in dst.inputs if p.name == e.get("targetHandle")), None)
            if end is None:
                continue
            end_x, end_y, colour = end.x, end.y, (start.colour if start else PORT_COLOURS["ANY"])
        if start is None:
            continue
        edges.append(EdgeView(e["id"], edge_path(start.x, start.y, end_x, end_y, style), colour,
                              document.is_trigger(e),
                              f"{src.label}.{start.name} → {dst.label}" + ("" if document.is_trigger(e) else f".{e['targetHandle']}"),
                              source=src.id, port=start.name, target=dst.id, label_at=(end_x - SHAPE_LABEL_BEFORE, end_y)))
    width = max((c.x + CARD_W for c in cards.values()), default=0) + MARGIN
    height = max((c.y + c.h for c in cards.values()), default=0) + MARGIN
    bubbles = [b for g in doc.get("segmentGroups", []) if (b := _bubble(doc, g, cards, active_segment))]
    return CanvasView(list(cards.values()), edges, max(width, 960), max(height, 560), bubbles)


def _bubble(doc: dict[str, Any], group: dict[str, Any], cards: dict[str, CardView], active: str) -> BubbleView | None:
    """The segment drawn round its members only: a padded box each, joined by a bridge where two
    wired members sit side by side or one above the other with no other card between them (one
    box round them all took in any node that sat inside it, such as Start)."""
    members = segments.members_of(doc, group)
    if not members:  # an end is gone or the path is broken: no bubble
        return None
    boxes = {m: _padded(cards[m]) for m in members}
    others = [_padded(c, 0) for i, c in cards.items() if i not in members]
    bridges = []
    for edge in doc.get("edges", []):
        a, b = boxes.get(edge["source"]), boxes.get(edge["target"])
        bridge = _bridge(a, b) if a and b and edge["source"] != edge["target"] else None
        if bridge and not any(_overlap(bridge, o) for o in others) and bridge not in bridges:
            bridges.append(bridge)
    x0, y0 = min(b[0] for b in boxes.values()), min(b[1] for b in boxes.values())
    x1, y1 = max(b[0] + b[2] for b in boxes.values()), max(b[1] + b[3] for b in boxes.values())
    head, tail = cards[group["headNodeId"]], cards[group["tailNodeId"]]
    return BubbleView(group["id"], head.label, tail.label, x0, y0, x1 - x0, y1 - y0,
                      (head.x, max(0.0, head.y - 22)), (tail.x + CARD_W - 40, tail.y + tail.h + 6), group["id"] == active,
                      boxes=list(boxes.values()), bridges=bridges)


Box = tuple[float, float, float, float]


def _padded(card: CardView, pad: float = BUBBLE_PAD) -> Box:
    x, y = max(0.0, card.x - pad), max(0.0, card.y - pad)
    return x, y, card.x + CARD_W + pad - x, card.y + card.h + pad - y


def _bridge(a: Box, b: Box) -> Box | None:
    """The band joining two boxes across the gap between them, inset from their round corners."""
    inset = BUBBLE_PAD / 2
    top, bottom = max(a[1], b[1]) + inset, min(a[1] + a[3], b[1] + b[3]) - inset
    left, right = min(a[0] + a[2], b[0] + b[2]), max(a[0], b[0])
    if bottom > top and right > left:          # side by side
        return left, top, right - left, bottom - top
    left, right = max(a[0], b[0]) + inset, min(a[0] + a[2], b[0] + b[2]) - inset
    top, bottom = min(a[1] + a[3], b[1] + b[3]), max(a[1], b[1])
    if right > left and bottom > top:          # one above the other
        return left, top, right - left, bottom - top
    return None                                # apart, or already overlapping: the boxes say it


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _card(node: dict[str, Any], entry: bool, edges: list[dict[str, Any]], enabled: Collection[str] | None) -> CardView:
    x, y = node["position"]["x"], node["position"]["y"]
    if node["type"] == document.NOTE_TYPE:
        return CardView(node["id"], node["type"], "Note", "", "", x, y, NOTE_H, is_note=True,
                        text=str(node.get("data", {}).get("text", "")))
    cls = resolve(node["type"])
    if cls is None:  # a node of a pack this server lacks: its wired ports, so its edges still draw
        inputs, outputs = _wired_ports(node["id"], edges)
        category, description = "", ""
    else:
        params = cls.coerce_params(node["data"].get("params", {}))[0]
        inputs, outputs = cls.input_ports(params), cls.output_ports(params)
        category, description = cls.category, cls.description
    missing = missing_pack(node["type"], enabled)
    trains = bool(cls and (cls.reports_training or cls.reports_progress))
    rows = max(len(inputs), len(outputs), 1) + (1 if missing else 0)  # a row saying which pack it needs
    card = CardView(node["id"], cls.type if cls else node["type"], document.node_label(node), category,
                    description, x, y, HEADER_H + rows * ROW_H + 6 + (PROGRESS_H if trains else 0), entry=entry,
                    missing=missing, trains=trains, script=bool(cls and cls.script))
    card.inputs = [_port(p, x, y, i, "in") for i, p in enumerate(inputs)]
    card.outputs = [_port(p, x + CARD_W, y, i, "out") for i, p in enumerate(outputs)]
    return card


def _wired_ports(node_id: str, edges: list[dict[str, Any]]) -> tuple[list[Port], list[Port]]:
    """The ports a node of unknown type must have: those its data edges name, typed as ANY."""
    ins = dict.fromkeys(e.get("targetHandle") for e in edges if e["target"] == node_id and not document.is_trigger(e))
    outs = dict.fromkeys(e.get("sourceHandle") for e in edges if e["source"] == node_id)
    return [Port(p, "ANY") for p in ins if p], [Port(p, "ANY") for p in outs if p]


def _port(port: Port, x: float, top: float, row: int, side: str) -> PortView:
    return PortView(port.name, port.type, PORT_COLOURS.get(port.type.upper(), PORT_COLOURS["ANY"]),
                    port.optional, x, top + HEADER_H + row * ROW_H + ROW_H / 2, side)


def edge_path(x1: float, y1: float, x2: float, y2: float, style: str) -> str:
    """Circuit: board traces with right angles; Curve: a smooth cubic."""
    if style == "curve":
        dx = max(40.0, abs(x2 - x1) / 2)
        return f"M{x1:.0f},{y1:.0f} C{x1 + dx:.0f},{y1:.0f} {x2 - dx:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
    if x2 < x1 + 16:  # the target is behind the source: go round below both
        low = max(y1, y2) + 48
        return f"M{x1:.0f},{y1:.0f} H{x1 + 16:.0f} V{low:.0f} H{x2 - 16:.0f} V{y2:.0f} H{x2:.0f}"
    mid = (x1 + x2) / 2
    return f"M{x1:.0f},{y1:.0f} H{mid:.0f} V{y2:.0f} H{x2:.0f}"
