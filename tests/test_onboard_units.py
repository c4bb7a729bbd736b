"""Onboard building blocks without a vehicle: spans and statistics, emulation, compute profiles, tracking, commands."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from onboard.emulation import emulate
from onboard.planner import Command, PlannerLoadError, load_planner
from onboard.timing import StageProfiler, span, summarize
from onboard.tracking import sample, track
from profiles.compute import (ComputeProfile, ComputeProfileError, derive_from_table5, load_compute_profile,
                              parse_compute_profile, profile_from_runs, save_compute_profile)


def test_spans_go_to_the_active_profiler_and_are_free_outside_one():
    with span("map"):
        pass  # no runtime: nothing recorded, nothing raised
    profiler = StageProfiler()
    token = profiler.activate()
    try:
        with span("map"):
            pass
        with span("plan"):
            pass
    finally:
        StageProfiler.deactivate(token)
    spans = profiler.drain()
    assert [s[0] for s in spans] == ["map", "plan"]
    assert all(end >= start for _, start, end in spans)
    assert profiler.drain() == []


def test_statistics_are_per_cycle_and_t_tot_sums_the_compute_stages():
    rows = [  # cycle 0: plan timed twice (summed); cycle 1: map + plan + control
        (0, "sense", 1_000_000), (0, "plan", 2_000_000), (0, "plan", 1_000_000),
        (1, "map", 1_000_000), (1, "plan", 4_000_000), (1, "control", 1_000_000),
    ]
    table = pd.DataFrame([{"cycle": c, "stage": s, "dur_ns": d} for c, s, d in rows])
    stats = summarize(table)
    assert stats["plan"].count == 2 and stats["plan"].mean_ms == pytest.approx(3.5)
    assert stats["total"].count == 2 and stats["total"].max_ms == pytest.approx(6.0)
    assert stats["total"].p50_ms == pytest.approx(4.5)
    assert stats["sense"].count == 1


def test_emulation_holds_the_whole_stretched_time_in_lockstep_and_the_rest_in_real_time():
    jetson = ComputeProfile("j", {"map": 5.0, "plan": 2.0, "control": 1.0})
    stages = {"map": 1_000_000, "plan": 2_000_000, "sense": 9_000_000}  # sense is never stretched
    lockstep = emulate(jetson, stages, math.inf)
    assert lockstep.measured_s == pytest.approx(0.003) and lockstep.emulated_s == pytest.approx(0.009)
    assert lockstep.hold_s == pytest.approx(0.009)
    realtime = emulate(jetson, stages, 1.0)
    assert realtime.hold_s == pytest.approx(0.006)  # 3 ms already felt while it ran
    fast = emulate(jetson, stages, 4.0)  # 12 ms of vehicle time already felt > 9 ms emulated
    assert fast.hold_s == 0.0 and fast.excess_s == pytest.approx(0.003)
    assert emulate(None, stages, math.inf).hold_s == 0.0


def test_jetson_profile_is_derived_from_flightbench_table5():
    derived = derive_from_table5()
    jetson = load_compute_profile("jetson_orin_nx")
    for stage in ("map", "plan", "control"):
        assert jetson.factors[stage] == pytest.approx(derived[stage], abs=0.011)
    assert 3.1 <= derived["total"] <= 8.8  # FlightBench Sec. 4.2.3: onboard is 3.1x-8.8x the desktop
    assert load_compute_profile("desktop").factors == {"map": 1.0, "plan": 1.0, "control": 1.0}


def test_a_bad_compute_profile_names_the_file_and_field(tmp_path):
    with pytest.raises(ComputeProfileError, match=r"board.yaml: factors.plan: expected a number > 0"):
        path = tmp_path / "board.yaml"
        path.write_text("name: board\nfactors: {map: 2, plan: -1, control: 1}\n")
        load_compute_profile(path)
    with pytest.raises(ComputeProfileError, match="factors: expected a mapping"):
        parse_compute_profile({"name": "x"})
    with pytest.raises(ComputeProfileError, match="no such compute profile"):
        load_compute_profile("no_such_board")


def test_a_measured_profile_round_trips(tmp_path):
    profile = profile_from_runs("board", {"map": 1.0, "plan": 2.0}, {"map": 4.0, "plan": 3.0, "control": 1.0},
                                description="test", source="test")
    assert profile.factors == {"map": 4.0, "plan": 1.5, "control": 1.0}  # control missing in the base: 1
    loaded = load_compute_profile(save_compute_profile(profile, tmp_path / "board.yaml"))
    assert loaded.factors == profile.factors


def test_trajectory_sampling_and_tracking():
    rows = np.array([[0.0, 0, 0, -1, 2, 0, 0], [1.0, 2, 0, -1, 2, 0, 0]])
    position, velocity = sample(rows, 0.5)
    assert position == pytest.approx([1, 0, -1]) and velocity == pytest.approx([2, 0, 0])
    position, velocity = sample(rows, 5.0)  # past the end: hold the end point
    assert position == pytest.approx([2, 0, -1]) and velocity == pytest.approx([0, 0, 0])
    command, error = track(rows, 0.5, np.array([1.0, 3.0, -0.5]), speed_limit=2.5)
    assert error == pytest.approx(math.hypot(3.0, 0.5))
    assert np.hypot(*command[:2]) == pytest.approx(2.5)  # horizontal part capped ...
    assert command[2] < 0  # ... the vertical correction (climb back) kept


def test_commands_are_validated_and_planners_load_by_name():
    assert Command("position", [1, 2, 3]).value == (1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="expected one of"):
        Command("jump", (0, 0, 0))
    with pytest.raises(ValueError, match=r"\(K, 7\)"):
        Command("trajectory", np.zeros((3, 4)))
    assert load_planner("onboard.planners.straight:StraightLine") is not None
    for bad in ("onboard.planners.straight", "no.such.module:X", "onboard.planners.straight:Nope"):
        with pytest.raises(PlannerLoadError):
            load_planner(bad)


def test_the_timing_table_stays_readable_with_campaign_trial_ids():
    from onboard.profile_table import format_table
    from onboard.timing import StageStats

    stats = {"plan": StageStats(count=10, mean_ms=2.0, p50_ms=1.9, p99_ms=3.0, max_ms=3.2),
             "total": StageStats(count=10, mean_ms=4.0, p50_ms=3.8, p99_ms=6.0, max_ms=6.1)}
    slow = {stage: StageStats(s.count, 2 * s.mean_ms, 2 * s.p50_ms, 2 * s.p99_ms, 2 * s.max_ms) for stage, s in stats.items()}
    ids = ["forest__c0__flyingtrust__default__lockstep__none__none__avoid__desktop__r0",
           "forest__c0__flyingtrust__default__lockstep__none__none__avoid__jetson_orin_nx__r0"]
    table = format_table(ids, [stats, slow])
    rows = table.splitlines()
    assert max(len(line) for line in rows[:3]) < 100  # the stage rows; the legend names the runs in full
    assert f"A = {ids[0]}" in table and f"B = {ids[1]}" in table and "2.00x" in rows[1] + rows[2]


def test_the_avoiding_planner_plans_from_outside_its_flight_volume():
    """PX4 once carried the vehicle past a goal near the volume's edge: the planner must not crash."""
    from bridges.vehicle import VehicleState
    from missions.scenes import generate
    from onboard.planner import Observation
    from onboard.planners.avoid import OccupancyPlanner
    from onboard.task import task_for_scene

    task = task_for_scene(generate("forest", 0))
    planner = OccupancyPlanner()
    planner.reset(task)
    for north, east in ((task.bounds_max[0] + 3.0, task.goal[1]), (task.bounds_min[0] - 2.0, task.bounds_max[1] + 2.0)):
        state = VehicleState(0, north, east, task.start[2], 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, math.nan, math.nan,
                             math.nan, True, True, "OFFBOARD", "IN_AIR", 90.0)
        command = planner.step(Observation(1.0, state, task.goal, None, np.zeros((0, 3))))
        assert command.kind in ("trajectory", "position", "velocity", "done")


