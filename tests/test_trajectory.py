"""The PX4-shaped pieces of the built-in vehicle's auto modes, each on its own: the jerk-limited
trajectory (px4.sim.navigator), the flight task around it (px4.sim.flight_task), the takeoff ramp
and the land detector (px4.sim.takeoff)."""

from __future__ import annotations

import math
import random

import pytest

from px4.params import ParamStore
from px4.sim.flight_task import AutoFlightTask, Kind, Triplet
from px4.sim.navigator import (
    AxisTrajectory,
    Limits,
    PositionSmoothing,
    hypot,
    max_speed_from_distance,
)
from px4.sim.takeoff import LandDetector, LandInputs, TakeoffHandling, TakeoffState

DT = 0.02  # the navigator's 50 Hz


def limits(**kw) -> Limits:
    base = dict(jerk=4.0, acc_xy=3.0, vel_xy=12.0, cruise=5.0, acc_z=3.0, vel_z=1.5, acceptance_radius=2.0,
                alt_acceptance=0.8, corner_gain=0.5, max_lag=2.0)
    base.update(kw)
    return Limits(**base)


def test_an_axis_reaches_its_velocity_within_its_jerk_and_acceleration_limits():
    axis = AxisTrajectory()
    axis.max_jerk, axis.max_accel, axis.max_vel = 4.0, 3.0, 10.0
    a_prev, peak_a, peak_j = 0.0, 0.0, 0.0
    for _ in range(400):
        axis.plan(5.0)
        axis.advance(DT)
        peak_a = max(peak_a, abs(axis.a))
        peak_j = max(peak_j, abs(axis.a - a_prev) / DT)
        a_prev = axis.a
    assert axis.v == pytest.approx(5.0, abs=1e-6) and axis.a == pytest.approx(0.0, abs=1e-6)
    assert peak_a <= 3.0 + 1e-9
    assert peak_j <= 4.0 + 1e-6
    # Rise time of a jerk-limited profile: 5 / 3 + 3 / 4 s (ramps at both ends of the 3 m/s^2 phase).
    axis.reset(0.0, 0.0, 0.0)
    t = 0.0
    while axis.v < 5.0 - 1e-3:
        axis.plan(5.0)
        axis.advance(DT)
        t += DT
    assert t == pytest.approx(5.0 / 3.0 + 3.0 / 4.0, abs=2 * DT)


def test_a_velocity_above_the_axis_limit_is_capped():
    axis = AxisTrajectory()
    axis.max_jerk, axis.max_accel, axis.max_vel = 4.0, 3.0, 2.0
    for _ in range(300):
        axis.plan(9.0)
        axis.advance(DT)
    assert axis.v == pytest.approx(2.0, abs=1e-6)


def test_braking_distance_matches_the_speed_it_allows():
    # From the speed allowed at distance d, a jerk-limited stop takes no more than d.
    v = max_speed_from_distance(4.0, 3.0, 10.0, 0.0)
    axis = AxisTrajectory()
    axis.max_jerk, axis.max_accel, axis.max_vel = 4.0, 3.0, 20.0
    axis.reset(0.0, v, 0.0)
    for _ in range(500):
        axis.plan(0.0)
        axis.advance(DT)
    assert 0.0 < axis.x <= 10.0 + 0.05 and axis.v == pytest.approx(0.0, abs=1e-6)


def test_a_smoothed_leg_arrives_at_cruise_speed_and_stops_on_the_target():
    smooth = PositionSmoothing()
    smooth.configure(limits())
    smooth.reset((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, -5.0))
    target = (30.0, 0.0, -5.0)
    top, t, arrived = 0.0, 0.0, None
    for _ in range(2000):
        out = smooth.update(smooth.position, ((0.0, 0.0, -5.0), target, target), (math.nan,) * 3, DT)
        top = max(top, out.velocity[0])
        t += DT
        if arrived is None and abs(smooth.position[0] - target[0]) < 1.0:
            arrived = t
    assert top == pytest.approx(5.0, abs=0.01)  # MPC_XY_CRUISE, never more
    assert smooth.settled and smooth.position == target  # in the end exactly there, at rest
    # Within 1 m after the cruise plus the jerk-limited ramps at both ends; the last metre is
    # PX4's slow tail (near the target the allowed speed is jerk / (2 acc) times the distance).
    assert 30.0 / 5.0 < arrived < 30.0 / 5.0 + 4.0


