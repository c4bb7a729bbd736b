"""The campaign directory: where `hil run` keeps a campaign's trial records, and `reports` finds them.

Layout::

    DIR/campaign.yaml          the campaign file, copied on the first run
    DIR/trials/<trial id>/     one finished trial record each (published by a single rename)
    DIR/.partial/              records in flight; whatever is here at start-up was interrupted
    DIR/scenes/                per-scene difficulty and shortest-path facts, computed once
    DIR/figures/<trial id>.json  each finished trial's figures, derived from its record by `reports.figures`
                               (a cache reports rebuilds: a record without its file gets it again)
    DIR/results.parquet, .csv  the results table, rebuilt from the records at the end of a run
    DIR/.lock                  claimed by the run in progress (records.claim); a second run is refused, naming it

Resuming is the same command again: finished trials (directories in `trials/`) are skipped,
interrupted ones (in `.partial/`) are discarded and run again. A kill -9 therefore loses at most the
trials that were in flight.
"""

from __future__ import annotations

from pathlib import Path

from records.record import MANIFEST_NAME

CAMPAIGN_FILE = "campaign.yaml"
TRIALS_DIR = "trials"
PARTIAL_DIR = ".partial"
SCENES_DIR = "scenes"
FIGURES_DIR = "figures"


def trial_records(campaign_dir: Path) -> list[Path]:
    """Every trial directory under trials/, by trial id."""
    return sorted(path for path in (Path(campaign_dir) / TRIALS_DIR).iterdir() if path.is_dir())


def finished_trials(campaign_dir: Path) -> set[str]:
    """Ids of the trials whose records are complete (everything in trials/ is, by construction)."""
    return {path.name for path in trial_records(campaign_dir) if (path / MANIFEST_NAME).exists()}