def test_the_avoiding_planner_reuses_a_search_only_where_it_would_repeat_it():
    """The planner keeps its last search while the map window and the vehicle's cell are unchanged: it
    must command exactly what a planner that searches every time commands, from the same observations."""
    from bridges.vehicle import VehicleState
    from missions.scenes import generate
    from onboard.planner import Observation
    from onboard.planners.avoid import OccupancyPlanner
    from onboard.sensing import SceneSensor
    from onboard.task import task_for_scene

    scene = generate("forest", 0)
    task = task_for_scene(scene)
    sensor = SceneSensor(scene, task.home_in_scene)
    reusing, searching = OccupancyPlanner(), OccupancyPlanner()
    reusing.reset(task)
    searching.reset(task)
    searches = []
    search = reusing._route
    reusing._route = lambda *args: searches.append(1) or search(*args)
    start, goal = np.array(task.start), np.array(task.goal)
    heading = (goal - start) / np.linalg.norm(goal - start)
    yaw = math.atan2(heading[1], heading[0])
    steps = 160
    for i in range(steps):  # 5 cm a plan through the first trees (from 9 m on, where the camera starts to see
        # them), as at 1.5 m/s and 30 Hz: the vehicle's 0.25 m cell changes every fifth plan
        north, east, down = start + heading * (9.0 + 0.05 * i)
        state = VehicleState(0, north, east, down, 1.5 * heading[0], 1.5 * heading[1], 0.0, 0.0, 0.0, yaw, math.nan,
                             math.nan, math.nan, True, True, "OFFBOARD", "IN_AIR", 90.0)
        depth, points = sensor.read(state)
        observation = Observation(i / 30.0, state, task.goal, depth, points)
        searching._last_route = None  # forget: search again
        kept, fresh = reusing.step(observation), searching.step(observation)
        assert kept.kind == fresh.kind and np.array_equal(kept.value, fresh.value), f"plan {i} differs"
    assert 1 < len(searches) < steps / 2, f"{len(searches)} searches for {steps} plans"


