"""Scene geometry: exact distances against hand-worked cases, the depth camera against a wall, exports."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from scipy.spatial import cKDTree

from missions.export import export_scene, load_scene, scene_mesh, to_frame
from missions.geometry import Boxes, Cylinders, Scene, Voxels, sample_polyline
from missions.paths import NoPathError, connected, free_grid, guide_path
from missions.raycast import pixel_windows
from missions.sensors import DepthCamera, DepthNoise, Pose

BOUNDS = (np.array([-10.0, -10.0, -10.0]), np.array([10.0, 10.0, 0.0]))


def scene_with(**groups) -> Scene:
    return Scene("test", 0, *BOUNDS, np.array([-8.0, 0, -1]), np.array([8.0, 0, -1]), **groups)


def upright(north=0.0, east=0.0, r=0.5, height=4.0) -> Cylinders:
    return Cylinders(np.array([[north, east, 0.0]]), np.array([[north, east, -height]]), np.array([r]))


@pytest.mark.parametrize("point, expected", [
    ((2.0, 0.0, -2.0), 1.5),              # beside the side
    ((0.2, 0.0, -2.0), -0.3),             # inside, nearest the side
    ((0.0, 0.0, -5.0), 1.0),              # above the top cap
    ((1.5, 0.0, -5.0), math.sqrt(2.0)),   # off the rim: to the edge circle
    ((0.0, 0.0, -3.9), -0.1),             # inside, nearest the top cap
])
def test_upright_cylinder_distances(point, expected):
    assert upright().distance(np.array(point))[0] == pytest.approx(expected)


def test_tilted_cylinder_is_measured_along_its_axis():
    # A bar lying along east at 2 m altitude: a point 1 m above its middle is 1 - r from it.
    bar = Cylinders(np.array([[0.0, -3.0, -2.0]]), np.array([[0.0, 3.0, -2.0]]), np.array([0.25]))
    assert bar.distance(np.array([0.0, 0.5, -3.0]))[0] == pytest.approx(0.75)
    assert bar.distance(np.array([0.0, 4.0, -2.0]))[0] == pytest.approx(1.0)  # past the cap


@pytest.mark.parametrize("point, expected", [
    ((0.5, 0.5, -0.5), -0.5), ((2.0, 0.5, -0.5), 1.0), ((2.0, 2.0, -0.5), math.sqrt(2.0)), ((2.0, 2.0, 1.0), math.sqrt(3.0)),
])
def test_box_distances(point, expected):
    box = Boxes(np.array([[0.0, 0.0, -1.0]]), np.array([[1.0, 1.0, 0.0]]))
    assert box.distance(np.array(point))[0] == pytest.approx(expected)


def test_a_voxel_is_a_cube():
    occupied = np.zeros((3, 3, 3), dtype=bool)
    occupied[1, 1, 1] = True
    voxels = Voxels(np.zeros(3), 1.0, occupied)  # one cube from 0.5 to 1.5 on every axis
    cube = Boxes(np.full((1, 3), 0.5), np.full((1, 3), 1.5))
    points = np.random.default_rng(0).uniform(-3, 5, size=(200, 3))
    assert np.allclose(voxels.distance(points), cube.distance(points))


def test_analytic_distance_matches_dense_surface_samples():
    rng = np.random.default_rng(1)
    a = rng.uniform(-3, 3, size=(5, 3))
    cylinders = Cylinders(a, a + rng.normal(size=(5, 3)) * 2, rng.uniform(0.2, 0.6, size=5))
    surface = cKDTree(cylinders.surface_points(0.01))
    points = rng.uniform(-6, 6, size=(50, 3))
    points = points[cylinders.distance(points) > 0]  # outside: distance = nearest surface point
    nearest, _ = surface.query(points)
    assert np.allclose(cylinders.distance(points), nearest, atol=0.01)


def test_scene_takes_the_nearest_group_and_checks_the_vehicle_sphere():
    scene = scene_with(cylinders=upright(0, 0), boxes=Boxes(np.array([[3.0, -1, -4]]), np.array([[4.0, 1, 0]])))
    points = np.array([[1.5, 0, -1], [2.5, 0, -1], [8, 8, -1]])
    assert np.allclose(scene.distance(points), [1.0, 0.5, math.hypot(4, 7)])
    assert scene.collides(points, radius=0.6).tolist() == [False, True, False]
    assert scene_with().distance(points).tolist() == [math.inf] * 3


def test_polyline_sampling_keeps_vertices_and_spacing():
    path = np.array([[0.0, 0, 0], [1.0, 0, 0], [1.0, 2.0, 0]])
    samples = sample_polyline(path, 0.3)
    assert np.allclose(samples[0], path[0]) and np.allclose(samples[-1], path[-1])
    assert np.linalg.norm(np.diff(samples, axis=0), axis=1).max() <= 0.3 + 1e-12


def test_guide_path_goes_around_a_wall_with_clearance_and_fails_when_sealed():
    wall = Boxes(np.array([[-0.1, -5.0, -20.0]]), np.array([[0.1, 10.0, 0.0]]))  # open only on the west
    scene = scene_with(boxes=wall)
    assert scene.is_prismatic
    path = guide_path(scene, clearance=0.3)
    assert scene.path_clearance(path, step=0.01) >= 0.3
    assert path[:, 1].min() < -5.0  # it went round the west end
    sealed = scene_with(boxes=Boxes(np.array([[-0.1, -10.0, -20.0]]), np.array([[0.1, 10.0, 0.0]])))
    assert not connected(free_grid(sealed, 0.3), sealed.reference_path())
    with pytest.raises(NoPathError):
        guide_path(sealed, clearance=0.3)


WALL_AT_3M = scene_with(boxes=Boxes(np.array([[3.0, -20.0, -20.0]]), np.array([[3.5, 20.0, 0.0]])))


def test_depth_camera_sees_a_wall_at_its_distance():
    camera = DepthCamera()
    depth = camera.render(WALL_AT_3M, Pose((0.0, 0.0, -2.0)))
    assert depth.shape == (48, 64)
    visible = depth[np.isfinite(depth)]
    assert np.allclose(visible, 3.0)  # depth along the optical axis is the same over a facing wall
    # The lowest rows look below the wall's foot (the ground is not an obstacle): tan(v) * 3 m > 2 m.
    assert np.isnan(depth[-1]).all() and np.isfinite(depth[0]).all()


def test_depth_camera_on_a_turned_wall_and_its_point_cloud():
    camera = DepthCamera()
    pose = Pose((0.0, 0.0, -10.0), yaw=math.radians(30))
    depth = camera.render(WALL_AT_3M, pose)
    cloud = camera.point_cloud(depth, pose)
    assert len(cloud) == np.isfinite(depth).sum() > 0
    assert np.allclose(cloud[:, 0], 3.0)  # every return lies on the wall face north = 3
    centre = depth[23:25, 31:33]  # the optical axis hits the wall 3 / cos 30 along the axis
    assert np.allclose(centre, 3.0 / math.cos(math.radians(30)), atol=0.1)


def test_depth_camera_range_cylinder_voxel_and_noise():
    camera = DepthCamera(width=65, height=49)  # odd sizes put a pixel centre on the optical axis
    far = scene_with(boxes=Boxes(np.array([[4.5, -20.0, -20.0]]), np.array([[5.0, 20.0, 0.0]])))
    assert np.isnan(camera.render(far, Pose((0.0, 0, -2)))).all()  # beyond the 4 m range
    tree = scene_with(cylinders=upright(3.0, 0.0, r=0.5, height=10.0))
    assert camera.render(tree, Pose((0.0, 0, -2)))[24, 32] == pytest.approx(2.5)
    occupied = np.zeros((20, 20, 20), dtype=bool)
    occupied[10, 10, 10] = True  # a 0.2 m cube centred on (2, 2, 2)
    cube = scene_with(voxels=Voxels(np.zeros(3), 0.2, occupied))
    assert np.nanmin(camera.render(cube, Pose((0.0, 2.0, 2.0)))) == pytest.approx(1.9)
    noisy = DepthCamera(noise=DepthNoise(sigma_at_1m=0.01, dropout=0.2, seed=3)).render(WALL_AT_3M, Pose((0.0, 0, -10)))
    assert 0.7 < np.isfinite(noisy).mean() < 0.9
    assert np.nanstd(noisy) == pytest.approx(0.09, rel=0.2)  # 0.01 * 3^2


def test_a_solid_block_of_voxels_looks_like_the_box_it_fills():
    # The voxel traversal (compiled, crossing empty blocks at once) against the box's exact slab test: a
    # 2 x 4 x 3 m block of 0.2 m cubes, seen from poses that turn, pitch and roll, must give the box's
    # depths pixel for pixel, grazing entries and clipped corners included.
    # A grid of 0.2 m cubes over north 1 .. 7, east -4 .. 4 and down -5 .. 0, the block's cubes occupied:
    # the rays from the poses start outside the grid or in its empty part.
    occupied = np.zeros((30, 40, 25), dtype=bool)
    occupied[10:20, 10:30, 10:25] = True
    lo, hi = np.array([3.0, -2.0, -3.0]), np.array([5.0, 2.0, 0.0])
    voxels = scene_with(voxels=Voxels(np.array([1.1, -3.9, -4.9]), 0.2, occupied))
    box = scene_with(boxes=Boxes(lo[None], hi[None]))
    camera = DepthCamera()
    rng = np.random.default_rng(5)
    for _ in range(20):
        pose = Pose((rng.uniform(-0.5, 2.0), rng.uniform(-2.5, 2.5), rng.uniform(-2.5, -0.5)),
                    yaw=rng.uniform(-0.6, 0.6), pitch=rng.uniform(-0.3, 0.3), roll=rng.uniform(-0.4, 0.4))
        expected, seen = camera.render(box, pose), camera.render(voxels, pose)
        assert np.isfinite(expected).sum() > 100
        assert np.allclose(seen, expected, rtol=0, atol=1e-9, equal_nan=True), pose
    inside = Pose((4.0, 0.5, -1.5), yaw=0.3)
    assert (camera.render(voxels, inside) == 0).all() and (camera.render(box, inside) == 0).all()


def test_pixel_windows_hold_every_pixel_that_meets_the_box():
    # Against the slab test of every pixel's ray in numpy: a pixel outside a box's window never meets it, and a
    # box reaching behind the image plane gets the whole image; most boxes ahead get less.
    camera = DepthCamera()
    rays = camera.rays()
    u, v = rays[:camera.width, 1].copy(), rays[::camera.width, 2].copy()
    rng = np.random.default_rng(11)
    narrowed = 0
    for _ in range(200):
        pose = Pose(tuple(rng.uniform(-2, 2, 3)), yaw=rng.uniform(-np.pi, np.pi), pitch=rng.normal(0, 0.4),
                    roll=rng.normal(0, 0.4))
        origin, rotation = np.asarray(pose.position), pose.rotation()
        lo = origin + rng.uniform(-4, 4, (8, 3))
        hi = lo + rng.uniform(0.05, 3, (8, 3))
        windows = pixel_windows(lo, hi, np.arange(8), origin, rotation, u, v)
        directions = rays @ rotation.T
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (lo[:, None] - origin) / directions, (hi[:, None] - origin) / directions  # (boxes, rays, 3)
        meets = np.minimum(t1, t2).max(axis=2).clip(0) <= np.maximum(t1, t2).min(axis=2)
        for k, (r0, r1, c0, c1) in enumerate(windows):
            hit = meets[k].reshape(camera.height, camera.width)
            inside = np.zeros_like(hit)
            inside[r0:r1, c0:c1] = True
            assert not (hit & ~inside).any(), (pose, lo[k], hi[k])
            corners = (np.array(np.meshgrid(*zip(lo[k], hi[k]), indexing="ij")).reshape(3, -1).T - origin) @ rotation
            if corners[:, 0].min() <= 0:
                assert (r0, r1, c0, c1) == (0, camera.height, 0, camera.width)
            else:
                narrowed += (r1 - r0) * (c1 - c0) < hit.size
    assert narrowed > 100


def test_depth_images_agree_with_the_scene_distances_along_each_ray():
    # Each pixel's depth against the scenes' exact distances (missions.geometry), not the ray casts: at a
    # hit's depth the ray is on an obstacle's surface and nowhere before it inside one; a ray that meets
    # nothing within range is nowhere inside one. Turned, pitched and rolled poses close to the obstacles
    # of the forest, random-angle, maze and urban scenes, where most of each image is culled from most
    # obstacles' windows.
    from missions.scenes import scene_for
    camera = DepthCamera()
    rng = np.random.default_rng(3)
    steps = np.arange(0.0, 1.0, 0.004)[1:]  # of the depth, or of the range on a miss
    for name in ("forest", "random-angle", "maze", "urban"):
        scene = scene_for(name, 1)
        lo, hi = np.asarray(scene.bounds_min), np.asarray(scene.bounds_max)
        poses, seen = 0, 0
        while poses < 6:
            position = lo + rng.random(3) * (hi - lo)
            if not 0.3 < scene.distance(position)[0] < 2.0:
                continue
            poses += 1
            pose = Pose(tuple(position), yaw=rng.uniform(-np.pi, np.pi), pitch=rng.normal(0, 0.3),
                        roll=rng.normal(0, 0.3))
            depth = camera.render(scene, pose).ravel()
            directions = camera.rays() @ pose.rotation().T
            hit = np.isfinite(depth)
            seen += hit.sum()
            reach = np.where(hit, depth, camera.max_range)
            surface = scene.distance(position + directions[hit] * depth[hit, None])
            assert np.all(np.abs(surface) < 1e-6)
            before = scene.distance((position + (directions * reach[:, None])[:, None, :] * steps[:, None]).reshape(-1, 3))
            assert before.min() > -1e-9
        assert seen > 0.05 * poses * depth.size, name


def test_exports_round_trip_and_have_valid_headers(tmp_path):
    occupied = np.zeros((4, 4, 4), dtype=bool)
    occupied[1:3, 1, 1] = True
    scene = scene_with(cylinders=upright(), boxes=Boxes(np.array([[3.0, -1, -4]]), np.array([[4.0, 1, 0]])),
                       voxels=Voxels(np.array([5.0, 5.0, -3.0]), 0.5, occupied))
    count = export_scene(scene, tmp_path / "s.ply", "ply")
    data = (tmp_path / "s.ply").read_bytes()
    header, body = data.split(b"end_header\n")
    assert f"element vertex {count}".encode() in header and len(body) == 12 * count
    first = np.array(struct.unpack("<3f", body[:12]))
    assert np.allclose(first, to_frame(scene.surface_points(0.1)[:1], "enu")[0], atol=1e-5)
    export_scene(scene, tmp_path / "s.pcd", "pcd")
    assert f"POINTS {count}\nDATA binary\n".encode() in (tmp_path / "s.pcd").read_bytes()
    vertices, faces = scene_mesh(scene)
    assert len(faces) == 12 + 4 * 16 + 2 * 10  # box, cylinder (sides x 2 + two caps), two cubes' 10 outer faces
    assert export_scene(scene, tmp_path / "s.obj", "obj") == len(faces)
    export_scene(scene, tmp_path / "s.npz", "npz")
    again = load_scene(tmp_path / "s.npz")
    points = np.random.default_rng(2).uniform(-6, 8, size=(100, 3))
    assert np.allclose(again.distance(points), scene.distance(points))


def test_enu_swaps_axes_and_flips_down():
    assert to_frame(np.array([[1.0, 2.0, -3.0]]), "enu").tolist() == [[2.0, 1.0, 3.0]]


@pytest.mark.parametrize("name", ["forest", "maze", "perlin", "random-angle"])
def test_one_point_at_a_time_agrees_with_batched_collision_checks(name):
    """The monitor's per-sample path (one point per call) gives exactly the batched answer."""
    from missions.scenes import generate

    scene = generate(name, 1)
    rng = np.random.default_rng(3)
    points = scene.bounds_min + rng.random((600, 3)) * (scene.bounds_max - scene.bounds_min)
    batched = scene.collides(points, 0.3)
    singles = np.array([scene.collides(p[None, :], 0.3)[0] for p in points])
    assert (batched == singles).all()
    assert 0 < batched.sum() < len(points), "the sample has both clear and colliding points"
