"""The differential conformance suite (issue 35): public clients run against the built-in vehicle and PX4
v1.16.1 SITL (SIH), each case on a fresh pair of targets started side by side, and what a user sees compared.

A case (`suite.Case`, registered with `@suite.case`) is a client's run that returns its observations by
name: ACK results, status texts, modes, positions and altitudes, parameters read back, files listed.
pymavlink probes on the ground-station link are in `probes.py`, MAVSDK calls as MAVSDK's examples make them
in `mavsdk_cases.py`, MAVProxy typed at its prompt in `mavproxy_cases.py`; a module of further cases is
named in `suite.all_cases`. The two observations are compared key by key, within the case's tolerance (PX4's
own spread where a figure moves); a difference that remains is named in the case (`known`) with its
measured reason, and printed with it. `examples.py` runs MAVSDK's own example scripts, unchanged, from a
user's copy. `benchmarks/conformance.py` runs every case and prints client x case; `tests/test_conformance.py`
runs the quick ones.
"""
