"""Writing scenes for other tools: point clouds (PLY, PCD), a triangle mesh (OBJ), and the exact scene (NPZ).

Point clouds and meshes are written in ENU (x east, y north, z up), the frame ROS, Gazebo and most
point-cloud tools assume; the harness itself stays in NED (docs/design.md: convert at the boundary).
`frame="ned"` writes the harness's own frame instead. The NPZ file holds the primitives exactly,
in NED, and `load_scene` reads it back for missions that name a scene file.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from config.loading import MAX_BYTES, read_bytes
from missions.geometry import Boxes, Cylinders, Scene, Voxels, perpendicular_basis

FRAMES = ("enu", "ned")
CYLINDER_SIDES = 16  # facets around a cylinder in the mesh
# A scene file is kilobytes (its primitives; a voxel grid compresses well): room for large hand-made ones.
MAX_SCENE_BYTES = 16 * MAX_BYTES
MAX_SCENE_UNPACKED_BYTES = 4 * MAX_SCENE_BYTES


def to_frame(points: np.ndarray, frame: str) -> np.ndarray:
    """NED points in the requested frame: ENU swaps north/east and flips down to up."""
    if frame not in FRAMES:
        raise ValueError(f"frame: expected one of {', '.join(FRAMES)}, got {frame!r}")
    points = np.asarray(points, dtype=float)
    return points[:, [1, 0, 2]] * [1, 1, -1] if frame == "enu" else points


def write_ply(path: Path, points: np.ndarray, faces: np.ndarray | None = None) -> None:
    """Binary little-endian PLY with float32 vertices and, optionally, triangle faces."""
    header = ["ply", "format binary_little_endian 1.0", f"element vertex {len(points)}",
              "property float x", "property float y", "property float z"]
    if faces is not None:
        header += [f"element face {len(faces)}", "property list uchar int vertex_indices"]
    header.append("end_header")
    with open(path, "wb") as out:
        out.write(("\n".join(header) + "\n").encode("ascii"))
        out.write(np.asarray(points, dtype="<f4").tobytes())
        if faces is not None:
            record = np.dtype([("n", "u1"), ("v", "<i4", (3,))])
            rows = np.empty(len(faces), dtype=record)
            rows["n"], rows["v"] = 3, faces
            out.write(rows.tobytes())


def write_pcd(path: Path, points: np.ndarray) -> None:
    """PCD v0.7 (the Point Cloud Library's format), binary, float32 x y z."""
    header = ["# .PCD v0.7 - Point Cloud Data file format", "VERSION 0.7", "FIELDS x y z", "SIZE 4 4 4",
              "TYPE F F F", "COUNT 1 1 1", f"WIDTH {len(points)}", "HEIGHT 1", "VIEWPOINT 0 0 0 1 0 0 0",
              f"POINTS {len(points)}", "DATA binary"]
    with open(path, "wb") as out:
        out.write(("\n".join(header) + "\n").encode("ascii"))
        out.write(np.asarray(points, dtype="<f4").tobytes())


def scene_mesh(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    """Triangles of every obstacle in NED: (vertices (V, 3), faces (F, 3) of vertex indices)."""
    parts = [_box_mesh(scene.boxes.lo, scene.boxes.hi), _cylinder_mesh(scene.cylinders)]
    if scene.voxels is not None:
        parts.append(_voxel_mesh(scene.voxels))
    vertices, faces, offset = [], [], 0
    for v, f in parts:
        vertices.append(v)
        faces.append(f + offset)
        offset += len(v)
    return np.vstack(vertices), np.vstack(faces).astype(np.int64)


# Corner k of a box has coordinate bit k&1 -> x, k&2 -> y, k&4 -> z; two triangles per face.
_BOX_FACES = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                       [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])


def _box_mesh(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bits = np.array([[(k >> a) & 1 for a in range(3)] for k in range(8)], dtype=bool)
    corners = np.where(bits[None], hi[:, None, :], lo[:, None, :])  # (B, 8, 3)
    faces = _BOX_FACES[None] + 8 * np.arange(len(lo))[:, None, None]
    return corners.reshape(-1, 3), faces.reshape(-1, 3)


def _cylinder_mesh(cylinders: Cylinders) -> tuple[np.ndarray, np.ndarray]:
    n = CYLINDER_SIDES
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    vertices, faces = [], []
    for index, (a, b, r) in enumerate(zip(cylinders.a, cylinders.b, cylinders.radius)):
        e1, e2 = perpendicular_basis((b - a) / np.linalg.norm(b - a))
        ring = r * (np.cos(angles)[:, None] * e1 + np.sin(angles)[:, None] * e2)
        vertices.append(np.vstack([a + ring, b + ring, a, b]))  # 2n ring vertices, then the two cap centres
        base = index * (2 * n + 2)
        i = np.arange(n)
        j = (i + 1) % n
        faces += [np.column_stack([i, j, n + i]), np.column_stack([j, n + j, n + i]),
                  np.column_stack([np.full(n, 2 * n), j, i]), np.column_stack([np.full(n, 2 * n + 1), n + i, n + j])]
        faces[-4:] = [f + base for f in faces[-4:]]
    if not vertices:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
    return np.vstack(vertices), np.vstack(faces)


def _voxel_mesh(voxels: Voxels) -> tuple[np.ndarray, np.ndarray]:
    """Two triangles per exposed cube face (hidden faces between neighbours are left out)."""
    centres, normals = voxels.exposed_faces()
    half = voxels.size / 2
    vertices = []
    for axis in range(3):
        i, j = [m for m in range(3) if m != axis]
        on_axis = normals[:, axis] != 0
        square = np.zeros((4, 3))
        square[:, i] = [-half, half, half, -half]
        square[:, j] = [-half, -half, half, half]
        vertices.append(centres[on_axis][:, None, :] + square[None])
    quads = np.vstack(vertices)
    base = 4 * np.arange(len(quads))[:, None]
    faces = np.vstack([base + [0, 1, 2], base + [0, 2, 3]])
    return quads.reshape(-1, 3), faces


def write_obj(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Wavefront OBJ (1-based vertex indices)."""
    with open(path, "w", encoding="ascii") as out:
        out.write("# quad-hil scene mesh\n")
        np.savetxt(out, vertices, fmt="v %.4f %.4f %.4f")
        np.savetxt(out, faces + 1, fmt="f %d %d %d")


def save_scene(path: Path, scene: Scene) -> None:
    """The exact scene (primitives, start, goal, waypoints) as NPZ, in NED."""
    voxels = scene.voxels
    np.savez_compressed(
        path, name=scene.name, seed=scene.seed, bounds_min=scene.bounds_min, bounds_max=scene.bounds_max,
        start=scene.start, goal=scene.goal, waypoints=scene.waypoints,
        cylinder_a=scene.cylinders.a, cylinder_b=scene.cylinders.b, cylinder_radius=scene.cylinders.radius,
        box_lo=scene.boxes.lo, box_hi=scene.boxes.hi,
        voxel_origin=voxels.origin if voxels is not None else np.zeros(0),
        voxel_size=voxels.size if voxels is not None else 0.0,
        voxel_occupied=voxels.occupied if voxels is not None else np.zeros((0, 0, 0), dtype=bool),
        parameters=json.dumps(scene.parameters),
    )


def load_scene(path: Path) -> Scene:
    """Read a scene written by `save_scene`; ValueError naming the file for anything else (a lone .npy array,
    a pickle, an archive whose arrays would unpack to more than MAX_SCENE_UNPACKED_BYTES)."""
    try:
        loaded = np.load(io.BytesIO(read_bytes(path, "scene file", MAX_SCENE_BYTES)), allow_pickle=False)
    except (EOFError, zipfile.BadZipFile) as error:
        raise ValueError(f"{path}: not a .npz archive ({error})") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: expected a .npz archive of a scene's arrays, got a single array")
    # Compressed members are small on disk: their unpacked size is what memory pays.
    unpacked = sum(member.file_size for member in loaded.zip.infolist())
    if unpacked > MAX_SCENE_UNPACKED_BYTES:
        loaded.close()
        raise ValueError(f"{path}: its arrays unpack to {unpacked} bytes, over {MAX_SCENE_UNPACKED_BYTES}")
    with loaded as data:
        voxels = None
        if data["voxel_occupied"].size:
            voxels = Voxels(data["voxel_origin"], float(data["voxel_size"]), data["voxel_occupied"])
        return Scene(
            name=str(data["name"]), seed=int(data["seed"]), bounds_min=data["bounds_min"], bounds_max=data["bounds_max"],
            start=data["start"], goal=data["goal"], waypoints=data["waypoints"],
            cylinders=Cylinders(data["cylinder_a"], data["cylinder_b"], data["cylinder_radius"]),
            boxes=Boxes(data["box_lo"], data["box_hi"]), voxels=voxels,
            parameters=json.loads(str(data["parameters"])),
        )


def export_scene(scene: Scene, path: Path, fmt: str, *, frame: str = "enu", spacing: float = 0.1) -> int:
    """Write `scene` to `path` as ply / pcd (surface point cloud), mesh-ply / obj (triangles) or npz.

    Returns the number of points (or triangles, for a mesh; 0 for npz) written.
    """
    if fmt in ("ply", "pcd"):
        points = to_frame(scene.surface_points(spacing), frame)
        (write_ply if fmt == "ply" else write_pcd)(path, points)
        return len(points)
    if fmt in ("obj", "mesh-ply"):
        vertices, faces = scene_mesh(scene)
        if frame == "enu":
            faces = faces[:, ::-1]  # the ENU swap mirrors the scene; reverse winding to keep normals outward
        vertices = to_frame(vertices, frame)
        write_obj(path, vertices, faces) if fmt == "obj" else write_ply(path, vertices, faces)
        return len(faces)
    if fmt == "npz":
        save_scene(path, scene)
        return 0
    raise ValueError(f"format: expected one of ply, pcd, obj, mesh-ply, npz, got {fmt!r}")
