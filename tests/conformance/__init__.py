"""The differential conformance suite (issue 35): public clients run against the built-in vehicle and PX4
v1.16.1 SITL (SIH), each case on a fresh pair of targets, and what a user sees compared.

A case (`suite.Case`) is a client's run (pymavlink probes in `probes.py`, MAVSDK API calls as MAVSDK's
examples make them in `mavsdk_cases.py`, MAVProxy driven through its command line in `mavproxy_cases.py`)
that returns its observations by name: ACK results, status texts, modes, positions and altitudes,
parameters read back, files listed. The two observations are compared key by key, within the case's
tolerance (PX4's own spread where a figure moves). A difference that remains is named with its measured
reason in the case (`known`), and printed with it. `benchmarks/conformance.py` runs every case and prints
client x autopilot; `tests/test_conformance.py` runs the quick ones.
"""