def test_the_trajectory_clock_waits_for_a_lagging_vehicle():
    smooth = PositionSmoothing()
    smooth.configure(limits())
    smooth.reset((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, -5.0))
    target = (30.0, 0.0, -5.0)
    for _ in range(1000):
        smooth.update((0.0, 0.0, -5.0), ((0.0, 0.0, -5.0), target, target), (math.nan,) * 3, DT)
    # The vehicle stayed at the start: the trajectory creeps up to MPC_XY_ERR_MAX ahead of it, no further.
    assert 1.8 < smooth.position[0] <= 2.0


def test_a_mission_corner_is_cut_inside_the_acceptance_radius():
    smooth = PositionSmoothing()
    smooth.configure(limits())
    smooth.reset((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, -5.0))
    corner, after = (20.0, 0.0, -5.0), (20.0, 20.0, -5.0)
    closest = math.inf
    prev = (0.0, 0.0, -5.0)
    legs = [(prev, corner, after), (corner, after, after)]
    leg = 0
    for _ in range(2000):
        pos = smooth.position
        if leg == 0 and math.hypot(pos[0] - corner[0], pos[1] - corner[1]) <= 2.0:
            leg = 1  # the navigator switches to the next leg inside the acceptance radius
        smooth.update(pos, legs[leg], (math.nan,) * 3, DT)
        closest = min(closest, math.hypot(pos[0] - corner[0], pos[1] - corner[1]))
    assert smooth.position == after
    assert 0.1 < closest < 2.0  # cut, but within the radius


def _task(**overrides) -> AutoFlightTask:
    params = ParamStore()
    for name, value in overrides.items():
        params.set(name, value)
    return AutoFlightTask(params)


def test_the_task_hovers_on_a_cached_setpoint_and_wakes_for_a_new_triplet():
    task = _task()
    task.activate(None, (0.0, 0.0, -5.0), (0.0, 0.0, 0.0), 0.0)
    hold = Triplet((0.0, 0.0, -5.0), Kind.LOITER)
    first = task.update(hold, (0.0, 0.0, -5.0), 0.0, 5.0, DT)
    again = task.update(hold, (0.1, 0.0, -5.0), 0.0, 5.0, DT)
    assert again is first and first.setpoint.position == (0.0, 0.0, -5.0)
    assert first.setpoint.velocity == (0.0, 0.0, 0.0) and first.setpoint.yawspeed == 0.0
    leg = Triplet((10.0, 0.0, -5.0), Kind.POSITION, previous=(0.0, 0.0, -5.0))
    task.update(leg, (0.0, 0.0, -5.0), 0.0, 5.0, DT)
    moved = task.update(leg, (0.0, 0.0, -5.0), 0.0, 5.0, DT)
    assert moved.setpoint.velocity[0] > 0.0
    # A parameter change also ends the cached hover.
    task2 = _task()
    task2.activate(None, (0.0, 0.0, -5.0), (0.0, 0.0, 0.0), 0.0)
    first = task2.update(hold, (0.0, 0.0, -5.0), 0.0, 5.0, DT)
    task2.params.set("MPC_XY_CRUISE", 3.0)
    assert task2.update(hold, (0.0, 0.0, -5.0), 0.0, 5.0, DT) is not first


