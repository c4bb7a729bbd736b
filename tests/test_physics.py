"""The simulated rigid body reproduces the capability a profile declares (FLYINGTRUST Sec. III-A).

Profiles come from FLYINGTRUST's Table I and include its extremes: lowest and highest TWR, lowest
and highest horizontal and yaw angular acceleration, lightest and heaviest vehicle.
"""

import math

import pytest

from physics.dynamics import QuadrotorDynamics
from profiles.airframe import GRAVITY
from profiles.library import list_vehicle_profiles, load_vehicle_profile
from profiles.physical import PhysicalParams
from profiles.vehicle import ProfileError, VehicleProfile
from px4.params import ParamStore
from px4.sih import physical_from_sih, physical_to_sih

# (name, mass kg, TWR_max, alpha_xy_max, alpha_z_max), FLYINGTRUST's Table I.
TABLE_I = [
    ("2.00kg-T-MOTOR", 2.00, 1.4, 55.6, 3.3),  # lowest TWR, lowest alpha_xy and alpha_z
    ("1.00kg-SunnySky", 1.00, 6.0, 227.3, 13.9),  # highest TWR
    ("0.75kg-Quadrotor 2", 0.75, 4.2, 1467.0, 73.3),  # highest alpha_xy and alpha_z
    ("5.45kg-JFRC", 5.45, 2.6, 75.8, 3.3),  # heaviest
    ("0.55kg-Quadrotor 1", 0.55, 3.6, 1383.7, 69.2),  # lightest
    ("1.20kg-JFRC", 1.20, 1.4, 84.6, 7.2),
]

# Rotor thrust patterns (fraction of full, PX4 motor order) that saturate one axis in the positive
# FRD sense: the rotors on one side full, those opposite stopped (Eqs. 4-5).
# PX4 quad-X: 1 front-right CCW, 2 rear-left CCW, 3 front-left CW, 4 rear-right CW.
# PX4 quad-+: 1 right CCW, 2 left CCW, 3 front CW, 4 rear CW. A single rotor of a plus frame also
# yaws, so the two rotors on the other axis share one rotor's thrust to cancel it.
SATURATING = {
    "cross": {"roll": [0, 1, 1, 0], "pitch": [1, 0, 1, 0], "yaw": [1, 1, 0, 0]},
    "plus": {"roll": [0, 1, 0.5, 0.5], "pitch": [0.5, 0.5, 1, 0], "yaw": [1, 1, 0, 0]},
}


def profiles_both_layouts():
    for name, mass, twr, axy, az in TABLE_I:
        for layout in ("cross", "plus"):
            yield pytest.param(VehicleProfile(name, mass, twr, axy, az, layout=layout), id=f"{name}-{layout}")


def airborne(phys: PhysicalParams, rotor_fraction: list[float]) -> QuadrotorDynamics:
    """A vehicle at rest 50 m up with each rotor already spinning at sqrt(fraction) * omega_max."""
    dyn = QuadrotorDynamics(phys)
    dyn.reset(pos=(0.0, 0.0, -50.0))
    dyn.rotor_speed = [phys.omega_max * math.sqrt(f) for f in rotor_fraction]
    return dyn


def one_step_acceleration(dyn: QuadrotorDynamics, u: list[float]) -> tuple[list[float], list[float]]:
    """Linear (world) and angular (body) acceleration over one step from rest."""
    v0, w0 = list(dyn.vel), list(dyn.omega)
    dyn.step(u)
    lin = [(a - b) / dyn.dt for a, b in zip(dyn.vel, v0)]
    ang = [(a - b) / dyn.dt for a, b in zip(dyn.omega, w0)]
    return lin, ang


@pytest.mark.parametrize("profile", list(profiles_both_layouts()))
def test_full_thrust_gives_twr_minus_one_g(profile):
    phys = profile.physical()
    dyn = airborne(phys, [1.0] * 4)
    lin, ang = one_step_acceleration(dyn, [1.0] * 4)
    expected_up = (profile.twr_max - 1.0) * GRAVITY
    assert -lin[2] == pytest.approx(expected_up, rel=0.03)
    assert max(abs(a) for a in ang) < 1e-9


@pytest.mark.parametrize("profile", list(profiles_both_layouts()))
@pytest.mark.parametrize("axis", ["roll", "pitch", "yaw"])
def test_saturated_torque_gives_profile_angular_acceleration(profile, axis):
    phys = profile.physical()
    pattern = SATURATING[profile.layout][axis]
    dyn = airborne(phys, pattern)
    _, ang = one_step_acceleration(dyn, pattern)
    index = ("roll", "pitch", "yaw").index(axis)
    expected = profile.alpha_z_max if axis == "yaw" else profile.alpha_xy_max
    assert ang[index] == pytest.approx(expected, rel=0.03)
    # The pattern acts about its own axis only.
    assert all(abs(a) < 1e-6 * expected for i, a in enumerate(ang) if i != index)


