"""The viewers' builders (issue 17, reference §14): row normalisation, causal detection, the
60 nearest, the zoom clamp, the inline limit, the query's bounds."""
from __future__ import annotations

import torch

from apps.inspector import viewers as v


def test_fv5_rows_are_normalised_over_their_non_zero_cells_and_the_footer_says_so():
    """FV5: each row min-max over its non-zero cells; zeros read 0; a flat row reads 0.5."""
    m = torch.tensor([[0.0, 0.2, 0.8], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]])
    assert v.row_normalise(m).tolist() == [[0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]
    picture = v.heatmap(torch.softmax(torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(0)), -1))
    assert picture.footer == "seq_len = 5 · row-normalised colours" and [p.title for p in picture.panels] == ["h0", "h1"]
    assert v.heatmap(torch.ones(4, 4, dtype=torch.bool), mask=True).footer == "seq_len = 4"


def test_a_causal_pattern_is_detected_and_its_upper_cells_striped():
    causal = torch.tril(torch.ones(4, 4)) / torch.arange(1, 5.0).reshape(4, 1)
    assert v.is_causal(causal) and not v.is_causal(torch.ones(4, 4)) and not v.is_causal(torch.ones(3, 4))
    picture = v.heatmap(causal)
    striped = {(int(float(c.x)), int(float(c.y))) for c in picture.panels[0].cells if c.striped}
    assert len(striped) == 6
    mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)   # AttentionMask: True = blocked
    cells = v.heatmap(mask, mask=True).panels[0].cells
    assert sum(c.striped for c in cells) == 6
    # the blocked cells keep their colour (1: bright) under dark hatching, so the mask is not all dark
    assert {c.fill for c in cells if c.striped} == {v.colour(v.DEFAULT_COLORMAP, 1.0)}
    assert {c.fill for c in picture.panels[0].cells if c.striped} == {v.colour(v.DEFAULT_COLORMAP, 0.0)}
    data = v.heatmap_data(mask, mask=True)
    assert data["panels"][0]["z"][0][3] == 1.0 and data["stripes"] == v.STRIPES_ON_MASK
    assert v.heatmap_data(causal)["panels"][0]["z"][0][3] == 0.0 and v.heatmap_data(causal)["stripes"] == v.STRIPES


def test_labels_only_up_to_16_tokens_tooltips_and_the_inline_limit():
    small = v.heatmap(torch.eye(3), ["a", "b", "c"])
    assert [t for *_, t in small.panels[0].row_labels] == ["a", "b", "c"]
    assert small.panels[0].cells[1].tip == "w[0, 1] = 0.000\na → b"
    assert v.heatmap(torch.eye(17)).panels[0].row_labels == []
    assert v.heatmap(torch.eye(2, 2).expand(2, 2, 2)).panels[1].cells[0].tip.startswith("head 1 · w[0, 0] = 1.000\nq0 → k0")
    assert v.card_heatmap(torch.eye(17)).message == v.TOO_LARGE == "Tensor too large for inline preview"
    assert v.heatmap("text").message == "Expected tensor, got string"


def test_fv3_the_60_nearest_the_centre_and_the_filter():
    """FV3: the 60 points nearest the view centre; the filter is a case-insensitive substring,
    '#i' for an unlabelled point."""
    points = [(float(i), 0.0) for i in range(100)]
    names = v.point_labels(["Cat", "dog"], 100)
    assert v.nearest(points, (0.0, 0.0), names) == list(range(60))
    assert v.nearest(points, (50.2, 0.0), names)[:3] == [50, 51, 49]
    assert v.nearest(points, (0.0, 0.0), names, "CAT") == [0]
    assert v.nearest(points, (0.0, 0.0), names, "#9")[:2] == [9, 90]


def test_fv4_zoom_is_clamped_between_25_and_50000_percent_and_the_query_is_bounded():
    """FV4: zoom in % of fit, clamped; a hand-edited centre stays near the data."""
    assert v.clamp_zoom(1) == 25 and v.clamp_zoom(10**9) == 50_000 and v.clamp_zoom(float("nan")) == 100
    points = [(0.0, 0.0), (1.0, 1.0)]
    assert v.view_query(points, {"cx": "1e300", "cy": "nan", "zoom": "-5"}) == ((2.0, 0.5), 25.0)
    assert v.view_query(points, {"cx": "abc"}) == ((0.5, 0.5), 100.0)
    assert v.hidden_set("1,x,5,999,-1", 10) == frozenset({1, 5})
    s = v.scatter(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), ["a", "b"], inline=False, hidden=frozenset({1}), width=400, height=300)
    assert s.footer == "2 points · 100% · 1 hidden" and [d.index for d in s.dots] == [0]
    assert v.scatter(torch.zeros(3000, 2)).message == v.SCATTER_TOO_MANY


def test_fv5_the_plotly_viewers_numbers_follow_the_same_rules():
    """FV5: heatmap_data gives each row on its own scale (a mask absolute), a causal pattern's
    upper cells at 0 and marked causal, tooltips with the token pair; past 4096 numbers it says
    so; scatter_data names unlabelled points #i (tooltip pt N)."""
    causal = torch.tril(torch.ones(3, 3)) / torch.arange(1, 4.0).reshape(3, 1)
    data = v.heatmap_data(causal, ["a", "b", "c"])
    panel = data["panels"][0]
    assert panel["causal"] and panel["z"][0][1] == 0 and panel["z"][1] == [0.5, 0.5, 0.0]
    assert panel["tips"][2][0] == "w[2, 0] = 0.333<br>c → a" and data["footer"] == "seq_len = 3 · row-normalised colours"
    assert v.heatmap_data(torch.eye(2), mask=True)["footer"] == "seq_len = 2"
    assert v.heatmap_data(torch.ones(2, 65, 64))["status"].startswith("Couldn't load: the weights have 8,320 numbers")
    assert v.heatmap_data("text")["status"] == "Expected tensor, got string"
    points = v.scatter_data(torch.tensor([[0.0, 1.0], [2.0, 3.0]]), ["cat"])
    assert points["names"] == ["cat", "#1"] and points["tips"] == ["cat", "pt 1"] and points["footer"] == "2 points · 100% · 0 hidden"
    assert v.scatter_data(torch.zeros(0, 2))["status"] == "No points to display"


def test_a_scatter_of_unnamed_points_says_what_its_numbers_are():
    """Issue 49 item 10: the labels #0–#39 come with a legend; named points need none."""
    unnamed, named = v.scatter(torch.zeros(3, 2), inline=False), v.scatter(torch.zeros(1, 2), ["cat"], inline=False)
    assert unnamed.legend.startswith("#0, #1, … are the rows of points_2d") and named.legend == ""
    assert v.scatter_data(torch.zeros(2, 2))["legend"] == unnamed.legend and v.scatter_data(torch.zeros(1, 2), ["a"])["legend"] == ""
