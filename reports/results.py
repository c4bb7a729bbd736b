"""The results table: one row per finished trial, built from the trial manifests.

A row is the trial's configuration (scene, config, rule, profile, target, link, fault, planner,
repeat, seed), its outcome and failure reason, its metrics, the scene's difficulty metrics and its
timing summary: the manifest's `config` and `summary`, flattened. Manifests are the source of
truth; the table (`results.parquet` and `results.csv` in the campaign directory) is rebuilt from
them, so it can never disagree with the records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from records.atomic import write_file_atomically

RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
TRIALS_DIR = "trials"


def results_row(manifest: dict) -> dict:
    """One row from one finished trial manifest."""
    config = {k: v for k, v in manifest["config"].items() if not isinstance(v, (dict, list))}
    summary = {k: v for k, v in (manifest.get("summary") or {}).items() if not isinstance(v, (dict, list))}
    return {**config, **summary, "outcome": manifest.get("outcome"), "started": manifest["started"]["wall_clock"]}


def collect_results(campaign_dir: Path) -> pd.DataFrame:
    """Every finished trial of a campaign directory, sorted by trial id."""
    rows = []
    for manifest_path in sorted((Path(campaign_dir) / TRIALS_DIR).glob("*/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("status") == "finished":
            rows.append(results_row(manifest))
    return pd.DataFrame(rows)


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


def load_results(run: Path) -> pd.DataFrame:
    """A run's results: a campaign directory (read from its finished trials' manifests, so a run that
    was killed before it rebuilt its table is reported in full) or a results table file."""
    run = Path(run)
    if run.is_file():
        table = _read_table_file(run)
        campaign_dir = run.parent
    elif (run / TRIALS_DIR).is_dir():
        table = collect_results(run)
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
    return table
