"""The small pictures on node cards after a run: heat maps and sparklines (issue 13 item 16)."""
from __future__ import annotations

import torch

from apps.inspector.pictures import HEAT_MAX_COLS, HEAT_MAX_ROWS, picture


def test_a_row_is_a_sparkline_from_its_lowest_to_its_highest_value():
    p = picture(torch.tensor([[0.0, 1.0, 2.0, 1.0]]))
    points = [tuple(map(float, xy.split(","))) for xy in p.points.split()]
    assert p.kind == "line" and len(points) == 4
    assert points[2][1] < points[1][1] < points[0][1]   # higher values are drawn higher
    assert p.title == "Line of the output [1, 4]: from 0 to 2"


def test_a_grid_is_a_heat_map_of_the_first_slice_signed_by_colour():
    p = picture(torch.tensor([[[1.0, -1.0], [0.0, 0.5]], [[9.0, 9.0], [9.0, 9.0]]]))
    assert p.kind == "heat" and len(p.cells) == 4
    fills = [c[4] for c in p.cells]
    assert fills == ["rgba(6,182,212,1.00)", "rgba(234,88,12,1.00)", "rgba(6,182,212,0.00)", "rgba(6,182,212,0.50)"]
    assert "slice [0, :, :]" in p.title and "from -1 to 1" in p.title


def test_a_big_tensor_is_pooled_to_a_few_cells_or_points():
    heat = picture(torch.randn(3, 224, 224, generator=torch.Generator().manual_seed(0)))
    assert len(heat.cells) == HEAT_MAX_ROWS * HEAT_MAX_COLS
    line = picture(torch.arange(10_000.0))
    assert len(line.points.split()) == 64


def test_no_picture_for_what_is_not_a_real_tensor():
    assert picture(torch.zeros(0)) is None and picture(torch.tensor([True])) is None
    assert picture("text") is None and picture(torch.nn.Linear(2, 2)) is None
    assert picture(torch.tensor([float("nan"), 1.0])).kind == "line"   # non-finite values are drawn at 0
