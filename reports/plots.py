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


def targets_by_metric(values: pd.DataFrame, gaps: pd.DataFrame, reference: str, labels: dict[str, str]) -> bytes:
    """One panel per metric: each target's value with its 95 % interval (`values`: metric, target, value, low, high,
    n), the reference's as a dashed line across the panel, and above each other target its mean paired difference
    from the reference with its interval (`gaps`: target, metric, difference, low, high, pairs, significant; a bold
    one is significant)."""
    metrics = list(dict.fromkeys(values["metric"]))
    targets = list(dict.fromkeys(values["target"]))
    columns = min(3, len(metrics))
    rows = -(-len(metrics) // columns)
    figure, panels = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.0 * rows), squeeze=False)
    colours = {t: f"C{k}" for k, t in enumerate(targets)}
    for axes, metric in zip(panels.flat, metrics):
        rows_of = values[values["metric"] == metric].set_index("target").reindex(targets)
        x = np.arange(len(targets))
        for k, target in enumerate(targets):
            value, low, high = rows_of.loc[target, ["value", "low", "high"]].astype(float)
            if np.isnan(value):
                axes.text(k, 0.5, "none", ha="center", va="center", transform=axes.get_xaxis_transform(),
                          fontsize=7, color="0.5")
                continue
            error = np.array([[max(value - low, 0.0)], [max(high - value, 0.0)]]) if not np.isnan(low) else None
            axes.errorbar(k, value, yerr=error, fmt="o", color=colours[target], capsize=4, ms=5)
        reference_value = rows_of.loc[reference, "value"] if reference in rows_of.index else np.nan
        if not np.isnan(reference_value):
            axes.axhline(reference_value, color=colours[reference], ls="--", lw=0.8)
        for _, gap in gaps[gaps["metric"] == metric].iterrows():
            if np.isnan(gap["difference"]):
                continue
            text = f"Δ {gap['difference']:+.3g}\n" + (f"[{gap['low']:+.3g}, {gap['high']:+.3g}]" if not np.isnan(
                gap["low"]) else f"({int(gap['pairs'])} pair)")
            axes.annotate(text, (targets.index(gap["target"]), 1.0), xycoords=("data", "axes fraction"),
                          xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=6.5,
                          fontweight="bold" if gap["significant"] else "normal")
        axes.set_xticks(x, targets, rotation=15, fontsize=7)
        axes.set_xlim(-0.6, len(targets) - 0.4)
        axes.set_title(labels.get(metric, metric), fontsize=8, pad=24)
        axes.tick_params(axis="y", labelsize=7)
        axes.margins(y=0.15)
    for axes in list(panels.flat)[len(metrics):]:
        axes.set_visible(False)
    figure.suptitle(f"Each target's value (95 % CI); Δ: mean paired difference from {reference} (95 % t CI)",
                    fontsize=9)
    figure.tight_layout()
    return _png(figure)
