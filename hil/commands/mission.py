"""`hil mission`: check a mission file of any format, and export one as a QGroundControl plan."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hil.commands.args import add_json

# PX4 SITL's default home (PX4_HOME_LAT / PX4_HOME_LON / PX4_HOME_ALT): where a mission planned in local
# metres is placed when neither the file nor --home gives one.
PX4_SITL_HOME = (47.397742, 8.545594, 488.0)


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "mission", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="check mission files (any format) and export them as QGroundControl plans",
        description="Mission files are the harness's YAML (missions/examples/: waypoints, or benchmark missions "
                    "with a scene, airspace and stages), the older waypoint YAML, QGroundControl .plan files "
                    "and 'QGC WPL 110' waypoint files; all are read into one mission model. `check` validates "
                    "and summarizes them; `export` writes a .plan that QGroundControl opens (mission items, "
                    "geofence, rally points). A trial record of `hil fly` holds its mission as mission.plan, "
                    "placed at the vehicle's home.",
        epilog="examples:\n"
               "  hil mission check missions/examples/benchmark/*.yaml\n"
               "  hil mission check field.plan\n"
               "  hil mission check missions/examples/*.yaml --json   # one JSON object: each file's figures or error\n"
               "  hil mission export missions/examples/benchmark/field_survey.yaml --out survey.plan\n"
               "  hil mission export demo_square --out square.plan --home 47.3977,8.5456,488")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate mission files and print what each one flies")
    check.add_argument("files", nargs="+", help="mission files or packaged mission names")
    add_json(check)
    check.set_defaults(func=run_check)
    export = actions.add_parser("export", help="write a mission as a QGroundControl .plan")
    export.add_argument("file", help="mission file or packaged mission name")
    export.add_argument("--out", type=Path, required=True, help="the .plan to write")
    export.add_argument("--home", type=_home, metavar="LAT,LON,ALT",
                        help="WGS84 home (alt m above mean sea level) the local metres hang from (default: the "
                             "file's home, else PX4 SITL's default %s,%s,%s)" % PX4_SITL_HOME)
    export.set_defaults(func=run_export)


def _home(text: str):
    from missions.geo import GeoOrigin

    try:
        lat, lon, alt = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LAT,LON,ALT (three numbers), got {text!r}") from None
    if not (-90 <= lat <= 90 and -180 <= lon <= 180 and -500 <= alt <= 9000):
        raise argparse.ArgumentTypeError(f"expected lat in [-90, 90], lon in [-180, 180], alt in [-500, 9000] m, "
                                         f"got {text!r}")
    return GeoOrigin(lat, lon, alt)


def facts(mission) -> dict:
    """What a mission flies, as figures (`hil mission check` prints them, and --json gives them)."""
    from missions.geometry import polyline_length

    air, scene, home = mission.airspace, mission.scene, mission.home
    return {"name": mission.name, "type": mission.type, "mode": mission.mode, "route_points": len(mission.route),
            "length_m": polyline_length(mission.reference_path()), "time_budget_s": mission.time_budget,
            "speed_cap_m_s": mission.speed_cap, "stages": list(mission.stages),
            "altitude_band_m": [air.alt_min, air.alt_max],
            "geofence": [name for name, on in (("polygon", air.geofence is not None),
                                               ("circle", air.geofence_circle is not None)) if on],
            "no_fly_zones": len(air.no_fly) + len(air.no_fly_polygons),
            "scene": f"{scene.generator or scene.file}:{scene.seed}" if scene is not None else None,
            "faults": len(mission.faults), "comms_loss_windows": len(mission.comms_loss),
            "home": [home.lat_deg, home.lon_deg, home.alt_m] if home is not None else None}


def describe(mission: dict) -> str:
    """What a mission flies (its `facts`), in a few lines."""
    m = mission
    lines = [f"{m['name']}: {m['type']}, flown {m['mode']}, {m['route_points']} route points, {m['length_m']:.1f} m, "
             f"budget {m['time_budget_s']:g} s at {m['speed_cap_m_s']:g} m/s",
             f"  stages    {', '.join(m['stages'])}",
             f"  airspace  {m['altitude_band_m'][0]:g}-{m['altitude_band_m'][1]:g} m, geofence "
             f"{' and '.join(m['geofence']) or 'none'}, {m['no_fly_zones']} no-fly zone(s)",
             f"  scene     {m['scene'] or 'none (open air)'}"]
    if m["faults"] or m["comms_loss_windows"]:
        lines.append(f"  faults    {m['faults']}, comms-loss windows {m['comms_loss_windows']}")
    if m["home"] is not None:
        lat, lon, alt = m["home"]
        lines.append(f"  home      {lat:.7f}, {lon:.7f}, {alt:g} m")
    return "\n".join(lines)


def run_check(args: argparse.Namespace) -> int:
    from config.errors import ConfigError
    from missions.load import load

    checked = []
    for name in args.files:
        try:
            mission = facts(load(name))
        except ConfigError as exc:
            print(f"hil mission: {exc}", file=sys.stderr)
            checked.append({"file": name, "valid": False, "error": str(exc)})
            continue
        print(describe(mission))
        checked.append({"file": name, "valid": True, **mission})
    args.result = {"verb": "mission", "action": "check", "missions": checked}
    return 2 if any(not m["valid"] for m in checked) else 0


def run_export(args: argparse.Namespace) -> int:
    from config.errors import ConfigError
    from missions.geo import GeoOrigin
    from missions.load import load
    from missions.qgc import write_plan

    try:
        mission = load(args.file)
    except ConfigError as exc:
        print(f"hil mission: {exc}", file=sys.stderr)
        return 2
    home = args.home or mission.home or GeoOrigin(*PX4_SITL_HOME)
    try:
        write_plan(mission, args.out, home)
    except OSError as exc:
        print(f"hil mission: {args.out}: cannot write ({exc.strerror or exc})", file=sys.stderr)
        return 2
    print(f"plan     {args.out} ({len(mission.route)} route points, home {home.lat_deg:.7f}, {home.lon_deg:.7f}, "
          f"{home.alt_m:g} m)")
    return 0
