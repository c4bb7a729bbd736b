"""The report's interactive figures as data, without a browser: a histogram's axis stays on the bulk of
its values and names what it leaves off."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

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


def test_a_trial_page_draws_a_simulator_that_fell_behind_on_the_vehicle_clock():
    """At speed 4 a loaded simulator flew 2 vehicle seconds per harness second: the page's time axis
    follows the vehicle's stamps (an event between rows lands between them), not harness time x 4."""
    from records.clock import VehicleAxis

    harness = np.arange(0, 10) * 1e9 + 5e9
    stamps = np.r_[np.nan, 100.0 + 2.0 * np.arange(1, 10)]  # the first row came before the vehicle told its clock
    axis = VehicleAxis(pd.DataFrame({"t_ns": harness, "t_vehicle_s": stamps}), speed_factor=4.0)
    assert axis.seconds(harness).tolist() == pytest.approx([0.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0])
    assert axis.seconds(7.5e9) == pytest.approx(7.0)  # between rows, on the vehicle's pace
    assert axis.seconds(harness[-1] + 1e9) == pytest.approx(24.0)  # past the telemetry, at the speed factor
    # Without the vehicle's stamps (or with one only), the record's clock times the speed factor.
    nominal = VehicleAxis(pd.DataFrame({"t_ns": harness, "t_vehicle_s": np.r_[np.nan, 1.0, [np.nan] * 8]}), 4.0)
    assert nominal.seconds(harness[-1]) == pytest.approx(36.0)
    assert VehicleAxis(pd.DataFrame({"t_ns": harness}), math.inf).seconds(harness[-1]) == pytest.approx(9.0)
