"""`hil scene`: list, render, measure and export the benchmark scenes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hil.commands.args import positive_float

EXPORT_FORMATS = ("ply", "pcd", "obj", "mesh-ply", "npz")


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "scene", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="list, render, measure (TO/VO/AOL) and export benchmark scenes",
        description="The seven FLYINGTRUST scenes and the eight FlightBench tests, each in ten seeded "
                    "configurations (seed 0-9), in local NED metres.",
        epilog="examples:\n"
               "  hil scene list\n"
               "  hil scene show forest --seed 3                  writes forest-3-top.png and forest-3-side.png\n"
               "  hil scene difficulty flightbench-maze-high      TO, VO and AOL on the guide path\n"
               "  hil scene export perlin --seed 1 --format pcd --out perlin-1.pcd")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="scene names, sources and dimensions").set_defaults(func=run_list)

    def scene_action(name: str, help_text: str):
        sub = actions.add_parser(name, help=help_text)
        sub.add_argument("name", help="scene name (see `hil scene list`)")
        sub.add_argument("--seed", type=int, default=0, help="configuration 0-9 (default: 0)")
        sub.add_argument("--clearance", type=positive_float, default=None,
                         help="vehicle clearance radius (m) the scene must be connected with (default: 0.3)")
        return sub

    show = scene_action("show", "render top and side views (PNG) with start, goal, reference and guide paths")
    show.add_argument("--out", type=Path, default=Path("."), help="output directory (default: .)")
    show.set_defaults(func=run_show)
    difficulty = scene_action("difficulty", "print FlightBench's TO, VO and AOL for the scene")
    difficulty.add_argument("--drone-radius", type=positive_float, default=0.15, help="r_d in m (default: 0.15)")
    difficulty.set_defaults(func=run_difficulty)
    export = scene_action("export", "write the scene as a point cloud, mesh or exact scene file")
    export.add_argument("--format", choices=EXPORT_FORMATS, default="ply",
                        help="ply/pcd: surface point cloud; obj/mesh-ply: triangles; npz: exact scene (default: ply)")
    export.add_argument("--out", type=Path, help="output file (default: NAME-SEED.EXT)")
    export.add_argument("--frame", choices=("enu", "ned"), default="enu", help="point/mesh frame (default: enu)")
    export.add_argument("--spacing", type=positive_float, default=0.1, help="point-cloud spacing in m (default: 0.1)")
    export.set_defaults(func=run_export)


def _scene(args: argparse.Namespace):
    from missions.scenes import DEFAULT_CLEARANCE, SceneError, generate

    try:
        return generate(args.name, args.seed, args.clearance or DEFAULT_CLEARANCE)
    except SceneError as error:
        print(f"hil scene: {error}", file=sys.stderr)
        return None


def run_list(args: argparse.Namespace) -> int:
    from missions.scenes import SCENES

    width = max(map(len, SCENES))
    for spec in SCENES.values():
        print(f"{spec.name:<{width}}  {spec.summary}  [{spec.source}]")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from missions.difficulty import roomy_guide_path
    from missions.render import render_views

    scene = _scene(args)
    if scene is None:
        return 2
    for path in render_views(scene, args.out, roomy_guide_path(scene)):
        print(path)
    return 0


def run_difficulty(args: argparse.Namespace) -> int:
    from missions.difficulty import scene_difficulty

    scene = _scene(args)
    if scene is None:
        return 2
    result = scene_difficulty(scene, drone_radius=args.drone_radius)
    print(f"{scene.name} seed {scene.seed}  (guide path {result.path_length:.1f} m, {result.spheres} corridor spheres)")
    print(f"TO   {result.to:.3f}   traversability obstruction (Eq. 2)")
    print(f"VO   {result.vo:.3f}   view occlusion (Eq. 3)")
    print(f"AOL  {result.aol:.4g}   angle over length, 1/m (Eq. 4)")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from missions.export import export_scene

    scene = _scene(args)
    if scene is None:
        return 2
    extension = {"mesh-ply": "ply"}.get(args.format, args.format)
    out = args.out or Path(f"{scene.name}-{scene.seed}.{extension}")
    count = export_scene(scene, out, args.format, frame=args.frame, spacing=args.spacing)
    unit = {"obj": "triangles", "mesh-ply": "triangles", "npz": "primitives (exact)"}.get(args.format, "points")
    print(f"{out}: {count or ''} {unit} ({args.frame.upper() if args.format != 'npz' else 'NED'})".replace(":  ", ": "))
    return 0
