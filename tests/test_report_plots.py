"""The report's interactive figures as data, without a browser: a histogram's axis stays on the bulk of
its values and names what it leaves off."""

from __future__ import annotations

import json

import numpy as np

from reports.interactive import div, timing_histogram


def _text(figure: dict) -> str:
    return " ".join([figure["layout"]["title"]["text"], *(trace["name"] for trace in figure["data"])])


def test_one_stalled_cycle_leaves_the_histogram_on_the_bulk_and_is_named():
    rng = np.random.default_rng(1)
    cycles = np.r_[rng.normal(5.0, 0.5, 500), 12_000.0]  # 500 ordinary cycles and one stall of 12 s
    figure = timing_histogram({"lockstep": cycles}, 100.0, "T_tot per cycle")
    low, high = figure["layout"]["xaxis"]["range"]
    assert low >= 0 and high < 20, (low, high)  # not stretched to 12,000 ms
    bars = figure["data"][0]
    assert sum(bars["y"]) == 500 and max(bars["x"]) < 20  # every ordinary cycle is on the axis, the stall is not
    text = _text(figure)
    assert "1 cycle above" in text and "largest 12,000 ms" in text, text
    assert "deadline 100 ms, past the axis" in text
    json.loads(div(figure, "timing").split("Plotly.newPlot('timing',", 1)[1].rsplit(");", 1)[0])  # valid JSON


def test_a_tail_without_outliers_is_drawn_whole_and_nothing_is_named():
    cycles = np.r_[np.full(200, 5.0), np.linspace(5.0, 9.0, 20)]  # a tail less than twice the bulk
    figure = timing_histogram({"sim": cycles}, None, "T_tot per cycle")
    assert figure["layout"]["xaxis"]["range"][1] >= 9.0
    assert sum(figure["data"][0]["y"]) == len(cycles) and "above" not in _text(figure)