def test_hover_command_is_an_equilibrium():
    phys = load_vehicle_profile("default").physical()
    h = phys.hover_thrust
    dyn = airborne(phys, [h] * 4)
    for _ in range(500):
        dyn.step([h] * 4)
    assert max(abs(v) for v in dyn.vel) < 1e-9
    assert dyn.pos[2] == pytest.approx(-50.0, abs=1e-9)
    # An accelerometer in hover reads one g upwards (FRD: negative z).
    assert dyn.specific_force[2] == pytest.approx(-GRAVITY, rel=1e-6)


@pytest.mark.parametrize("tau", [0.02, 0.03, 0.05])
def test_motor_lag_reaches_63_percent_after_tau(tau):
    phys = VehicleProfile("lag", 1.0, 2.5, 150.0, 10.0, motor_tau=tau).physical()
    dyn = airborne(phys, [0.25] * 4)
    start, target = dyn.rotor_speed[0], phys.omega_max
    while dyn.t < tau - 0.5 * dyn.dt:
        dyn.step([1.0] * 4)
    assert (dyn.rotor_speed[0] - start) / (target - start) == pytest.approx(1.0 - math.exp(-1.0), abs=0.02)
    while dyn.t < 6 * tau:
        dyn.step([1.0] * 4)
    assert dyn.rotor_speed[0] == pytest.approx(target, rel=0.01)


def test_rest_on_ground_until_thrust_exceeds_weight():
    phys = load_vehicle_profile("default").physical()
    dyn = QuadrotorDynamics(phys)
    dyn.reset()
    below = [0.95 * phys.hover_thrust] * 4
    for _ in range(1000):
        dyn.step(below)
    assert dyn.on_ground and dyn.pos == (0.0, 0.0, 0.0) and dyn.vel == (0.0, 0.0, 0.0)
    assert dyn.specific_force == pytest.approx([0.0, 0.0, -GRAVITY])
    above = [1.2 * phys.hover_thrust] * 4
    for _ in range(1000):
        dyn.step(above)
    assert not dyn.on_ground and dyn.pos[2] < -0.5


def test_falling_vehicle_lands_level_and_stops():
    phys = load_vehicle_profile("default").physical()
    dyn = QuadrotorDynamics(phys)
    dyn.reset(pos=(0.0, 0.0, -2.0), yaw=1.0)
    dyn.vel = [3.0, 0.0, 0.0]
    dyn.omega = [0.5, -0.3, 0.2]
    for _ in range(1500):
        dyn.step([0.0] * 4)
        assert dyn.pos[2] <= 0.0  # never below the ground
    assert dyn.on_ground
    assert dyn.vel == (0.0, 0.0, 0.0) and dyn.omega == (0.0, 0.0, 0.0)
    roll, pitch, _ = dyn.euler()
    assert abs(roll) < 1e-9 and abs(pitch) < 1e-9
    north = dyn.pos[0]
    for _ in range(500):
        dyn.step([0.0] * 4)
    assert dyn.pos[0] == north  # friction holds it


def test_free_fall_reads_zero_specific_force():
    phys = load_vehicle_profile("default").physical()
    dyn = airborne(phys, [0.0] * 4)
    lin, _ = one_step_acceleration(dyn, [0.0] * 4)
    assert lin[2] == pytest.approx(GRAVITY, rel=1e-9)
    assert max(abs(f) for f in dyn.specific_force) < 1e-9


def test_linear_drag_opposes_airspeed_including_wind():
    phys = load_vehicle_profile("default").physical()
    h = phys.hover_thrust
    dyn = airborne(phys, [h] * 4)
    dyn.vel = [5.0, 0.0, 0.0]
    lin, _ = one_step_acceleration(dyn, [h] * 4)
    assert lin[0] == pytest.approx(-phys.kdv / phys.mass * 5.0, rel=0.01)
    # Still air relative to the vehicle: no drag. Wind pushes a vehicle at rest downwind.
    dyn = airborne(phys, [h] * 4)
    dyn.vel = [5.0, 0.0, 0.0]
    dyn.wind_ned[:] = [5.0, 0.0, 0.0]
    lin, _ = one_step_acceleration(dyn, [h] * 4)
    assert abs(lin[0]) < 1e-9
    dyn = airborne(phys, [h] * 4)
    dyn.wind_ned[:] = [0.0, -4.0, 0.0]
    lin, _ = one_step_acceleration(dyn, [h] * 4)
    assert lin[1] == pytest.approx(-phys.kdv / phys.mass * 4.0, rel=0.01)


def test_angular_damping_slows_rotation():
    phys = load_vehicle_profile("default").physical()
    h = phys.hover_thrust
    dyn = airborne(phys, [h] * 4)
    dyn.omega = [0.0, 0.0, 2.0]
    _, ang = one_step_acceleration(dyn, [h] * 4)
    assert ang[2] == pytest.approx(-phys.kdw * 2.0 / phys.izz, rel=0.01)


def test_rotor_efficiency_reduces_thrust_and_unbalances():
    phys = load_vehicle_profile("default").physical()
    dyn = airborne(phys, [1.0] * 4)
    dyn.rotor_efficiency[0] = 0.5  # front-right rotor at half thrust
    lin, ang = one_step_acceleration(dyn, [1.0] * 4)
    thrust = 3.5 * phys.rotor_thrust_max
    assert -lin[2] == pytest.approx(thrust / phys.mass - GRAVITY, rel=1e-6)
    # Losing thrust at the front right rolls right (+roll) and pitches down (-pitch).
    assert ang[0] > 0.0 and ang[1] < 0.0


