"""FlightBench's difficulty metrics (Eqs. 1-4): hand-computed cases, and the trends the paper reports."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest

from missions.difficulty import (
    angle_over_length,
    corridor,
    lens_volume,
    scene_difficulty,
    sphere_volume,
    traversability_obstruction,
    turning_angles,
    view_occlusion,
)
from missions.geometry import Boxes, Scene
from missions.scenes.base import SceneSpec, generate
from missions.scenes.forest import build_forest


def test_aol_is_zero_for_a_straight_corridor_and_rises_with_turns():
    straight = np.array([[0.0, 0, -1], [10.0, 0, -1], [20.0, 0, -1]])
    assert angle_over_length(straight) == 0.0
    one_turn = np.array([[0.0, 0, -1], [10.0, 0, -1], [10.0, 10, -1]])
    assert angle_over_length(one_turn) == pytest.approx((math.exp(3.0) - 1.0) / 20.0)  # 90 deg = 3 * pi / 6
    zigzag = np.array([[0.0, 0, -1], [10, 0, -1], [10, 10, -1], [20, 10, -1], [20, 20, -1]])
    gentle = np.array([[0.0, 0, -1], [10, 0, -1], [20, 2, -1], [30, 6, -1]])
    assert angle_over_length(zigzag) > angle_over_length(one_turn) > angle_over_length(gentle) > 0


def test_turning_angles_ignore_repeated_points():
    path = np.array([[0.0, 0, 0], [1, 0, 0], [1, 0, 0], [1, 1, 0]])
    assert np.allclose(turning_angles(path), [math.pi / 2])


def test_to_sums_the_smaller_half_of_the_radii():
    # Eq. 2 with R = 4: the two smallest of four radii, 1 and 2, give (4/1 + 4/2) / 4.
    assert traversability_obstruction(np.array([4.0, 1.0, 4.0, 2.0])) == pytest.approx(1.5)
    assert traversability_obstruction(np.array([2.0, 2.0, 2.0])) == pytest.approx(2.0 / 3.0)  # floor(3/2) = 1 term


def test_sphere_intersection_volumes():
    assert lens_volume(1.0, np.array([2.0]), np.array([3.5]))[0] == 0.0  # apart
    assert lens_volume(3.0, np.array([1.0]), np.array([0.5]))[0] == pytest.approx(sphere_volume(1.0))  # nested
    # Equal balls of radius r, centres r apart: 5 pi r^3 / 12.
    assert lens_volume(2.0, np.array([2.0]), np.array([2.0]))[0] == pytest.approx(5 * math.pi * 8 / 12)


def test_vo_weights_rings_from_the_centre_out():
    path = np.array([[0.0, 0, -1], [0.5, 0, -1]])  # one sample at the origin, looking north
    ahead = [2.0, 0, -1]  # ring 1 (0-9 deg) at 2 m: 0.55 * 4 / 2
    fifteen = [4 * math.cos(math.radians(15)), 4 * math.sin(math.radians(15)), -1]  # ring 2 at 4 m: 0.3 * 1
    outside = [0.0, 3.0, -1]  # 90 deg off the axis: not in the 36 deg half-field of view
    empty = Scene("e", 0, np.array([-5.0, -5, -5]), np.array([5.0, 5, 0]), path[0], path[1])
    cloud = np.array([ahead, fifteen, outside])
    assert view_occlusion(empty, path, cloud=cloud) == pytest.approx(0.55 * 2 + 0.3 * 1)
    assert view_occlusion(empty, path, cloud=np.array([outside])) == 0.0


def test_corridor_spheres_cover_a_corridor_and_measure_its_width():
    # A 2 m wide, 20 m long corridor between two walls: spheres of radius 1 - r_d = 0.85 at most.
    walls = Boxes(np.array([[0.0, -2.0, -10.0], [0.0, 1.0, -10.0]]), np.array([[20.0, -1.0, 0.0], [20.0, 2.0, 0.0]]))
    scene = Scene("corridor", 0, np.array([0.0, -2, -10]), np.array([20.0, 2, 0]), np.array([1.0, 0, -5]),
                  np.array([19.0, 0, -5]), boxes=walls)
    path = scene.reference_path()
    centres, radii = corridor(scene, path)
    assert radii.max() <= 0.85 + 1e-9 and radii.min() > 0.3
    assert np.linalg.norm(centres[-1] - path[-1]) <= radii[-1] + 0.1  # the goal end is reached
    difficulty = scene_difficulty(scene, path=path)
    assert difficulty.aol == 0.0 and difficulty.to == pytest.approx(traversability_obstruction(radii))
    assert difficulty.to > 4.0 / 0.85 * 0.4  # every sphere small: TO near R / r / 2


def test_to_and_vo_rise_with_forest_density():
    means = []
    for density in (1 / 100, 1 / 36, 1 / 16):
        spec = SceneSpec("forest", "", "", partial(build_forest, density=density))
        results = [scene_difficulty(generate(spec, seed)) for seed in range(5)]
        means.append((np.mean([r.to for r in results]), np.mean([r.vo for r in results])))
    to, vo = zip(*means)
    assert to[0] < to[1] < to[2]
    assert vo[0] < vo[1] < vo[2]


def test_a_guide_path_the_caller_already_has_is_not_searched_for_again(monkeypatch):
    """Scene facts search the 0.3 m path for the shortest length; the difficulty's roomiest path is often that one
    (a narrow gap's slits admit none roomier), and is then taken from the caller, not searched for a second time."""
    import missions.difficulty as difficulty
    from missions.scenes import generate as generate_named

    scene = generate_named("narrow-gap", 2)
    searched = []
    real = difficulty.guide_path

    def counting(scene, clearance, resolution=None):
        searched.append(clearance)
        return real(scene, clearance, resolution)

    monkeypatch.setattr(difficulty, "guide_path", counting)
    fresh = difficulty.roomy_guide_path(scene)
    assert searched == [1.0, 0.6, 0.3]  # no path through 0.85-0.9 m slits with 0.6 m clearance
    searched.clear()
    assert np.array_equal(difficulty.roomy_guide_path(scene, known={0.3: fresh}), fresh)
    assert searched == [1.0, 0.6]
    searched.clear()
    difficulty.roomy_guide_path(scene, known={0.3: None})  # known to have none: on to the drone radius
    assert searched == [1.0, 0.6, 0.15]
