"""The vehicle library drawn like FLYINGTRUST's Fig. 7: mass against each capability number.

Three panels (TWR_max, alpha_xy_max, alpha_z_max against mass), real and virtual platforms in
different markers, each subset's mean as a dashed line. The angular accelerations span more than
an order of magnitude between the subsets, so their axes are logarithmic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from profiles.vehicle import VehicleProfile

PANELS = (
    ("twr_max", "TWR$_{max}$"),
    ("alpha_xy_max", r"$\alpha_{xy,max}$ (rad/s$^2$)"),
    ("alpha_z_max", r"$\alpha_{z,max}$ (rad/s$^2$)"),
)
STYLE = {"real": ("o", "tab:blue"), "virtual": ("^", "tab:orange")}
OTHER_STYLE = ("s", "tab:gray")


def plot_library(profiles: Sequence[VehicleProfile], out: Path, title: str = "Vehicle profiles") -> Path:
    """Write the three-panel figure as PNG to ``out`` and return the path."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window: this runs on CI and over SSH
    import matplotlib.pyplot as plt

    categories = sorted({p.category for p in profiles}, key=lambda c: (c not in STYLE, c))
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), constrained_layout=True)
    for ax, (field, label) in zip(axes, PANELS):
        for category in categories:
            members = [p for p in profiles if p.category == category]
            marker, colour = STYLE.get(category, OTHER_STYLE)
            values = [getattr(p, field) for p in members]
            ax.scatter([p.mass for p in members], values, marker=marker, color=colour,
                       label=f"{category} ({len(members)})", edgecolors="black", linewidths=0.4, zorder=3)
            mean = sum(values) / len(values)
            ax.axhline(mean, color=colour, linestyle="--", linewidth=1,
                       label=f"{category} mean {mean:.3g}", zorder=2)
        if field != "twr_max":
            ax.set_yscale("log")
        ax.set_xlabel("mass (kg)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
