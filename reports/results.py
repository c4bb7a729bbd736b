"""The results table: one row per finished trial, built from the trial records.

A row is the trial's configuration (scene, config, rule, profile, target, link, fault, planner,
repeat, seed: the manifest's `config`, its nested values left out), its summary's columns (outcome and
failure reason, the platform's and the scene's facts: `records.summary`) and its figures (metrics, timing
summary, estimation: `reports.figures`, computed from the record and kept beside it in the campaign
directory). Records are the source of truth; the table (`results.parquet` and `results.csv` in the
campaign directory) is rebuilt from them, so it can never disagree with the records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from records.atomic import write_file_atomically
from records.campaign_dir import TRIALS_DIR, trial_records
from records.record import MANIFEST_NAME, UnreadableRecord, read_manifest
from records.summary import Summary
from reports.figures import keep_figures, record_figures

RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"


def results_row(record: Path) -> dict:
    """The row of one finished trial record; UnreadableRecord (or OSError) saying why it has none."""
    path = record / MANIFEST_NAME
    manifest = read_manifest(record)
    config, started = manifest.get("config"), manifest.get("started")
    if manifest.get("status") != "finished":
        raise UnreadableRecord(f"{path}: expected a finished trial, got status {str(manifest.get('status'))[:40]!r}")
    if not (isinstance(config, dict) and isinstance(started, dict)):
        raise UnreadableRecord(f"{path}: expected 'config' and 'started' objects")
    summary = Summary.from_manifest(manifest, path)
    config = {k: v for k, v in config.items() if not isinstance(v, (dict, list))}
    # The trial id is the directory's name, whatever the manifest says: reports make paths of it.
    return {**config, **summary.columns(), **record_figures(record, manifest, summary), "trial_id": record.name,
            "outcome": manifest.get("outcome"), "started": started.get("wall_clock")}


@dataclass(frozen=True)
class CampaignResults:
    """A campaign directory's results as `hil run` goes (hil.runner.ResultsKeeper): each trial's figures kept as
    it finishes (`reports.figures`), the table written when the run ends."""

    campaign_dir: Path

    def trial_finished(self, record: Path) -> None:
        keep_figures(record)

    def write(self) -> None:
        write_results(self.campaign_dir)


def read_trials(campaign_dir: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every finished trial of a campaign directory, sorted by trial id, and every trial directory that
    could not be read as one, with why (keyed RUN/TRIAL: the campaign directory's name, the trial's)."""
    rows, unreadable = [], {}
    for record in trial_records(campaign_dir):
        key = f"{Path(campaign_dir).name}/{record.name}"
        try:
            rows.append(results_row(record))
        except FileNotFoundError:
            unreadable[key] = f"{record}: no {MANIFEST_NAME}"
        except (OSError, UnreadableRecord) as exc:
            unreadable[key] = str(exc)
    return pd.DataFrame(rows), unreadable


def collect_results(campaign_dir: Path) -> pd.DataFrame:
    """Every finished trial of a campaign directory, sorted by trial id (`read_trials` also says which
    trial directories could not be read)."""
    return read_trials(campaign_dir)[0]


def write_results(campaign_dir: Path) -> pd.DataFrame:
    """Rebuild results.parquet and results.csv (each written to a temporary name, then renamed)."""
    table = collect_results(campaign_dir)
    for name, write in ((RESULTS_PARQUET, lambda p: table.to_parquet(p, index=False)),
                        (RESULTS_CSV, lambda p: table.to_csv(p, index=False))):
        write_file_atomically(Path(campaign_dir) / name, write)
    return table


def _read_table_file(path: Path) -> pd.DataFrame:
    """A results table (parquet); FileNotFoundError naming the file when it is not one."""
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise FileNotFoundError(f"{path}: expected a results table (parquet, as `hil run` writes it), "
                                f"got an unreadable file ({str(exc).splitlines()[0][:120]})") from None


def read_run(run: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """A run's results, and the trials that could not be read, with why (see `read_trials`): a campaign
    directory (read from its finished trials' manifests, so a run that was killed before it rebuilt its
    table is reported in full) or a results table file."""
    run = Path(run)
    unreadable: dict[str, str] = {}
    if run.is_file():
        table = _read_table_file(run)
        campaign_dir = run.parent
    elif (run / TRIALS_DIR).is_dir():
        table, unreadable = read_trials(run)
        campaign_dir = run
    elif (run / RESULTS_PARQUET).exists():
        table = _read_table_file(run / RESULTS_PARQUET)
        campaign_dir = run
    else:
        raise FileNotFoundError(f"{run}: not a campaign directory (no {RESULTS_PARQUET} or {TRIALS_DIR}/) "
                                "nor a results table")
    table = table.copy()
    table["run"] = campaign_dir.name
    table["run_dir"] = str(campaign_dir)
    return table, unreadable


def load_results(run: Path) -> pd.DataFrame:
    """A run's results (see `read_run`)."""
    return read_run(run)[0]
