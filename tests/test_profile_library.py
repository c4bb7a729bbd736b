"""FLYINGTRUST's library (Table I), the inverse direction (airframe -> numbers), and SIH.

Every one of the 36 platforms must load, fly with its own three numbers on the built-in vehicle
(within 3 %), and come out of PX4 SIH's force and torque equations with the same numbers.
"""

import math

import pytest

from profiles.airframe import Airframe, rotor_limits
from profiles.airframe import GRAVITY
from profiles.library import library_profiles, load_vehicle_profile
from profiles.vehicle import ProfileError, VehicleProfile
from px4.sih import controller_params, sih_capability, sih_default_capability, sih_params, sitl_params
from tests.test_physics import SATURATING, airborne, one_step_acceleration

LIBRARY = library_profiles()

# FLYINGTRUST, Sec. III-A: per-subset means (TWR, alpha_xy, alpha_z).
PAPER_MEANS = {"real": (2.30, 99.92, 7.17), "virtual": (3.47, 824.20, 41.88)}


def test_library_has_all_36_platforms_18_real_18_virtual():
    assert len(LIBRARY) == 36
    assert sum(p.category == "real" for p in LIBRARY) == 18
    assert sum(p.category == "virtual" for p in LIBRARY) == 18
    assert len({p.name for p in LIBRARY}) == 36


@pytest.mark.parametrize("category", ["real", "virtual"])
def test_subset_means_match_the_paper(category):
    members = [p for p in LIBRARY if p.category == category]
    twr, axy, az = PAPER_MEANS[category]
    # Table I rounds TWR to one decimal; its rounded real TWRs average 2.32 against the paper's 2.30.
    assert sum(p.twr_max for p in members) / 18 == pytest.approx(twr, abs=0.025)
    assert sum(p.alpha_xy_max for p in members) / 18 == pytest.approx(axy, abs=0.015)
    assert sum(p.alpha_z_max for p in members) / 18 == pytest.approx(az, abs=0.015)


@pytest.mark.parametrize("typed", ["0.55kg-Quadrotor 1", "0.55KG-quadrotor-1", "0.55kg_Quadrotor_1"])
def test_library_entries_load_by_name_as_people_type_it(typed):
    profile = load_vehicle_profile(typed)
    assert (profile.name, profile.label, profile.mass) == ("0.55kg-Quadrotor-1", "0.55kg-Quadrotor 1", 0.55)
    assert (profile.twr_max, profile.alpha_xy_max, profile.alpha_z_max) == (3.6, 1383.7, 69.2)


@pytest.mark.parametrize("profile", LIBRARY, ids=[p.name for p in LIBRARY])
def test_builtin_vehicle_reproduces_each_profile_within_3_percent(profile):
    phys = profile.physical()
    dyn = airborne(phys, [1.0] * 4)
    lin, _ = one_step_acceleration(dyn, [1.0] * 4)
    assert -lin[2] == pytest.approx((profile.twr_max - 1.0) * GRAVITY, rel=0.03)
    for axis, index, expected in (("roll", 0, profile.alpha_xy_max), ("pitch", 1, profile.alpha_xy_max),
                                  ("yaw", 2, profile.alpha_z_max)):
        pattern = SATURATING["cross"][axis]
        _, ang = one_step_acceleration(airborne(phys, pattern), pattern)
        assert ang[index] == pytest.approx(expected, rel=0.03), axis


@pytest.mark.parametrize("profile", LIBRARY, ids=[p.name for p in LIBRARY])
def test_px4_sih_equations_reproduce_each_profile(profile):
    got = sih_capability(sih_params(profile))
    # Only float32 parameter storage separates SIH from the profile.
    assert got.twr_max == pytest.approx(profile.twr_max, rel=1e-5)
    assert got.alpha_xy_max == pytest.approx(profile.alpha_xy_max, rel=1e-5)
    assert got.alpha_z_max == pytest.approx(profile.alpha_z_max, rel=1e-5)