def test_the_compiled_grid_search_finds_the_shortest_paths_without_cutting_corners():
    """The avoiding planner's search (compiled) against scipy's Dijkstra on the same 8-connected graph,
    built here edge by edge: the same distances, and every predecessor one step on a shortest path."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    from onboard.planners.grid_search import STEPS, shortest_paths

    def graph(blocked):
        rows, cols = blocked.shape
        edges = [(i * cols + j, (i + di) * cols + j + dj, math.hypot(di, dj))
                 for i in range(rows) for j in range(cols) for di, dj in STEPS
                 if 0 <= i + di < rows and 0 <= j + dj < cols
                 and not (blocked[i, j] or blocked[i + di, j + dj] or blocked[i + di, j] or blocked[i, j + dj])]
        source, target, length = zip(*edges)
        return coo_matrix((length, (source, target)), shape=(blocked.size, blocked.size)).tocsr()

    rng = np.random.default_rng(4)
    for _ in range(6):
        blocked = rng.random((40, 31)) < rng.uniform(0.0, 0.35)
        start = (int(rng.integers(40)), int(rng.integers(31)))
        blocked[start] = False
        expected = dijkstra(graph(blocked), indices=start[0] * 31 + start[1])
        distance, previous = shortest_paths(blocked, start)
        assert np.array_equal(np.isinf(distance), np.isinf(expected))
        reached = np.flatnonzero(np.isfinite(distance) & (previous >= 0))
        assert np.allclose(distance[np.isfinite(distance)], expected[np.isfinite(expected)], rtol=0, atol=1e-9)
        (i, j), (pi, pj) = np.divmod(reached, 31), np.divmod(previous[reached], 31)
        assert np.allclose(distance[previous[reached]] + np.hypot(i - pi, j - pj), distance[reached])
    # Between two blocked cells touching at a corner the diagonal is closed, and there is no other way.
    blocked = np.array([[False, True], [True, False]])
    assert np.isinf(shortest_paths(blocked, (0, 0))[0][3])
    assert shortest_paths(np.zeros((2, 2), dtype=bool), (0, 0))[0][3] == pytest.approx(math.sqrt(2))
    assert np.isinf(shortest_paths(np.ones((3, 3), dtype=bool), (1, 1))[0]).sum() == 8  # a blocked start


def test_the_occupancy_grid_marks_the_cells_of_points_near_flight_altitude_and_the_discs_around_them():
    from onboard.planners.occupancy import OccupancyGrid

    grid = OccupancyGrid((0.0, 0.0), (20.0, 10.0), 0.25, 1.0, 2.0, 0.5)
    rng = np.random.default_rng(5)
    points = np.column_stack([rng.uniform(-2.0, 22.0, 400), rng.uniform(-2.0, 12.0, 400), rng.uniform(-3.5, -0.5, 400)])
    # Worked point by point: the cell of every point within the 0.5 m band around 2 m altitude, on the grid.
    cells = {(round(n / 0.25), round(e / 0.25)) for n, e, d in points if abs(d + 2.0) <= 0.5}
    cells = {(i, j) for i, j in cells if 0 <= i < grid.shape[0] and 0 <= j < grid.shape[1]}
    assert grid.insert(points) == len(cells) > 50
    assert {tuple(c) for c in np.argwhere(grid.occupied)} == cells
    # Blocked: every cell whose centre is within the 1 m inflation of an occupied cell's centre.
    every = np.argwhere(np.ones(grid.shape, dtype=bool))
    occupied = np.array(sorted(cells))
    gap = np.sqrt(((every[:, None, :] - occupied[None, :, :]) ** 2).sum(axis=2)).min(axis=1) * 0.25
    assert np.array_equal(grid.blocked.ravel(), gap <= 1.0)
    assert grid.insert(points) == 0  # nothing new


def test_line_of_sight_on_the_occupancy_grid_stops_at_inflated_obstacles_and_the_grid_edge():
    from onboard.planners.occupancy import OccupancyGrid

    grid = OccupancyGrid((0.0, 0.0), (20.0, 10.0), 0.25, 1.0, 2.0, 0.5)
    assert grid.insert(np.array([[10.0, 5.0, -2.0], [3.0, 3.0, -9.0]])) == 1  # the second is far below
    here = np.array([2.0, 5.0])
    ends = np.array([[18.0, 5.0],    # through the obstacle
                     [18.0, 7.5],    # passes 1.24 m from it, outside its 1 m inflated disc
                     [10.0, 5.8],    # stops inside the disc
                     [18.0, 11.0],   # leaves the grid
                     [2.0, 5.0]])    # a point: its own cell, free
    assert grid.segments_free(here, ends).tolist() == [False, True, False, False, True]
    assert grid.segment_free(np.array([3.0, 3.0]), np.array([3.0, 9.0]))  # where the low point fell


def test_the_grid_search_stops_at_the_goal_or_the_best_edge_cell():
    """Stopping early (A*) must choose what a search of the whole window would: the goal's cell when it
    is reachable, else the edge cell of least path length plus straight-line distance to the goal."""
    from onboard.planners.grid_search import search, shortest_paths

    rng = np.random.default_rng(9)
    rows, cols = 61, 47
    edge = np.zeros((rows, cols), dtype=bool)
    edge[[0, -1], :] = edge[:, [0, -1]] = True
    for goal in [(-30.0, 20.0), (100.0, 100.0), (20.5, 30.2), (45.0, -3.0)]:
        for _ in range(4):
            blocked = rng.random((rows, cols)) < rng.uniform(0.0, 0.3)
            start = (int(rng.integers(1, rows - 1)), int(rng.integers(1, cols - 1)))
            blocked[start] = False
            i, j = np.mgrid[:rows, :cols]
            estimate = np.hypot(i - goal[0], j - goal[1]).ravel()
            inside = 0 <= goal[0] < rows and 0 <= goal[1] < cols
            goal_cell = int(round(goal[0])) * cols + int(round(goal[1])) if inside else -1
            distance, _, stopped = search(blocked, start, estimate, goal_cell, stop_at_edge=not inside)
            whole, _ = shortest_paths(blocked, start)
            if inside and np.isfinite(whole[goal_cell]):
                assert stopped == goal_cell and distance[stopped] == pytest.approx(whole[goal_cell])
            elif not inside and np.isfinite(whole[edge.ravel()]).any():
                best = np.min(np.where(edge.ravel(), whole + estimate, np.inf))
                assert edge.ravel()[stopped] and distance[stopped] + estimate[stopped] == pytest.approx(best)
                assert distance[stopped] == pytest.approx(whole[stopped])
            else:
                assert stopped == -1 and np.array_equal(np.isfinite(distance), np.isfinite(whole))


def test_the_compiled_time_profile_is_the_rule_of_its_docstring_number_for_number():
    """The avoiding planner's trajectory rows (compiled) against the rule written out in Python here: from
    the start speed, at most the cap, accelerating by ACCEL, no faster than braking in time for each vertex
    ahead allows (corner speed squared plus 2 ACCEL times the distance), a row every SAMPLE s up to HORIZON
    or the path's end. Numba keeps IEEE order without fastmath, so the numbers must be the same ones."""
    from onboard.planners.avoid import ACCEL, HORIZON, SAMPLE, _time_profile

    def rule(points, corner, cap, speed, down):
        arc = [0.0]
        for (n0, e0), (n1, e1) in zip(points, points[1:]):
            arc.append(arc[-1] + math.hypot(n1 - n0, e1 - e0))
        rows, s, t = [], 0.0, 0.0
        while True:
            i = max(k for k in range(len(points) - 1) if arc[k] <= s)
            (n0, e0), (n1, e1) = points[i], points[i + 1]
            length = math.hypot(n1 - n0, e1 - e0)
            f = (s - arc[i]) / length
            dn, de = (n1 - n0) / length, (e1 - e0) / length
            v = min(cap, math.sqrt(min(c * c + 2.0 * ACCEL * (a - s) for a, c in zip(arc, corner) if a >= s)), speed)
            rows.append((t, n0 + (n1 - n0) * f, e0 + (e1 - e0) * f, down, dn * v, de * v, 0.0))
            if t >= HORIZON or s >= arc[-1]:
                return np.array(rows), arc
            speed = min(cap, v + ACCEL * SAMPLE)
            s = min(arc[-1], s + v * SAMPLE)
            t += SAMPLE

    rng = np.random.default_rng(4)
    paths = [[(0.0, 0.0), (1.2, 0.0)], [(0.0, 0.0), (3.0, 0.0), (3.0, 4.0)]]
    paths += [[tuple(p) for p in np.cumsum(rng.normal(0, 2, (int(rng.integers(2, 8)), 2)), axis=0)] for _ in range(300)]
    for points in paths:
        cap, speed = float(rng.choice([1.0, 3.0, 4.5])), float(rng.uniform(0, 5))
        corner = [cap * float(rng.uniform(0.3, 1.0)) for _ in points[:-1]] + [0.0]
        expected, arc = rule(points, corner, cap, min(speed, cap), -2.0)
        lengths = np.array([math.hypot(n1 - n0, e1 - e0) for (n0, e0), (n1, e1) in zip(points, points[1:])])
        rows = _time_profile(np.array(points), lengths, np.array(arc), np.array(corner), cap, min(speed, cap), -2.0)
        assert rows.tobytes() == expected.tobytes(), points
    short = _time_profile(np.array(paths[0]), np.array([1.2]), np.array([0.0, 1.2]), np.array([1.0, 0.0]), 1.0, 0.0,
                          -2.0)
    assert short[0, 4] == 0.0 and short[-1, 1] == 1.2 and short[-1, 4] == 0.0  # from rest to a stop at the end
    assert np.all(np.diff(np.hypot(short[:, 4], short[:, 5])) <= ACCEL * SAMPLE + 1e-12)
