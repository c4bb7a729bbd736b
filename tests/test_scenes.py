"""Scene generators: the papers' dimensions, ten valid connected configurations each, determinism, the CLI."""

from __future__ import annotations

import numpy as np
import pytest

import argparse

from hil.commands import scene as scene_command
from missions.paths import guide_path
from missions.scenes import CONFIGURATIONS, DEFAULT_CLEARANCE, FLYINGTRUST, SCENES, SceneError, generate
from missions.scenes.base import validity_problem


@pytest.mark.parametrize("name", list(SCENES))
def test_every_configuration_is_valid_and_connected(name):
    spec = SCENES[name]
    for seed in range(CONFIGURATIONS):
        scene = generate(name, seed)
        assert validity_problem(scene, DEFAULT_CLEARANCE, spec.blocked_line) is None
        assert scene.seed == seed and scene.parameters["clearance"] == DEFAULT_CLEARANCE


@pytest.mark.parametrize("name", ["forest", "narrow-gap", "sudden-drop", "random-angle", "flightbench-mw-1"])
def test_the_guide_path_keeps_the_clearance_exactly(name):
    scene = generate(name, 4)
    path = guide_path(scene, DEFAULT_CLEARANCE)
    assert np.allclose(path[0], scene.start) and np.allclose(path[-1], scene.goal)
    assert scene.path_clearance(path, step=0.01) >= DEFAULT_CLEARANCE


@pytest.mark.parametrize("name", ["forest", "urban", "maze", "flightbench-maze-mid"])
def test_generation_is_deterministic_per_seed(name):
    a, b, other = generate(name, 2), generate(name, 2), generate(name, 3)
    probe = np.random.default_rng(0).uniform(a.bounds_min, a.bounds_max, size=(500, 3))
    assert np.array_equal(a.distance(probe), b.distance(probe))
    assert not np.array_equal(a.distance(probe), other.distance(probe))


def test_flyingtrust_scenes_put_obstacles_on_the_straight_reference_line():
    for spec in FLYINGTRUST:
        scene = generate(spec.name, 0)
        assert scene.path_clearance(scene.reference_path()) < DEFAULT_CLEARANCE, spec.name
        assert scene.reference_path().shape == (2, 3)


def test_forest_and_random_angle_follow_the_paper():
    forest = generate("forest", 0)
    assert np.allclose(forest.bounds_max[:2] - forest.bounds_min[:2], [60, 40]) and forest.ceiling == 3.0
    assert abs(len(forest.cylinders) - 60 * 40 / 49) <= 2  # density 1/49
    assert forest.is_prismatic
    cylinders = generate("random-angle", 0).cylinders
    assert abs(len(cylinders) - 60 * 40 / 36) <= 2  # density 1/36
    assert cylinders.radius.min() >= 0.25 and cylinders.radius.max() <= 0.5
    axis = (cylinders.b - cylinders.a) / np.linalg.norm(cylinders.b - cylinders.a, axis=1, keepdims=True)
    tilt = np.degrees(np.arccos(np.abs(axis[:, 2])))
    assert tilt.min() < 20 and tilt.max() > 70  # upright to lying flat


def test_narrow_gaps_and_sudden_drops_rise_with_the_configuration():
    for seed in (0, 4, 9):
        gaps = generate("narrow-gap", seed)
        widths = gaps.parameters["gap_widths_m"]
        assert len(widths) == seed + 1 and min(widths) >= 0.85 and max(widths) <= 0.9
        assert gaps.ceiling == 4.0 and np.allclose(gaps.bounds_max[:2] - gaps.bounds_min[:2], [50, 50])
        drop = generate("sudden-drop", seed)
        assert len(drop.boxes) == seed + 1
        assert min(drop.parameters["bottoms_m"]) == pytest.approx(1.5)  # the lowest obstacle point
        assert -drop.start[2] == 2.5 and drop.ceiling == 4.0 and -drop.boxes.lo[:, 2].min() == 14.0


def test_maze_perlin_and_urban_follow_the_paper():
    maze = generate("maze", 0)
    assert np.allclose(maze.bounds_max[:2] - maze.bounds_min[:2], [40, 25]) and maze.ceiling == 2.0
    perlin = generate("perlin", 0)
    assert perlin.ceiling == 4.0 and np.allclose(perlin.bounds_max[:2] - perlin.bounds_min[:2], [50, 40])
    assert perlin.voxels.occupied.mean() == pytest.approx(0.03, abs=0.002)  # fill rate
    urban = generate("urban", 0)
    assert urban.ceiling == 10.0 and urban.is_prismatic


def test_flightbench_tests_order_by_density_and_route_length():
    trees = [len(generate(f"flightbench-forest-{level}", 0).cylinders) for level in ("low", "mid", "high")]
    assert trees == sorted(trees) and trees[0] < trees[2]
    cells = [generate(f"flightbench-maze-{level}", 0).parameters["route_cells"] for level in ("low", "mid", "high")]
    assert cells == sorted(cells) and cells[0] < cells[2]
    mw = generate("flightbench-mw-2", 0)
    assert len(mw.waypoints) == 4 and len(set(np.round(-mw.reference_path()[:, 2], 1))) > 2  # several heights


def test_bad_names_and_seeds_are_refused():
    with pytest.raises(SceneError, match="unknown scene 'forrest'"):
        generate("forrest", 0)
    with pytest.raises(SceneError, match="seed: expected an integer 0-9, got 10"):
        generate("forest", 10)


def main(argv: list[str]) -> int:
    """`hil scene ...` through the verb's own parser (the other verbs are not needed here)."""
    parser = argparse.ArgumentParser(prog="hil")
    scene_command.add_parser(parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_show_difficulty_and_export(tmp_path, capsys):
    assert main(["scene", "show", "sudden-drop", "--seed", "1", "--out", str(tmp_path)]) == 0
    for view in ("top", "side"):
        assert (tmp_path / f"sudden-drop-1-{view}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["scene", "difficulty", "forest", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "TO " in out and "VO " in out and "AOL " in out
    assert main(["scene", "export", "narrow-gap", "--format", "pcd", "--out", str(tmp_path / "g.pcd")]) == 0
    assert (tmp_path / "g.pcd").read_bytes().startswith(b"# .PCD v0.7")
    assert main(["scene", "show", "forest", "--seed", "11"]) == 2
