"""Top and side views of a scene as PNG images, with start, goal, reference path and guide path.

Views are drawn the way a pilot reads a map: the top view has east to the right and north up; the
side view has north (along the route) to the right and altitude up. Obstacles are drawn from their
surface point cloud, coloured by altitude in the top view, so every primitive kind renders the same way.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from missions.geometry import Scene  # noqa: E402

RENDER_SPACING = 0.15  # m between drawn surface points


def render_views(scene: Scene, out_dir: Path, guide: np.ndarray | None = None, stem: str | None = None) -> list[Path]:
    """Write ``STEM-top.png`` and ``STEM-side.png`` into `out_dir`; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = stem or f"{scene.name}-{scene.seed}"
    cloud = scene.surface_points(RENDER_SPACING)
    # Only what lies in the flight band matters to the vehicle; higher parts would hide it from above.
    cloud = cloud[cloud[:, 2] >= scene.bounds_min[2]]
    reference = scene.reference_path()
    title = f"{scene.name} seed {scene.seed}"
    paths = []
    for view, (x, y, xlabel, ylabel) in {"top": (1, 0, "east (m)", "north (m)"),
                                         "side": (0, 2, "north (m)", "altitude (m)")}.items():
        def coords(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return points[:, x], (-points[:, y] if y == 2 else points[:, y])

        extent = [scene.bounds_max[x] - scene.bounds_min[x], scene.bounds_max[y] - scene.bounds_min[y]]
        figure, axes = plt.subplots(figsize=(7, max(2.5, min(9.0, 7 * extent[1] / extent[0] + 1.0))))
        if len(cloud) and view == "top":
            order = np.argsort(-cloud[:, 2])  # highest drawn last, on top
            shown = axes.scatter(*coords(cloud[order]), s=0.5, c=-cloud[order, 2], cmap="viridis", linewidths=0,
                                 rasterized=True)
            figure.colorbar(shown, ax=axes, label="obstacle altitude (m)", shrink=0.8)
        elif len(cloud):
            axes.scatter(*coords(cloud), s=0.5, c="0.45", linewidths=0, rasterized=True)
        axes.plot(*coords(reference), "--", color="tab:blue", lw=1.2, label="reference (straight)")
        if guide is not None:
            axes.plot(*coords(guide), "-", color="tab:red", lw=1.4, label="guide path")
        axes.plot(*coords(scene.start[None]), "o", color="tab:green", ms=8, label="start")
        axes.plot(*coords(scene.goal[None]), "*", color="tab:red", ms=12, label="goal")
        if len(scene.waypoints):
            axes.plot(*coords(scene.waypoints), "s", color="tab:orange", ms=6, label="waypoints")
        lo, hi = coords(np.array([scene.bounds_min, scene.bounds_max]))
        axes.set_xlim(min(lo), max(lo))
        axes.set_ylim(min(hi), max(hi))
        axes.set_aspect("equal" if view == "top" else "auto")
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.set_title(f"{title}: {view} view (NED scene, drawn north/east/altitude)")
        axes.legend(loc="best", fontsize=7, framealpha=0.8)
        path = out_dir / f"{stem}-{view}.png"
        figure.tight_layout()
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths
