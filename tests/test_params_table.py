"""The built-in vehicle's parameter table against PX4 v1.16.1's as measured (px4/reference/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from px4.params import SPECS, ParamError, ParamStore

REFERENCE = json.loads((Path(__file__).resolve().parents[1] / "px4" / "reference"
                        / "px4_v1.16.1_sih_parameters.json").read_text())
FROM_PROFILE = {"MPC_THR_HOVER"}  # the built-in vehicle sets it from its profile; SIH_* too


def test_implemented_parameters_keep_px4_v1_16_1_defaults_and_types():
    px4 = {name: (kind, value) for name, kind, value in REFERENCE["parameters"]}
    for spec in SPECS:
        kind, value = px4[spec.name]
        assert spec.is_int == (kind == 6), f"{spec.name}: PX4 has MAVLink type {kind}"
        if spec.name not in FROM_PROFILE:
            assert spec.default == pytest.approx(value, rel=1e-6), f"{spec.name}: {spec.default}, PX4 {value}"


def test_store_lists_px4s_table_and_hashes_it_as_px4():
    store = ParamStore()
    assert list(store) == [name for name, _, _ in REFERENCE["parameters"]]
    # With PX4's values (the reference was measured on instance 1), the hash is exactly PX4's.
    store.set("MAV_SYS_ID", 2)
    assert store.hash_check() == REFERENCE["hash_check"]
    store.set("FLW_TGT_HT", 12.0)  # stored only, but part of the hash as on PX4
    assert store.hash_check() != REFERENCE["hash_check"]
    store.set("CAL_ACC0_XOFF", 0.5)  # volatile: left out of the hash
    changed = store.hash_check()
    store.set("CAL_ACC0_XOFF", 0.0)
    assert store.hash_check() == changed


def test_stored_only_parameters_take_any_value_of_their_type():
    store = ParamStore()
    assert store.set("SYS_AUTOSTART", 4001.4) == 4001.0  # INT32: rounded
    assert not store.implemented("SYS_AUTOSTART") and store.implemented("MPC_XY_CRUISE")
    with pytest.raises(ParamError, match="outside"):
        store.set("MPC_TILTMAX_AIR", 500.0)  # implemented: its range holds
    with pytest.raises(ParamError, match="unknown parameter"):
        store.set("NOT_A_PARAM", 1.0)
