"""Running a campaign into a campaign directory, resumably.

Layout of a campaign directory::

    DIR/campaign.yaml          the campaign file, copied on the first run
    DIR/trials/<trial id>/     one finished trial record each (published by a single rename)
    DIR/.partial/              records in flight; whatever is here at start-up was interrupted
    DIR/scenes/                per-scene difficulty and shortest-path facts, computed once
    DIR/results.parquet, .csv  the results table, rebuilt from the manifests at the end of a run
    DIR/.lock                  claimed by the run in progress (records.claim); a second run is refused, naming it

Resuming is the same command again: finished trials (directories in `trials/`) are skipped,
interrupted ones (in `.partial/`) are discarded and run again. A kill -9 therefore loses at most the
trials that were in flight.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from hil.campaign import Campaign
from hil.executors import PARTIAL_DIR, Executor
from records.atomic import WriteRefused, writing
from records.claim import claim_directory
from reports.results import TRIALS_DIR, write_results

CAMPAIGN_FILE = "campaign.yaml"


@dataclass
class RunSummary:
    """What one `run_campaign` call did."""

    total: int  # trials in the campaign
    skipped: int  # already finished before this run
    ran: int = 0
    outcomes: Counter = field(default_factory=Counter)
    harness_errors: list[str] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0


def prepare_directory(campaign: Campaign, campaign_dir: Path) -> None:
    """Create the layout, keep a copy of the campaign file, discard interrupted records."""
    (campaign_dir / TRIALS_DIR).mkdir(parents=True, exist_ok=True)
    copy = campaign_dir / CAMPAIGN_FILE
    if not copy.exists() and Path(campaign.source).is_file():
        shutil.copyfile(campaign.source, copy)
    shutil.rmtree(campaign_dir / PARTIAL_DIR, ignore_errors=True)


def finished_trials(campaign_dir: Path) -> set[str]:
    """Ids of the trials whose records are complete (everything in trials/ is, by construction)."""
    return {path.name for path in (campaign_dir / TRIALS_DIR).iterdir() if (path / "manifest.json").exists()}


def run_campaign(campaign: Campaign, campaign_dir: Path, executor: Executor, *, progress: bool = True) -> RunSummary:
    """Run every trial not finished yet; Ctrl-C stops cleanly (in-flight trials are dropped).

    DirectoryTaken if another run holds the directory. WriteRefused if the machine refuses a write (a
    full disk, a read-only one): the campaign stops at the first, its finished trials kept, and running
    it again once it can write resumes it.
    """
    with writing("the campaign directory", campaign_dir), claim_directory(campaign_dir, "hil run"):
        return _run_locked(campaign, campaign_dir, executor, progress)


def _run_locked(campaign: Campaign, campaign_dir: Path, executor: Executor, progress: bool) -> RunSummary:
    prepare_directory(campaign, campaign_dir)
    trials = campaign.trials()
    done_before = finished_trials(campaign_dir)
    todo = [spec for spec in trials if spec.trial_id not in done_before]
    summary = RunSummary(total=len(trials), skipped=len(trials) - len(todo))
    started = time.monotonic()
    bar = tqdm(total=len(trials), initial=summary.skipped, unit="trial", disable=not progress, dynamic_ncols=True,
               desc=campaign.name)
    stored = True
    try:
        for done in executor.run(todo, campaign_dir):
            if done.refused:
                # Every trial after it would be refused too: stop now. What finished was published whole.
                raise WriteRefused(done.error)
            summary.ran += 1
            if done.error is not None:
                summary.harness_errors.append(f"{done.trial_id}: {done.error}")
                summary.outcomes["harness error"] += 1
            else:
                summary.outcomes[done.summary["outcome"]] += 1
            bar.update(1)
            bar.set_postfix_str(_counts(summary.outcomes), refresh=False)
    except KeyboardInterrupt:
        summary.interrupted = True
    except WriteRefused:
        stored = False
        raise
    finally:
        executor.stop()
        bar.close()
        shutil.rmtree(campaign_dir / PARTIAL_DIR, ignore_errors=True)
        if stored:  # else the table would be refused too; reports read the finished trials' manifests anyway
            write_results(campaign_dir)
        summary.seconds = time.monotonic() - started
    return summary


def _counts(outcomes: Counter) -> str:
    ordered = ["success"] + sorted(k for k in outcomes if k != "success")
    return " ".join(f"{name}={outcomes[name]}" for name in ordered if outcomes[name] or name == "success")