def test_sih_defaults_are_the_default_profile_and_keep_default_gains():
    default = load_vehicle_profile("default")
    ref = sih_default_capability()
    assert (ref.twr_max, ref.alpha_xy_max, ref.alpha_z_max) == pytest.approx(
        (default.twr_max, default.alpha_xy_max, default.alpha_z_max), rel=0.003)
    gains = controller_params(default)
    assert gains["MC_ROLLRATE_K"] == pytest.approx(1.0, rel=0.003)
    assert gains["MC_YAWRATE_K"] == pytest.approx(1.0, rel=0.003)


def test_controller_params_keep_the_rate_loop_bandwidth():
    agile, sluggish = load_vehicle_profile("0.75kg-Quadrotor-2"), load_vehicle_profile("2.00kg-T-MOTOR")
    for profile in (agile, sluggish):
        gains = controller_params(profile)
        # Normalized torque times alpha is the loop gain: the same for every vehicle.
        assert gains["MC_ROLLRATE_K"] * profile.alpha_xy_max == pytest.approx(80.0, rel=1e-6)
        assert gains["MPC_THR_HOVER"] == pytest.approx(1.0 / profile.twr_max)
    assert set(sitl_params(agile)) >= {"SIH_MASS", "SIH_T_MAX", "SIH_L_ROLL", "SIH_KDW", "MC_PITCHRATE_K"}


def test_sih_refuses_a_plus_frame():
    with pytest.raises(ValueError, match="quad-X"):
        sih_params(VehicleProfile("p", 1.0, 2.0, 100.0, 5.0, layout="plus"))


# --- the inverse direction: physical parameters -> FLYINGTRUST numbers ------------------------

@pytest.mark.parametrize("profile", [load_vehicle_profile("2.00kg-T-MOTOR"), load_vehicle_profile("0.75kg-Quadrotor-2"),
                                     VehicleProfile("plus", 1.3, 2.7, 300.0, 12.0, layout="plus")],
                         ids=lambda p: p.name)
def test_profile_to_physical_and_back_round_trips(profile):
    phys = profile.physical()
    frame = Airframe(phys.mass, phys.arm_length, phys.rotor_thrust_max, phys.rotor_torque_max,
                     phys.ixx, phys.iyy, phys.izz, phys.layout)
    got = frame.capability()
    assert (got.twr_max, got.alpha_xy_max, got.alpha_z_max) == pytest.approx(
        (profile.twr_max, profile.alpha_xy_max, profile.alpha_z_max), rel=1e-12)


def test_hand_computed_airframe():
    # 1.5 kg cross frame, 0.25 m arms, 9 N / 0.15 N m rotors: TWR = 36 / (1.5 g);
    # roll torque = 2 * 9 * 0.25 * sqrt(2)/2; yaw torque = 2 * 0.15.
    got = Airframe(1.5, 0.25, 9.0, 0.15, 0.02, 0.02, 0.04).capability()
    assert got.twr_max == pytest.approx(36.0 / (1.5 * GRAVITY))
    assert got.alpha_xy_max == pytest.approx(2 * 9.0 * 0.25 * math.sqrt(0.5) / 0.02)
    assert got.alpha_z_max == pytest.approx(0.3 / 0.04)


def test_rotor_forms_agree():
    thrust, torque = rotor_limits({"thrust_max": 8.0, "torque_max": 0.12})
    omega = 1000.0
    assert rotor_limits({"c_t": thrust / omega**2, "c_m": torque / omega**2, "omega_max": omega}) == pytest.approx(
        (thrust, torque))
    # Propeller coefficients: T = ct rho n^2 D^4, Q = cq rho n^2 D^5 (n in rev/s).
    t, q = rotor_limits({"diameter": 0.254, "ct": 0.11, "cq": 0.005, "rpm_max": 9000})
    n = 150.0
    assert (t, q) == pytest.approx((0.11 * 1.225 * n * n * 0.254**4, 0.005 * 1.225 * n * n * 0.254**5))


