"""A sample of the FLYINGTRUST matrix (benchmarks/flyingtrust_matrix.py) flown as a campaign worker flies it,
with each trial's verdict and the figures of its flight that the vehicle's clock and the scene decide.

tests/test_matrix_sample.py flies it again and compares with tests/matrix_sample.json, which this script
wrote with the code of its commit: a change made for speed must fly the same trials to the same verdicts.
Wall-clock figures (the planner's compute times) are left out; they differ from run to run.

    python tests/matrix_sample.py            # rewrite tests/matrix_sample.json (after a change meant to alter flights)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.flyingtrust_matrix import matrix  # noqa: E402
from hil.trial import run_trial_spec  # noqa: E402
from missions.scenes import FLYINGTRUST  # noqa: E402
from reports.figures import trial_figures  # noqa: E402

FIXTURE = Path(__file__).with_name("matrix_sample.json")
# The lightest and the heaviest profile on every scene's configuration 0: successes and collisions on all
# seven scenes. Narrow-gap's light profile is left out: its 90 s timeout would triple the test's time.
PROFILES = 2
SKIPPED = {("narrow-gap", "0.60kg-EMAX")}
FIGURES = ("duration_s", "path_length_m", "avg_speed", "final_distance_m", "closest_distance_m", "tcr_1",
           "min_clearance_m", "margin_fence_m", "margin_clearance_m")


def fly_sample() -> list[dict]:
    """Each sampled trial's scene, profile, outcome, reason, end time and FIGURES, in the matrix's order."""
    campaign = matrix([spec.name for spec in FLYINGTRUST], 1, "avoid", 30.0, PROFILES)
    flown = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, spec in enumerate(campaign.trials()):
            if (spec.scene, spec.profile) in SKIPPED:
                continue
            record = Path(tmp) / f"trial-{number}"
            summary = run_trial_spec(spec, record, Path(tmp) / "cache")
            figures = trial_figures(record, summary)
            flown.append({"scene": spec.scene, "profile": spec.profile, "outcome": summary.outcome.value,
                          "reason": summary.reason, "end_time_s": summary.end_time_s,
                          **{name: float(figures[name]) for name in FIGURES}})
    return flown


if __name__ == "__main__":
    sample = fly_sample()
    FIXTURE.write_text(json.dumps(sample, indent=1) + "\n")
    print(f"{len(sample)} trials into {FIXTURE}")
