"""Running a campaign into a campaign directory (its layout: `records.campaign_dir`), resumably.

Resuming is the same command again: finished trials (directories in `trials/`) are skipped,
interrupted ones (in `.partial/`) are discarded and run again. A kill -9 therefore loses at most the
trials that were in flight.

What is made of the finished trials (their figures, the results table) is not the runner's: the caller
hands it a `ResultsKeeper` (the `hil` command hands reports' `reports.results.CampaignResults`), told of
each trial as it finishes and asked for the table when the run ends, while the run still holds the
directory.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tqdm import tqdm

from hil.campaign import Campaign
from hil.executors import Executor
from records.atomic import WriteRefused, writing
from records.campaign_dir import CAMPAIGN_FILE, PARTIAL_DIR, TRIALS_DIR, finished_trials
from records.claim import claim_directory


class ResultsKeeper(Protocol):
    """What becomes of a campaign's finished trials (`reports.results.CampaignResults`)."""

    def trial_finished(self, record: Path) -> None:
        """A trial's record was published in trials/ (a resumed run is not told of those finished before)."""

    def write(self) -> None:
        """The run ends (done, interrupted or stopped by an error): write what is made of every finished trial."""


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


def run_campaign(campaign: Campaign, campaign_dir: Path, executor: Executor, *, results: ResultsKeeper,
                 progress: bool = True, arm: bool = False) -> RunSummary:
    """Run every trial not finished yet; Ctrl-C stops cleanly (in-flight trials are dropped). `arm`: the trials may
    arm the flight controllers the harness does not own (`hil run --arm`: a HITL board, hardware).

    DirectoryTaken if another run holds the directory. WriteRefused if the machine refuses a write (a
    full disk, a read-only one): the campaign stops at the first, its finished trials kept, and running
    it again once it can write resumes it.
    """
    with writing("the campaign directory", campaign_dir), claim_directory(campaign_dir, "hil run"):
        return _run_locked(campaign, campaign_dir, executor, results, progress, arm)


def _run_locked(campaign: Campaign, campaign_dir: Path, executor: Executor, results: ResultsKeeper,
                progress: bool, arm: bool) -> RunSummary:
    prepare_directory(campaign, campaign_dir)
    trials = [dataclasses.replace(spec, arm=arm) for spec in campaign.trials()]
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
                summary.outcomes[str(done.summary.outcome)] += 1
                results.trial_finished(campaign_dir / TRIALS_DIR / done.trial_id)
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
            results.write()
        summary.seconds = time.monotonic() - started
    return summary


def _counts(outcomes: Counter) -> str:
    ordered = ["success"] + sorted(k for k in outcomes if k != "success")
    return " ".join(f"{name}={outcomes[name]}" for name in ordered if outcomes[name] or name == "success")
