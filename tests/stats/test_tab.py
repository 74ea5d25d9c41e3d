"""The Stats tab's pieces: figures as rows, and the chart as escaped, well-formed SVG."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import torch

from apps.stats.summary import summarise
from apps.stats.tab import histogram_svg, stats_rows

SVG = "{http://www.w3.org/2000/svg}"
BIG = dict(threshold=4_000_000, sample_size=1_000_000)


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_rows_list_every_figure_with_readable_values():
    summary = summarise(torch.tensor([[0.0, 1.0], [2.0, float("nan")]]), **BIG)
    rows = dict(stats_rows(summary))
    assert rows["Shape"] == "[2, 2]" and rows["Dtype"] == "torch.float32" and rows["Count"] == "4"
    assert (rows["Mean"], rows["Min"], rows["Max"], rows["p50"]) == ("1", "0", "2", "1")
    assert (rows["NaN count"], rows["Zero fraction"]) == ("1", "25 %")
    assert "Sampled" not in rows


def test_rows_show_sampling_missing_figures_and_other_kinds():
    sampled = dict(stats_rows(summarise(torch.randn(2_000), threshold=100, sample_size=50)))
    assert sampled["Sampled"] == "mean, std, quantiles and histogram from 50 elements"
    empty = dict(stats_rows(summarise(torch.empty(0), **BIG)))
    assert empty["Mean"] == "—" and empty["Zero fraction"] == "—"
    table = dict(stats_rows(summarise([{"a": 1}, {"a": 3}], **BIG)))
    assert table["Rows"] == "2" and table["a"].startswith("int · 2 present · 0 missing · 2 unique · mean 2")
    assert stats_rows({"kind": "unsupported", "type": "Linear"})[0] == ("Type", "Linear")


def test_the_histogram_chart_has_a_title_labelled_axes_and_one_bar_per_bin():
    summary = summarise(torch.randn(1_000, generator=torch.Generator().manual_seed(0)), **BIG)
    svg = parse(histogram_svg(summary | {"node_id": "softmax", "port": "tensor"}))
    assert svg.get("role") == "img" and svg.find(f"{SVG}title").text == "Histogram of softmax · tensor: 64 bins"
    assert len(svg.findall(f".//{SVG}rect")) == 64
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "value" in texts and "count" in texts
    assert f"{summary['histogram']['edges'][0]:.6g}" in texts
    tips = [r.find(f"{SVG}title").text for r in svg.iter(f"{SVG}rect")]
    assert tips[-1].endswith(f"]: {summary['histogram']['counts'][-1]}")


def test_class_balance_is_charted_per_class():
    summary = summarise(torch.tensor([0, 0, 1, 2, 2, 2]), **BIG)
    svg = parse(histogram_svg(summary))
    assert svg.find(f"{SVG}title").text == "Class balance of this port: 3 classes"
    assert [r.find(f"{SVG}title").text for r in svg.iter(f"{SVG}rect")] == ["0: 2", "1: 1", "2: 3"]
    assert {"0", "1", "2", "class"} <= {t.text for t in svg.iter(f"{SVG}text")}


def test_text_in_the_chart_is_escaped():
    summary = summarise(torch.ones(3), **BIG) | {"node_id": "<script>alert(1)</script>", "port": 'a"&b'}
    svg = histogram_svg(summary)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert parse(svg).find(f"{SVG}title").text == 'Histogram of <script>alert(1)</script> · a"&b: 1 bin'


def test_sampled_charts_say_so_and_empty_ones_are_not_drawn():
    summary = summarise(torch.randn(2_000), threshold=100, sample_size=50)
    svg = parse(histogram_svg(summary))
    assert svg.find(f"{SVG}title").text.endswith("from a 50-element sample")
    assert "count in sample" in {t.text for t in svg.iter(f"{SVG}text")}
    assert histogram_svg(summarise(torch.full((2,), float("nan")), **BIG)) == ""
    assert histogram_svg({"kind": "unsupported", "type": "object"}) == ""
