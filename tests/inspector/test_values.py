"""How values look: number format, bounded grids, slices, heat."""
from __future__ import annotations

import re

import pytest
import torch

from apps.inspector.values import WINDOW, fmt, heat_alpha, view


@pytest.mark.parametrize("value,text", [(None, "·"), (2.0, "2"), (7, "7"), (0.0001, "1.00e-04"), (2.123456, "2.1235"),
                                        (float("nan"), "NaN"), (float("inf"), "Infinity"), (-float("inf"), "-Infinity"),
                                        (True, "T"), (False, "F"), ("cat", "cat"), (0.5, "0.5")])
def test_numbers_format_as_the_reference_says(value, text):
    assert fmt(value) == text


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_grid_cells_format_exactly_as_single_numbers(dtype):
    """The grid formats a whole window at once; each cell must read as fmt reads it alone."""
    edges = [0.0, -0.0, 1.0, -3.0, 1e-3, -1e-3, 9.99e-4, 5e-5, -5e-5, 1e15, -1e15, 9.99e14, 1e16, 2.5,
             0.99999, 1.00004999, 1.00005, 123456.78, float("nan"), float("inf"), -float("inf"), 1e-45]
    generator = torch.Generator().manual_seed(0)
    magnitudes = 10.0 ** torch.randint(-8, 18, (42,), generator=generator)
    scaled = torch.randn(42, generator=generator, dtype=torch.float64) * magnitudes
    cells = torch.cat([torch.tensor(edges, dtype=torch.float64), scaled]).to(dtype).reshape(2, 32)
    html = view(cells).grid
    assert html.count("<td>") == cells.numel()
    assert "".join(f"<td>{fmt(v)}</td>" for v in cells[0].tolist()) in html
    assert "".join(f"<td>{fmt(v)}</td>" for v in cells[1].tolist()) in html


def test_a_tensor_shows_shape_dtype_and_min_max_mean():
    """WK8: shape, dtype, min/max/mean and the values."""
    v = view(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert v.shape_text == "[2, 2]" and v.dtype == "float32"
    assert v.stats == "min 1 · max 4 · mean 2.5"
    assert v.grid.count("<td>") == 4


def test_rank_three_shows_one_slice_with_a_selector_per_leading_dim():
    t = torch.arange(24.0).reshape(2, 3, 4)
    v = view(t, index=[1])
    assert [s["size"] for s in v.selectors] == [2] and v.index == [1]
    assert "<td>12</td>" in v.grid and "<td>0</td>" not in v.grid


def test_a_large_tensor_shows_a_bounded_window_and_says_what_is_hidden():
    v = view(torch.zeros(1, 3, 224, 224))
    assert v.grid.count("<td") == WINDOW * WINDOW
    assert v.window["clipped"] and v.window["rows"] == 224 and v.window["next_r"] == WINDOW
    assert v.window["next_c"] == WINDOW and v.window["prev_r"] is None


def test_a_window_can_page_on():
    v = view(torch.arange(100.0).reshape(1, 100), offset=(0, 96))
    assert v.window["c0"] == 96 and v.window["c1"] == 100 and v.grid.count("<td") == 4


def test_heat_colours_only_cells_that_changed():
    """IN4: changed cells are heat-coloured; the largest change shown is the darkest."""
    before = torch.tensor([1.0, 2.0, 3.0])
    v = view(torch.tensor([1.0, 4.0, 3.0]), compare=before)
    assert v.grid.count('class="changed"') == 1 and 'data-heat="75"' in v.grid and v.heat_max == 2.0
    assert heat_alpha(0.0, 0.0) == 0.0 and heat_alpha(2.0, 2.0) == 0.75


def test_heat_is_scaled_to_the_changes_shown():
    """WK9: on Softmax every relative change is large, yet a change of 3.7 and one of 0.005
    get different shades; the legend names the largest change."""
    before = torch.tensor([[4.0, 0.01, 0.0]])
    v = view(torch.tensor([[0.3, 0.005, 0.0]]), compare=before)
    shades = re.findall(r'data-heat="([0-9]+)"', v.grid)
    assert shades == ["75", "8"] and v.heat_max_text == "3.7"


def test_heat_of_an_unchanged_output_shades_nothing():
    """Print changes nothing: no cell is shaded and the legend says so (heat_max 0)."""
    t = torch.tensor([[1.0, 2.0]])
    v = view(t.clone(), compare=t)
    assert v.heat and v.heat_max == 0.0 and 'class="changed"' not in v.grid


def test_a_single_row_stays_one_row_of_sixteen_cells():
    """A [1, 16] row (the Reshape lesson) is drawn as one row, never wrapped like a matrix."""
    v = view(torch.arange(16.0).reshape(1, 16))
    assert 'class="grid one-row"' in v.grid and v.grid.count("<tr>") == 1 and v.grid.count("<td") == 16
    assert not v.window["clipped"]


def test_non_finite_cells_and_stats_stay_readable():
    v = view(torch.tensor([1.0, float("nan"), float("inf")]))
    assert ">NaN</td>" in v.grid and ">Infinity</td>" in v.grid and v.stats == "min 1 · max 1 · mean 1"


def test_stats_skip_non_finite_values_across_pieces_of_a_large_tensor():
    from apps.runs.engine.events import PIECE
    t = torch.arange(2 * PIECE + 3, dtype=torch.float32)
    t[0], t[PIECE + 1], t[-1] = float("nan"), float("-inf"), float("inf")
    finite = t[torch.isfinite(t)]
    assert view(t).stats == f"min 1 · max {fmt(finite.max().item())} · mean {fmt(finite.double().mean().item())}"
    assert view(torch.full((3,), float("nan"))).stats == "no finite values"


def test_other_values_have_plain_views():
    assert view(torch.nn.Linear(2, 3)).text == "Linear · params 9"
    assert view(3.5).text == "3.5" and view("hi").kind == "string" and view([1, 2]).meta == "list · length 2"


def test_an_empty_tensor_says_so():
    assert "(empty tensor)" in view(torch.zeros(0, 3)).grid


def test_a_long_list_is_shown_without_formatting_what_is_cut():
    """A value the Inspector, the outputs API and a run's summary show as text is cut at a
    limit; a list of a million items is formatted only as far as the limit reaches."""
    from apps.inspector.values import TEXT_LIMIT
    from apps.graphs.nodes.reprs import short_repr

    formatted = []

    class Item:
        def __repr__(self):
            formatted.append(1)
            return "item"

    shown = view([Item() for _ in range(1_000_000)])
    assert shown.text.startswith("[item, item, ") and len(shown.text) == TEXT_LIMIT
    assert shown.meta == "list · length 1000000"
    assert len(formatted) <= TEXT_LIMIT // 3 + 1
    for value in ([1, (2,), {"b": 1, "a": {3, 1}}], list(range(5000)), {i: [i] * 3 for i in range(900)},
                  frozenset({2, 1}), 10 ** 60):
        assert short_repr(value, 4000) == repr(value)[:4000]   # what is shown is what repr() begins with
    assert short_repr(["a" + "x" * 5000 + "z"], 4000).startswith("['axxx")
