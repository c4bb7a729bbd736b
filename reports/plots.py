"""The report's figures, each a function returning PNG bytes (matplotlib, no display needed).

Figure numbers refer to FLYINGTRUST: Fig. 9 per-scenario success with CIs, Fig. 10
success against each capability number, Figs. 12-16 platform x scenario heatmaps.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # files only; never a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Circle, Rectangle  # noqa: E402

from missions.geometry import Scene  # noqa: E402

DPI = 130  # sharp at the page width (images scale to it, never wider)


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def success_by_scenario(table: pd.DataFrame) -> bytes:
    """Fig. 9: grouped bars (scenario x planner) of success rate with CI whiskers.

    `table`: planner, scene, value, low, high.
    """
    scenes = list(dict.fromkeys(table["scene"]))
    planners = list(dict.fromkeys(table["planner"]))
    width = 0.8 / max(len(planners), 1)
    figure, axes = plt.subplots(figsize=(max(6, 1.3 * len(scenes)), 3.6))
    for k, planner in enumerate(planners):
        rows = table[table["planner"] == planner].set_index("scene").reindex(scenes)
        x = np.arange(len(scenes)) + (k - (len(planners) - 1) / 2) * width
        errors = np.vstack([rows["value"] - rows["low"], rows["high"] - rows["value"]]).clip(min=0)
        bars = axes.bar(x, rows["value"], width, yerr=errors, capsize=3, label=planner)
        # A rate of 0 draws no bar: a marker on each value keeps a whole series from vanishing.
        axes.plot(x, rows["value"], "_", markersize=14, markeredgewidth=3, color=bars.patches[0].get_facecolor())
    axes.set_xticks(np.arange(len(scenes)), scenes, rotation=20)
    axes.set_ylim(-0.02, 1.05)
    axes.set_ylabel("success rate")
    axes.set_title("Success by scenario (95 % Wilson CI)")
    axes.legend(fontsize=8)
    return _png(figure)


def success_by_capability(table: pd.DataFrame) -> bytes:
    """Fig. 10: per-platform success (mean over scenarios, CI) against TWR_max, alpha_xy_max, alpha_z_max.

    `table`: planner, profile, twr_max, alpha_xy_max, alpha_z_max, value, low, high.
    """
    figure, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharey=True)
    for column, axis, label in zip(("twr_max", "alpha_xy_max", "alpha_z_max"), axes,
                                   ("TWR_max", "alpha_xy_max (rad/s^2)", "alpha_z_max (rad/s^2)")):
        for planner, rows in table.groupby("planner", sort=False):
            errors = np.vstack([rows["value"] - rows["low"], rows["high"] - rows["value"]]).clip(min=0)
            axis.errorbar(rows[column], rows["value"], yerr=errors, fmt="o", ms=4, capsize=2, label=planner)
        if column == "alpha_xy_max":
            axis.set_xscale("log")
        axis.set_xlabel(label)
        axis.set_ylim(-0.05, 1.05)
    axes[0].set_ylabel("success rate")
    axes[0].legend(fontsize=8)
    figure.suptitle("Success against platform capability (95 % bootstrap CI)")
    return _png(figure)


def heatmap(matrix: pd.DataFrame, title: str) -> bytes:
    """Figs. 12-16: success rate, platforms (rows) x scenarios (columns), 0 dark to 1 bright."""
    figure, axes = plt.subplots(figsize=(1.1 * len(matrix.columns) + 3, 0.28 * len(matrix.index) + 1.5))
    image = axes.imshow(matrix.to_numpy(float), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    axes.set_xticks(range(len(matrix.columns)), matrix.columns, rotation=30, ha="right")
    axes.set_yticks(range(len(matrix.index)), matrix.index, fontsize=7)
    if matrix.size <= 400:
        for (i, j), value in np.ndenumerate(matrix.to_numpy(float)):
            if not np.isnan(value):
                axes.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=6,
                          color="black" if value > 0.6 else "white")
    figure.colorbar(image, ax=axes, label="success rate")
    axes.set_title(title)
    return _png(figure)


def _draw_scene(axes, scene: Scene) -> None:
    """Top-down view (east right, north up) of the obstacles near the flight altitude."""
    lo, hi = scene.bounds_min, scene.bounds_max
    axes.add_patch(Rectangle((lo[1], lo[0]), hi[1] - lo[1], hi[0] - lo[0], fill=False, ls="--", color="grey"))
    cylinders = scene.cylinders
    for a, b, r in zip(cylinders.a, cylinders.b, cylinders.radius):
        if abs(a[0] - b[0]) < 1e-6 and abs(a[1] - b[1]) < 1e-6:
            axes.add_patch(Circle((a[1], a[0]), r, color="saddlebrown", alpha=0.6))
        else:
            axes.plot([a[1], b[1]], [a[0], b[0]], color="saddlebrown", alpha=0.6, lw=max(1.0, 8 * r))
    boxes = scene.boxes
    if len(boxes):
        box_lo, box_hi = boxes.bounding_boxes()
        for l, h in zip(box_lo, box_hi):
            axes.add_patch(Rectangle((l[1], l[0]), h[1] - l[1], h[0] - l[0], color="slategray", alpha=0.5))
    if scene.voxels is not None and len(scene.voxels):
        # Only cubes within 1 m of the start altitude: a full projection would blacken the plot.
        centres = scene.voxels.centres
        near = np.abs(centres[:, 2] - scene.start[2]) < 1.0
        axes.scatter(centres[near, 1], centres[near, 0], s=4, marker="s", color="slategray", alpha=0.5)
    axes.plot(*scene.reference_path()[:, [1, 0]].T, color="tab:blue", lw=1, ls=":", label="reference")
    axes.plot(scene.start[1], scene.start[0], "g^", ms=8)
    axes.plot(scene.goal[1], scene.goal[0], "r*", ms=10)


def tracks_on_scene(scene: Scene, tracks: list[tuple[str, np.ndarray]], title: str) -> bytes:
    """Flown tracks (label, (N, 3) scene-frame positions) over the scene, top-down."""
    figure, axes = plt.subplots(figsize=(5, 5.5))
    _draw_scene(axes, scene)
    for label, track in tracks:
        axes.plot(track[:, 1], track[:, 0], lw=1.2, label=label)
        axes.plot(track[-1, 1], track[-1, 0], "kx", ms=5)
    axes.set_aspect("equal")
    axes.set_xlabel("east (m)")
    axes.set_ylabel("north (m)")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(figure)


def distributions(samples: dict[str, np.ndarray], title: str, ylabel: str) -> bytes:
    """Side-by-side box plots, one per label (e.g. T_tot per target)."""
    figure, axes = plt.subplots(figsize=(1.6 * len(samples) + 2, 3.2))
    labels = list(samples)
    axes.boxplot([samples[k] for k in labels], tick_labels=labels, showfliers=True)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    return _png(figure)
