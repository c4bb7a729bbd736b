"""`hil fly`: fly one mission on a target and write a trial record."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
from pathlib import Path

from hil.commands.args import (
    add_json,
    bounded_int,
    param_assignment,
    percent,
    positive_float,
)
from hil.exit_codes import ERROR, INTERRUPTED, for_outcome


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "fly", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="fly one mission on a target and write a trial record",
        description="Fly a mission on a target, record telemetry and events into a trial record directory, and "
                    "print a summary. A mission is a YAML mission file (missions/examples/: waypoints, or a "
                    "benchmark mission with a scene, airspace and stages), a QGroundControl .plan, or a "
                    "'QGC WPL 110' waypoint file. Its airspace and its scene's obstacles are enforced: leaving "
                    "the one or touching the other ends the flight as a failure naming the zone. The exit code "
                    "is 0 only when the mission succeeded.",
        epilog="examples:\n"
               "  hil fly missions/examples/demo_square.yaml\n"
               "  hil fly missions/examples/offboard_square.yaml --speed 4 --record-dir runs/offboard\n"
               "  hil fly missions/examples/demo_square.yaml --target lockstep      # simulated time, ~150x\n"
               "  hil fly missions/examples/benchmark/field_survey.yaml --target lockstep   # stages, airspace\n"
               "  hil fly missions/examples/qgc/field_square.plan --target lockstep  # planned in QGroundControl\n"
               "  hil fly demo_square --target px4-sitl --speed 4   # a packaged mission by name; needs PX4_DIR\n"
               "  hil fly MISSION.yaml --target udpin://127.0.0.1:14540 --arm   # an autopilot already running\n"
               "\nsafety: a target other than 'sim' is treated as a real aircraft: nothing arms without --arm.\n"
               "\nstopping: Ctrl-C, SIGTERM (systemd, timeout, a cancelled CI job, docker stop), SIGHUP (the terminal\n"
               "closed) or the 'a' key at any phase ends the flight the same way: the vehicle lands; if the land\n"
               "does not take it is commanded again, then Return, then Hold (the last line says so); parameters\n"
               "are restored; exit 130 (4 if the vehicle could not be made safe). A second Ctrl-C while it is\n"
               "airborne only warns; a third lets go. On a flight controller (a connection string) the harness\n"
               "also arms the vehicle's own data-link-loss failsafe for the flight (NAV_DLL_ACT, journaled and\n"
               "restored): after kill -9, a dead laptop or a cut cable the vehicle returns or lands by itself\n"
               "within COM_DL_LOSS_T, and the next hil fly restores its parameters once it has landed.")
    parser.add_argument("mission", type=Path,
                        help="mission file (.yaml, QGroundControl .plan, QGC WPL .waypoints) or a packaged "
                             "mission's name (demo_square)")
    parser.add_argument("--target", default="sim",
                     help="'sim' (start the built-in vehicle as a MAVLink process), 'lockstep' (the built-in "
                          "vehicle in-process in simulated time, as fast as the CPU allows), 'px4-sitl[:N]' (start "
                          "PX4 SITL, instance N) or a connection string of a running autopilot, e.g. "
                          "udpin://127.0.0.1:14540 or serial:///dev/ttyACM0:921600 (default: sim)")
    parser.add_argument("--profile", default="default",
                     help="vehicle profile for the built-in vehicle or PX4 SITL (default: %(default)s)")
    parser.add_argument("--speed", type=positive_float, default=1.0,
                     help="simulation speed factor, built-in vehicle or PX4 SITL (default: 1)")
    parser.add_argument("--px4-dir", help="PX4 build for --target px4-sitl (default: $PX4_DIR, else px4 on PATH)")
    parser.add_argument("--physics", choices=("default", "harness"), default="default",
                        help="px4-sitl: 'default' flies PX4's own SIH; 'harness' makes the harness's physics PX4's "
                             "simulator (profile sensors and physical faults act on PX4's sensors). A connection "
                             "string with 'harness': a board in HITL mode on the bench (default: %(default)s)")
    parser.add_argument("--link", metavar="PROFILE",
                        help="link profile (name or file) between the harness and the target: latency, jitter, loss")
    parser.add_argument("--param", type=param_assignment, action="append", default=[], metavar="NAME=VALUE",
                     help="set a PX4 parameter: at boot on sim and px4-sitl; on a flight controller for the flight "
                          "only (journaled, restored afterwards, even after a crash); repeatable")
    parser.add_argument("--params", type=Path, metavar="FILE",
                        help="parameters from a QGroundControl .params file, set like --param (which wins)")
    parser.add_argument("--px4-airframe", metavar="ID|MODEL",
                        help="PX4 SITL airframe by autostart id or model name (default: sihsim_quadx, SIH quad-X; "
                             "none_iris with --physics harness)")
    parser.add_argument("--record-dir", type=Path, help="trial record directory (default: runs/<time>-<mission name>)")
    parser.add_argument("--connect-timeout", type=positive_float, default=15.0,
                        help="seconds to wait for a running autopilot (a connection string) to answer (default: 15); "
                             "a vehicle the harness starts is waited for while its process is alive and starting")
    parser.add_argument("--vehicle-lost-after", type=positive_float, metavar="S",
                        help="wall seconds the vehicle's clock may stand still (a simulator that hangs, a link that "
                             "is gone) before the flight ends as an error, the vehicle lost; a vehicle process the "
                             "harness started is lost the moment it dies (default: bridges.vehicle.VEHICLE_LOST_S, 30)")
    parser.add_argument("--perturb-seed", type=bounded_int(0, 2**31 - 1), metavar="N",
                        help="fly under the perturbation a campaign's repeat draws from seed N (perturb:'s defaults: "
                             "its own sensor noise and gusts, wind up to 1 m/s, the start up to 0.3 m and 5 deg off, "
                             "2 ms of link jitter with --link), kept in the record; simulated targets only "
                             "(default: the nominal flight)")
    safety = parser.add_argument_group("safety (the harness's own limits, on top of the flight controller's)")
    safety.add_argument("--dry-run", action="store_true",
                        help="connect, check, upload: everything but arming")
    safety.add_argument("--geofence-radius", type=positive_float, metavar="M",
                        help="horizontal fence around home (default: the mission's extent + 10 m)")
    safety.add_argument("--max-altitude", type=positive_float, metavar="M",
                        help="altitude ceiling above home (default: the mission's highest point + 10 m)")
    safety.add_argument("--breach-action", choices=("land", "rtl"), default="land",
                        help="what the harness commands when the vehicle leaves its fence (default: land)")
    safety.add_argument("--min-battery", type=percent, default=50.0, metavar="PCT",
                        help="battery needed to start (default: 50)")
    safety.add_argument("--link-loss-action", choices=("return", "land"), default="return",
                        help="on a flight controller: what it does by itself if the harness falls silent (kill -9, "
                             "a dead laptop, a cut cable): NAV_DLL_ACT for the flight (default: %(default)s)")
    safety.add_argument("--link-loss-timeout", type=positive_float, metavar="S",
                        help="on a flight controller: seconds of silence before that (COM_DL_LOSS_T for the flight; "
                             "default: the vehicle's own, PX4's default is 10)")
    parser.add_argument("--arm", action="store_true",
                     help="allow arming a target that is not the built-in vehicle (a real aircraft may fly!)")
    add_json(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Until the flight's own handling is in place, SIGTERM and SIGHUP stop the verb as Ctrl-C does (exit 130):
    # nothing has been commanded yet.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    from bridges.vehicle import VEHICLE_LOST_S
    from config.errors import ConfigError
    from hil.safety import SafetyLimits
    from missions.load import load
    from profiles.library import load_vehicle_profile
    from profiles.link import load_link_profile
    from profiles.perturbation import Perturb, Perturbation
    from px4.params import ParamStore
    from px4.params_file import read_params_file
    from px4.sih import sitl_params
    from px4.sitl import Px4Build, Px4NotFound, SitlError
    from targets import PX4_HITL, PX4_SITL, TargetOptions, TargetSpec
    from targets.spec import perturbation_gaps

    try:
        mission = load(args.mission)
        plan = mission.to_waypoint_mission()
        radius = load_vehicle_profile(args.profile).radius
        target = TargetSpec.parse(args.target)
        params = {**(read_params_file(args.params) if args.params else {}), **dict(args.param)}
        ParamStore(overrides=params)  # a --param PX4 does not have, or out of its range: refused before anything starts
        if target.kind == PX4_SITL:
            Px4Build.locate(args.px4_dir)  # no PX4: say how to get one before anything starts
            if args.physics == "default":
                sitl_params(load_vehicle_profile(args.profile))  # refuses a profile SIH cannot fly, saying why
        if args.link:
            load_link_profile(args.link)
        perturbation = Perturbation() if args.perturb_seed is None else Perturb().draw(args.perturb_seed).without(
            perturbation_gaps(target, args.physics, linked=args.link is not None))
        # A flight controller that is already running keeps its parameters: the flight sets, journals and
        # restores them; simulators take them at boot.
        options = TargetOptions(profile=args.profile, speed=args.speed if target.simulated else 1.0,
                                params=params if target.simulated else {}, link=args.link, physics=args.physics,
                                px4_dir=args.px4_dir, px4_airframe=args.px4_airframe,
                                connect_timeout_s=args.connect_timeout, allow_arming=args.arm,
                                vehicle_lost_s=args.vehicle_lost_after or VEHICLE_LOST_S,
                                # A mission's comms-loss windows cut the simulated link; a real radio is not cut.
                                outages=tuple((w.start_s, w.start_s + w.duration_s) for w in mission.comms_loss)
                                if target.simulated else (), perturbation=perturbation)
    except (ConfigError, ValueError, Px4NotFound) as exc:
        print(f"hil fly: {exc}", file=sys.stderr)
        return 2
    if not target.simulated and args.perturb_seed is not None:
        print(f"hil fly: --perturb-seed perturbs a simulated vehicle (sim, lockstep, px4-sitl); {target.name} is a "
              "flight controller, which flies in the real world's own wind and sensor noise", file=sys.stderr)
        return 2
    # The harness's physics drives PX4 (SITL, or a HITL board on the bench): the mission's faults act in it, where a
    # board on the desk is never at risk from them, and one the physics cannot make real is refused before arming.
    on_physics = target.kind == PX4_HITL or (target.physics or args.physics) == "harness"
    if on_physics and mission.faults:
        from bridges.physics_faults import physics_refusal

        refused = [f"faults[{i}] ({fault.describe()}): {physics_refusal(fault)}"
                   for i, fault in enumerate(mission.faults) if physics_refusal(fault)]
        if refused:
            print(f"hil fly: {args.mission}: the harness's physics flying {target.name} cannot make these faults "
                  f"real, so PX4 would never read them: {'; '.join(refused)}", file=sys.stderr)
            return 2
    if not target.simulated and not args.arm:
        print(f"hil fly: refusing to arm {target.name} without --arm: a target other than 'sim' may be a real "
              "aircraft. Add --arm once the area is clear.", file=sys.stderr)
        return 2
    limits = SafetyLimits.around(plan, breach_action=args.breach_action, radius_m=args.geofence_radius,
                                 max_altitude_m=args.max_altitude)
    say(f"flying {mission.name} ({len(plan.waypoints)} waypoints, {mission.mode}) on {target.name}...")
    if args.perturb_seed is not None:
        say(f"perturbed (seed {args.perturb_seed}): {perturbation.describe()}")
    # The flight's own modules (MAVSDK, pandas, numba, scipy...), about a second on a quiet machine: after the
    # command line and the mission are known good and the person has been told what flies.
    import asyncio

    from hil.field import abort_key, interactive, show_status
    from hil.fly import FlightOptions, default_record_dir, mission_config, run_trial
    from hil.stop import Interrupts
    from reports.estimation import format_estimation, trial_estimation
    from reports.trial_summary import format_summary, summarize_record

    flight = FlightOptions(limits, hardware=not target.simulated, dry_run=args.dry_run,
                           min_battery_pct=args.min_battery, params=params if not target.simulated else {},
                           vehicle_radius=radius, inject_faults=target.simulated or on_physics,
                           link_loss_action=args.link_loss_action, link_loss_timeout_s=args.link_loss_timeout)
    record_dir = args.record_dir or default_record_dir(mission)
    config = mission_config(mission, target=target.name, profile=args.profile, speed=options.speed, params=params,
                            physics=args.physics, link=args.link,
                            px4_airframe=args.px4_airframe if target.kind == PX4_SITL else None,
                            **({} if args.perturb_seed is None else
                               {"perturb_seed": args.perturb_seed, "perturbation": perturbation.as_config()}))
    show = functools.partial(show_status, mission=plan) if interactive() else None

    async def go():
        # Every stop request (a signal, the abort key) cancels the flight; hil.fly turns that into "land now".
        interrupts = Interrupts(asyncio.current_task(), say)
        interrupts.install(asyncio.get_running_loop())
        flight_ = run_trial(target, options, mission, record_dir, config=config, options=flight, say=say, show=show,
                            interrupts=interrupts)
        if not interactive():
            return await flight_
        with abort_key(lambda: interrupts.request("abort key")):
            return await flight_

    try:
        result = asyncio.run(go())
    except (Px4NotFound, SitlError, ConfigError) as exc:  # ConfigError: an untrustworthy parameter journal
        print(f"hil fly: {exc}", file=sys.stderr)
        return 2
    # The figures a person reads are the record's, computed from it now the flight is over.
    summary = summarize_record(result.record_dir, plan.reference_path())
    estimation = trial_estimation(result.record_dir)
    args.result = {"verb": "fly", "mission": mission.name, "target": target.name, "outcome": result.outcome,
                   "reason": result.reason, "record": str(result.record_dir),
                   "summary": summary.as_dict() if summary is not None else None, "estimation": estimation}
    if summary is not None:
        say(format_summary(result.outcome, summary))
    else:
        say(f"outcome  {result.outcome}")
    if estimation:
        say(format_estimation(estimation))
    if result.reason:
        say(f"reason   {result.reason}")
    say(f"record   {result.record_dir}")
    if result.outcome == "aborted":  # 130 once the vehicle is safe; 4 when it was left armed in the air
        return INTERRUPTED if result.left is None or result.left.safe else ERROR
    return for_outcome(result.outcome)


def say(text: str) -> None:
    """A line for the person running the flight, who may be gone (SIGHUP: the terminal closed): once a write
    fails, the rest goes to /dev/null, and the flight carries on making the vehicle safe."""
    try:
        print(text, flush=True)
    except OSError:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stands in for stdout until the process ends
