"""How a fidelity run is kept as a trial record: the names its writer (hil.fidelity) and its reader
(reports.fidelity, `hil report`) agree on."""

FIDELITY_KIND = "fidelity"  # the record's config "kind"
REFERENCE, CANDIDATE = "reference", "candidate"  # the record's config "role"
FIGURE_PREFIX = "fidelity."  # summary figures: fidelity.<figure name>
TRACE_TABLE = "fidelity"  # the telemetry of every flight, one row per sample
# What a run's figures are measured on: the vehicle's estimate (LOCAL_POSITION_NED: what the autopilot
# flies on and the harness judges trials on) or the simulator's ground truth (PX4 SIH streams it).
ESTIMATE, TRUTH = "estimate", "truth"
