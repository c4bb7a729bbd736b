"""`hil profiles`: list, show and plot the vehicle profiles (FLYINGTRUST's library and others)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "profiles", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="list, show and plot vehicle profiles",
        description="Vehicle profiles describe a quadrotor by FLYINGTRUST's capability numbers: mass, TWR_max, "
                    "alpha_xy_max and alpha_z_max. The 36 platforms of FLYINGTRUST's Table I are shipped; a "
                    "profile file may also give a physical: block (frame, rotors, inertia) instead of the numbers.",
        epilog="examples:\n"
               "  hil profiles list\n"
               "  hil profiles list --category virtual\n"
               "  hil profiles show 2.00kg-T-MOTOR\n"
               "  hil profiles show my_quad.yaml          # a file, e.g. one with a physical: block\n"
               "  hil profiles plot --out runs/profiles.png")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="a table of every shipped profile")
    listing.add_argument("--category", help="only this category (real, virtual, ...)")
    show = actions.add_parser("show", help="one profile: its numbers, the rigid body and the PX4 SIH parameters")
    show.add_argument("name", help="profile name or YAML file")
    plot = actions.add_parser("plot", help="mass against each capability number, like FLYINGTRUST's Fig. 7 (PNG)")
    plot.add_argument("--out", type=Path, required=True, help="PNG file to write")
    plot.add_argument("--category", help="only this category")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from profiles.library import load_vehicle_profile
    from profiles.vehicle import ProfileError

    try:
        if args.action == "show":
            print(format_profile(load_vehicle_profile(args.name)))
            return 0
        profiles = _shipped(args.category)
    except ProfileError as exc:
        print(f"hil profiles: {exc}", file=sys.stderr)
        return 2
    if not profiles:
        print(f"hil profiles: no profiles in category {args.category!r}", file=sys.stderr)
        return 2
    if args.action == "list":
        print(format_table(profiles))
        return 0
    from profiles.plot import plot_library
    from profiles.library import library_profiles

    # The figure is of the library (Table I), not of one-off profile files such as `default`.
    library = [p for p in library_profiles() if args.category is None or p.category == args.category]
    print(f"wrote {plot_library(library or profiles, args.out, title='FLYINGTRUST vehicle library (Table I)')}")
    return 0


def _shipped(category: str | None):
    from profiles.library import list_vehicle_profiles, load_vehicle_profile

    profiles = [load_vehicle_profile(name) for name in list_vehicle_profiles()]
    profiles = [p for p in profiles if category is None or p.category == category]
    return sorted(profiles, key=lambda p: (p.category, p.mass, p.name))


def format_table(profiles) -> str:
    """One line per profile, aligned, with per-category means at the end."""
    head = f"{'name':<28}{'category':<10}{'mass kg':>8}{'TWR':>6}{'a_xy rad/s2':>13}{'a_z rad/s2':>12}"
    lines = [head, "-" * len(head)]
    for p in profiles:
        lines.append(f"{p.name:<28}{p.category:<10}{p.mass:>8.3g}{p.twr_max:>6.2f}{p.alpha_xy_max:>13.1f}"
                     f"{p.alpha_z_max:>12.2f}")
    lines.append("-" * len(head))
    for category in sorted({p.category for p in profiles}):
        members = [p for p in profiles if p.category == category]
        n = len(members)
        lines.append(f"{'mean of ' + str(n) + ' ' + category:<38}"
                     f"{sum(p.twr_max for p in members) / n:>8.2f}"
                     f"{sum(p.alpha_xy_max for p in members) / n:>13.2f}"
                     f"{sum(p.alpha_z_max for p in members) / n:>12.2f}")
    return "\n".join(lines)


def format_profile(profile) -> str:
    """The profile's numbers, the rigid body the built-in vehicle flies, and PX4 SITL's parameters."""
    from px4.sih import sitl_params

    phys = profile.physical()
    rows = [
        ("name", profile.name), ("label", profile.label or "-"), ("category", profile.category),
        ("mass", f"{profile.mass:g} kg"), ("TWR_max", f"{profile.twr_max:g}"),
        ("alpha_xy_max", f"{profile.alpha_xy_max:g} rad/s^2"), ("alpha_z_max", f"{profile.alpha_z_max:g} rad/s^2"),
        ("layout", profile.layout), ("motor_tau", f"{profile.motor_tau:g} s"), ("radius", f"{profile.radius:.3f} m"),
        ("", ""),
        ("rigid body", "(profiles/physical.py: derived, reproduces the three numbers)"),
        ("arm length", f"{phys.arm_length:.4f} m"), ("rotor thrust max", f"{phys.rotor_thrust_max:.4f} N"),
        ("rotor torque max", f"{phys.rotor_torque_max:.5f} N m"),
        ("inertia xx yy zz", f"{phys.ixx:.6f} {phys.iyy:.6f} {phys.izz:.6f} kg m^2"),
        ("hover thrust", f"{phys.hover_thrust:.3f}"),
    ]
    text = [f"{k:<18}{v}" if k else "" for k, v in rows]
    try:
        params = sitl_params(profile)
    except ValueError as exc:
        text += ["", f"PX4 SITL: {exc}"]
    else:
        text += ["", "PX4 SITL (px4/sih.py)"] + [f"  {name:<16}{value:.6g}" for name, value in params.items()]
    return "\n".join(text)