PHYSICAL = """name: bench-quad
category: custom
physical:
  mass: 1.5
  arm_length: 0.25
  ixx: 0.02
  iyy: 0.02
  izz: 0.04
  rotor: {thrust_max: 9.0, torque_max: 0.15}
"""


def test_profile_file_with_a_physical_block(tmp_path):
    path = tmp_path / "bench.yaml"
    path.write_text(PHYSICAL)
    profile = load_vehicle_profile(path)
    assert profile.mass == 1.5 and profile.layout == "cross"
    assert profile.twr_max == pytest.approx(36.0 / (1.5 * GRAVITY))
    assert profile.alpha_z_max == pytest.approx(7.5)
    # ... and the built-in vehicle flies it with those numbers.
    assert profile.physical().alpha_max[0] == pytest.approx(profile.alpha_xy_max)


@pytest.mark.parametrize("edit, fragment", [
    (("thrust_max: 9.0, torque_max: 0.15", "thrust_max: 9.0"), "physical.rotor.thrust_max: expected one of"),
    (("thrust_max: 9.0", "thrust_max: -9.0"), "physical.rotor.thrust_max: expected a finite number > 0"),
    (("  ixx: 0.02\n", ""), "physical.ixx: missing"),
    (("  ixx: 0.02\n", "  ixx: 0.02\n  wingspan: 2\n"), "physical.wingspan: unknown field"),
    (("category: custom\n", "category: custom\ntwr_max: 2.0\n"), "twr_max: given next to a physical block"),
    (("thrust_max: 9.0", "thrust_max: 3.0"), "twr_max: expected a number > 1"),
])
def test_physical_block_errors_name_the_field(tmp_path, edit, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(PHYSICAL.replace(*edit))
    with pytest.raises(ProfileError) as err:
        load_vehicle_profile(path)
    assert str(path) in str(err.value) and fragment in str(err.value)


# --- library validation -------------------------------------------------------------------------

def library_dir(tmp_path, monkeypatch, entries):
    import profiles.library as library

    (tmp_path / "lib.yaml").write_text("profiles:\n" + "".join(f"  - {e}\n" for e in entries))
    monkeypatch.setattr(library, "VEHICLES_DIR", tmp_path)


def test_library_entry_errors_name_file_index_and_field(tmp_path, monkeypatch):
    library_dir(tmp_path, monkeypatch, ["{name: a, mass: 1.0, twr_max: 2.0, alpha_xy_max: 100, alpha_z_max: 5}",
                                        "{name: b, mass: 1.0, twr_max: 0.9, alpha_xy_max: 100, alpha_z_max: 5}"])
    with pytest.raises(ProfileError, match=r"lib.yaml: profiles\[1\] \(b\): twr_max: expected a number > 1"):
        load_vehicle_profile("a")


def test_library_rejects_duplicate_names(tmp_path, monkeypatch):
    library_dir(tmp_path, monkeypatch, ["{name: Twin, mass: 1.0, twr_max: 2.0, alpha_xy_max: 100, alpha_z_max: 5}",
                                        "{name: twin, mass: 1.1, twr_max: 2.0, alpha_xy_max: 100, alpha_z_max: 5}"])
    with pytest.raises(ProfileError, match=r"profiles\[1\] \(twin\): name: 'twin' already used by profiles\[0\]"):
        load_vehicle_profile("Twin")


def test_library_file_cannot_be_loaded_as_one_profile():
    from profiles.library import VEHICLES_DIR

    with pytest.raises(ProfileError, match="library of 36 profiles"):
        load_vehicle_profile(VEHICLES_DIR / "flyingtrust.yaml")


def test_out_of_range_angular_acceleration_is_refused():
    with pytest.raises(ProfileError, match="alpha_xy_max: expected a positive angular acceleration"):
        VehicleProfile("x", 1.0, 2.0, 1e6, 5.0)