def test_takeoff_climbs_at_tko_speed_and_landing_descends_at_land_speed():
    task = _task()
    task.activate(None, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    takeoff = Triplet((0.0, 0.0, -10.0), Kind.TAKEOFF)
    pos = [0.0, 0.0, 0.0]
    climb = []
    for _ in range(500):
        out = task.update(takeoff, tuple(pos), 0.0, -pos[2], DT)
        pos[2] = out.setpoint.position[2]  # a vehicle that follows perfectly
        climb.append(-out.setpoint.velocity[2])
    # Below MPC_LAND_ALT1 a takeoff climbs at MPC_TKO_SPEED, not MPC_Z_V_AUTO_UP.
    assert max(climb) == pytest.approx(ParamStore()["MPC_TKO_SPEED"], abs=0.01)
    assert out.want_takeoff is False and pos[2] == pytest.approx(-10.0, abs=0.05)

    p = ParamStore()
    land = Triplet((0.0, 0.0, math.nan), Kind.LAND)
    task.activate(None, (0.0, 0.0, -20.0), (0.0, 0.0, 0.0), 0.0)
    z, speed_at = -20.0, {}
    while z < -0.1:
        out = task.update(land, (0.0, 0.0, z), 0.0, -z, DT)
        assert math.isnan(out.setpoint.position[2])  # a landing controls the descent speed only
        z += out.setpoint.velocity[2] * DT  # a vehicle that follows perfectly
        for alt in (12.0, 3.0, 0.5):
            if -z < alt and alt not in speed_at:
                speed_at[alt] = out.setpoint.velocity[2]
    # MPC_Z_VEL_MAX_DN above MPC_LAND_ALT1, MPC_LAND_SPEED below ALT2, MPC_LAND_CRWL below ALT3.
    assert speed_at[12.0] == pytest.approx(p["MPC_Z_VEL_MAX_DN"], abs=0.01)
    assert speed_at[3.0] == pytest.approx(p["MPC_LAND_SPEED"], abs=0.01)
    assert speed_at[0.5] == pytest.approx(p["MPC_LAND_CRWL"], abs=0.05)


def test_takeoff_handling_spools_up_then_ramps():
    th = TakeoffHandling()
    th.update(0.0, True, True, True, 1.0)
    assert th.state == TakeoffState.SPOOLUP  # COM_SPOOLUP_TIME first, whatever is asked
    th.update(1.0, True, True, True, 1.0)
    assert th.state == TakeoffState.RAMPUP
    limits_seen = [th.upward_limit(DT, 1.5, 3.0, 4.0) for _ in range(200)]
    assert limits_seen[0] < 0.0  # starts by holding the thrust at zero (-g / MPC_Z_VEL_P_ACC)
    assert limits_seen[-1] == 1.5
    th.update(5.0, True, False, True, 1.0)
    assert th.state == TakeoffState.FLIGHT and th.flying
    th.update(6.0, False, True, False, 1.0)
    assert th.state == TakeoffState.DISARMED


def test_a_takeoff_trajectory_starts_sinking_while_the_vehicle_waits_on_the_ground():
    # PX4 re-activates the task every cycle before the takeoff ramp (FlightModeManager), and
    # FlightTaskAuto::reActivate starts the trajectory at 0.7 m/s down: the ramp's first ~1.5 s
    # bring it to a standstill (measured on v1.16.1 SIH: 0.4 m/s half a second after lift-off).
    task = _task()
    task.activate(None, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    takeoff = Triplet((0.0, 0.0, -5.0), Kind.TAKEOFF)
    for _ in range(50):  # a second on the ground, spooling up: the trajectory may not start climbing
        task.update(takeoff, (0.0, 0.0, 0.0), 0.0, 0.0, DT)
        task.on_ground((0.0, 0.0, 0.0))
    assert task.smooth.velocity[2] == pytest.approx(0.7)
    velocities = [task.update(takeoff, (0.0, 0.0, 0.0), 0.0, 0.0, DT).setpoint.velocity[2] for _ in range(150)]
    upward = next(i for i, vz in enumerate(velocities) if vz < 0.0) * DT
    acc = ParamStore()["MPC_TKO_SPEED"] / ParamStore()["MPC_TKO_RAMP_T"]
    assert upward == pytest.approx(0.7 / acc, abs=0.25)  # sinking, then climbing, at the takeoff acceleration


def test_land_detector_needs_three_stages_of_a_third_of_the_trigger_time():
    det = LandDetector()
    flying = LandInputs(True, True, 0.5, 0.5, 0.08, 0.7, (0.0, 0.0, 0.0), 0.0)
    det.update(0.0, flying, 1.0, 0.5, 1.5, 20.0)
    assert not det.landed and not det.ground_contact
    touched = LandInputs(True, True, 0.05, 0.5, 0.08, 0.7, (0.0, 0.0, 0.0), 0.0)
    t, landed_at = 0.0, None
    while t < 3.0 and landed_at is None:
        t += DT
        det.update(t, touched, 1.0, 0.5, 1.5, 20.0)
        if det.landed:
            landed_at = t
    assert landed_at == pytest.approx(1.0, abs=3 * DT)  # LNDMC_TRIG_TIME in all
    assert det.clear_in_flight(0.5, 0.5, 0.08) is False  # a stage is set: the full update must run
    det.update(t + DT, flying, 1.0, 0.5, 1.5, 20.0)
    assert not det.landed  # leaving a stage is immediate (PX4's hysteresis delays only the way in)
    assert det.clear_in_flight(0.5, 0.5, 0.08) is True


def test_the_compiled_hypot_is_cpythons_to_the_last_bit():
    # The compiled trajectory must fly the Python one's numbers; the C library's hypot differs from
    # CPython's in the last bit about once in 500 draws.
    rng = random.Random(34)
    for _ in range(20000):
        x, y = (rng.gauss(0.0, 1.0) * 10.0 ** rng.randint(-6, 4) for _ in range(2))
        assert hypot(x, y) == math.hypot(x, y), (x, y)
    assert hypot(0.0, -0.0) == 0.0 and hypot(math.inf, math.nan) == math.inf and math.isnan(hypot(1.0, math.nan))
