"""Where a trial record keeps the truth beside the estimate: the names its writer (hil.recording, hil.monitor)
and its readers (reports.figures, the report) agree on.

Table `truth`: one row per telemetry snapshot of a target that has a truth (bridges.truth), keyed by the
snapshot's `t_ns`, with the true `north`, `east`, `down` in the vehicle's local frame. A verdict says what it was
judged on (`judged_on`): records.fidelity_run's TRUTH or ESTIMATE.
"""

TRUTH_TABLE = "truth"