def test_physics_rate_must_be_at_least_500_hz():
    phys = load_vehicle_profile("default").physical()
    with pytest.raises(ValueError, match="500 Hz"):
        QuadrotorDynamics(phys, dt=0.004)


# --- profile -> physical parameters -> PX4 SIH parameters -------------------------------------

def test_inertia_follows_from_profile_not_assumed():
    a = VehicleProfile("a", 1.0, 2.0, 100.0, 5.0).physical()
    b = VehicleProfile("b", 1.0, 2.0, 200.0, 10.0).physical()
    assert b.ixx == pytest.approx(a.ixx / 2) and b.izz == pytest.approx(a.izz / 2)
    assert a.alpha_max == pytest.approx((100.0, 100.0, 5.0))
    assert a.twr_max == pytest.approx(2.0)


def test_sih_parameters_round_trip():
    for profile in (VehicleProfile("x", 2.0, 1.4, 55.6, 3.3),
                    VehicleProfile("p", 0.75, 4.2, 1467.0, 73.3, layout="plus")):
        phys = profile.physical()
        back = physical_from_sih(physical_to_sih(phys), phys.layout)
        for name in ("mass", "ixx", "iyy", "izz", "rotor_thrust_max", "rotor_torque_max", "arm_length",
                     "motor_tau", "kdv", "kdw", "c_t", "c_m", "omega_max"):
            assert getattr(back, name) == pytest.approx(getattr(phys, name), rel=1e-12), name
        assert back.alpha_max == pytest.approx((profile.alpha_xy_max, profile.alpha_xy_max, profile.alpha_z_max))


def test_px4_sih_defaults_match_the_default_profile():
    sih = physical_from_sih(ParamStore().as_dict(), "cross")
    default = load_vehicle_profile("default")
    assert sih.twr_max == pytest.approx(default.twr_max, rel=0.01)
    assert sih.alpha_max[0] == pytest.approx(default.alpha_xy_max, rel=0.01)
    assert sih.alpha_max[2] == pytest.approx(default.alpha_z_max, rel=0.01)
    assert sih.motor_tau == default.motor_tau


def test_unequal_sih_arms_give_unequal_roll_and_pitch():
    params = ParamStore().as_dict()
    params["SIH_L_PITCH"] = 0.1  # half the roll arm
    phys = physical_from_sih(params, "cross")
    for axis, expected in (("roll", 2 * 5.0 * 0.2 / 0.025), ("pitch", 2 * 5.0 * 0.1 / 0.025)):
        pattern = SATURATING["cross"][axis]
        dyn = airborne(phys, pattern)
        _, ang = one_step_acceleration(dyn, pattern)
        assert ang[("roll", "pitch").index(axis)] == pytest.approx(expected, rel=1e-6)


# --- YAML profiles ---------------------------------------------------------------------------

VALID = "name: t\nmass: 1.2\ntwr_max: 2.5\nalpha_xy_max: 120.0\nalpha_z_max: 8.0\n"


def write(tmp_path, text, name="t.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_default_profile_loads():
    assert "default" in list_vehicle_profiles()
    profile = load_vehicle_profile("default")
    assert profile.name == "default" and profile.mass == 1.0 and profile.layout == "cross"
    assert profile.radius > profile.physical().arm_length


def test_profile_file_loads_with_defaults(tmp_path):
    profile = load_vehicle_profile(write(tmp_path, VALID + "layout: plus\n"))
    assert (profile.mass, profile.twr_max, profile.layout, profile.motor_tau) == (1.2, 2.5, "plus", 0.03)


@pytest.mark.parametrize("text, field, fragment", [
    (VALID.replace("twr_max: 2.5", "twr_max: 0.8"), "twr_max", "cannot hover"),
    (VALID.replace("mass: 1.2", "mass: 80"), "mass", "between 0.05 and 50"),
    (VALID.replace("alpha_z_max: 8.0", "alpha_z_max: -3"), "alpha_z_max", "positive"),
    (VALID.replace("alpha_xy_max: 120.0", "alpha_xy_max: fast"), "alpha_xy_max", "'fast'"),
    (VALID + "layout: hexa\n", "layout", "cross, plus"),
    (VALID.replace("mass: 1.2\n", ""), "mass", "missing"),
    (VALID + "colour: red\n", "colour", "unknown field"),
])
def test_profile_errors_name_file_and_field(tmp_path, text, field, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ProfileError) as err:
        load_vehicle_profile(path)
    message = str(err.value)
    assert str(path) in message and f": {field}:" in message and fragment in message


def test_unknown_profile_name_lists_available():
    with pytest.raises(ProfileError, match="default"):
        load_vehicle_profile("no-such-vehicle")


def test_profile_file_must_be_a_mapping(tmp_path):
    with pytest.raises(ProfileError, match="mapping"):
        load_vehicle_profile(write(tmp_path, "- 1\n- 2\n"))
