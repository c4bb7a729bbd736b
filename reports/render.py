"""`hil report`: results of one or more runs as a Markdown file and an HTML page.

The report is built once as a list of blocks (headings, paragraphs, tables, figures) and written
twice: Markdown with its figures as PNG files beside it, and HTML with the same figures embedded as
base64. report.html and the per-trial pages it links to load one copy of Plotly from the report's
folder (report_files/plotly.min.js, 4.8 MB); report.html used to carry a second copy inline. Mailed
on its own, report.html still shows its tables and figures; its interactive plots need the folder.

Sections: outcomes; success by scenario (FLYINGTRUST Fig. 9); success against platform capability
(Fig. 10); platform x scenario heatmaps (Figs. 12-16); composite score (Table II); benchmark
metrics (FlightBench, UAV-ON, HUGE-Bench) with CIs; safety; onboard computation time (FlightBench
Table 5); flakiness; marginal verdicts (trials within a user-set margin of their verdict's limit, and how
often each case's verdict flipped across repeats and targets); truth and estimate (what each verdict was judged
on, and the trials whose truth and estimate fall on either side of a limit); flown tracks on the scene; and, when
the runs cover more than one target, the targets side by side against a reference (reports.compare: simulation
against the bench, versus hardware, or versus simulation), with each target's estimate against its truth.
"""

from __future__ import annotations

import base64
import html
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from records.clock import NOMINAL_CLOCK
from records.fidelity_run import FIDELITY_KIND
from reports import plots
from reports.compare import (
    BENCH,
    METRICS,
    MIN_PAIRS,
    metric_gaps,
    reference_target,
    target_order,
    target_values,
    track_deviations,
)
from reports.estimation import QUANTITIES
from reports.fidelity import (
    MIN_RELATIVE_BAND,
    compare_records,
    differences,
)
from reports.figures import JUDGED_FIGURES, MARGIN_FIGURES
from reports.interactive import PLOTLY_JS, div, script_tag, timing_histogram, write_plotly_js
from reports.metrics import TCR_TOLERANCES, spl_terms
from reports.scores import composite_scores
from reports.stats import (
    Estimate,
    bootstrap_mean,
    describe,
    flakiness,
    grouped_means,
    observations,
    t_mean,
    trials_behind,
    wilson_rate,
)
from reports.tracks import navigation_track
from reports.trial_pages import (
    TrialPages,
    cycle_totals_ms,
    record_dir,
    write_trial_pages,
)

TRACK_SCENES = 4  # scene configurations with a track plot
TRACKS_PER_PLOT = 8
OVERLAYS = 3  # aligned sim/hardware pairs drawn over each other
FLAKY_SHOWN = 30
MARGINAL_SHOWN = 50


@dataclass(frozen=True)
class Margins:
    """How close to its limit a verdict must be to count as marginal: `metres` for the clearance and the fence,
    `seconds` for the time budget; `budgets`: each rule's time budget (s), for records that do not carry theirs."""

    metres: float = 0.25
    seconds: float = 5.0
    budgets: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Table:
    frame: pd.DataFrame


@dataclass(frozen=True)
class Figure:
    name: str  # file name stem
    caption: str
    png: bytes


@dataclass(frozen=True)
class Html:
    """A ready HTML fragment (an interactive plot, a linked table) and what Markdown shows instead."""

    html: str
    markdown: str = ""


Block = Heading | Paragraph | Table | Figure | Html


# ----------------------------------------------------------------------------------------- assembling
def build_report(results: pd.DataFrame, title: str = "Campaign report",
                 pages: TrialPages | None = None, unreadable: dict[str, str] | None = None,
                 margins: Margins = Margins()) -> list[Block]:
    """Every block of the report, from a results table (one or more runs concatenated); `pages` are
    the trial pages written for it (`reports.trial_pages`): their links, and the timing they read;
    `unreadable` the trial records that could not be read, with why (RUN/TRIAL -> reason); `margins` what
    counts as a marginal verdict."""
    # Fidelity runs fly the manoeuvre suite, not a mission: a table of their own, after the rest.
    fidelity = results["kind"] == FIDELITY_KIND if "kind" in results else pd.Series(False, index=results.index)
    if fidelity.any():
        missions = results[~fidelity]
        rest = build_report(missions, title, pages, margins=margins)[1:] if not missions.empty else []
        return [Heading(title, 1), *_unreadable_section(unreadable or {}), *rest,
                *_fidelity_section(results[fidelity])]
    results = _with_derived_columns(results)
    # What the flight sections estimate from: identical repeats once. Compute time varies between copies of
    # one flight (it is measured on the machine), so its sections keep every trial.
    observed = observations(results, CASE_COLUMNS, FLIGHT_COLUMNS)
    pages = pages or TrialPages()
    links = pages.links
    blocks: list[Block] = [Heading(title, 1), *_overview(results, observed), *_unreadable_section(unreadable or {})]
    if results.empty:
        return blocks
    blocks += _failed_section(results, links)
    blocks += _success_sections(observed)
    blocks += _score_section(observed)
    blocks += _metrics_section(observed)
    blocks += _stage_section(observed)
    blocks += _timing_section(results)
    blocks += _onboard_section(results)
    blocks += _timing_histograms(results, pages.cycle_totals_ms)
    blocks += _estimation_section(results)
    blocks += _flakiness_section(observed)
    blocks += _marginal_section(results, margins)
    blocks += _truth_section(results)
    blocks += _track_section(observed)
    targets = list(dict.fromkeys(results["target"]))
    if len(targets) > 1:
        blocks += _comparison_section(results, targets)
    blocks += _all_trials_section(results, links)
    return blocks


TRIAL_COLUMNS = ["outcome", "reason", "target", "planner", "profile", "scene", "config", "repeat"]
PAGE_ROWS = 200  # trials per collapsible block of the trial list: every trial listed, none capped
HISTOGRAM_TRIALS = 200  # per planner x target, read for the per-cycle timing histograms


def _trial_rows(rows: pd.DataFrame, links: dict[str, str]) -> Html:
    """A table of trials, each linked to its page."""
    columns = [c for c in TRIAL_COLUMNS if c in rows]
    head = "<th>trial</th>" + "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for _, row in rows.iterrows():
        trial = html.escape(str(row["trial_id"]))
        link = links.get(str(row["trial_id"]))
        cell = f"<a href='{html.escape(link)}'>{trial}</a>" if link else trial
        body.append(f"<tr><td>{cell}</td>" + "".join(f"<td>{html.escape(_cell(row[c]))}</td>" for c in columns)
                    + "</tr>")
    markdown = "\n".join(f"- [{row['trial_id']}]({links.get(str(row['trial_id']), '')}) {row['outcome']}: "
                          f"{_cell(row.get('reason', ''))}" for _, row in rows.iterrows())
    return Html(f"<table class='trials'><tr>{head}</tr>{''.join(body)}</table>", markdown)


def _unreadable_section(unreadable: dict[str, str]) -> list[Block]:
    """The trial records that could not be read, each with why: a broken record is never left out silently."""
    if not unreadable:
        return []
    return [Heading("Unreadable trial records"),
            Paragraph(f"{len(unreadable)} trial records could not be read (a manifest, an event log or a table "
                      "that is missing, truncated, not text, nested too deep, or not a parquet table). One whose "
                      "manifest could not be read is in no table or figure of this report; one whose event log or "
                      "tables could not be read is counted by its manifest but has no page."),
            Table(pd.DataFrame({"trial": list(unreadable), "why": list(unreadable.values())}))]


def _failed_section(results: pd.DataFrame, links: dict[str, str]) -> list[Block]:
    failed = results[results["outcome"] != "success"]
    if failed.empty:
        return [Heading("Trials that did not succeed"), Paragraph("None: every trial succeeded.")]
    counts = ", ".join(f"{n} {k}" for k, n in failed["outcome"].value_counts().items())
    return [Heading("Trials that did not succeed"),
            Paragraph(f"{len(failed)} of {len(results)} trials ({counts}), each with its reason; every trial id "
                      "opens its page (flight against setpoints with modes and events, the track on the scene, actuator "
                      "outputs, battery, the vehicle's messages, changed parameters, compute time)."),
            _trial_rows(failed.sort_values(["outcome", "trial_id"]), links)]


def _all_trials_section(results: pd.DataFrame, links: dict[str, str]) -> list[Block]:
    blocks: list[Block] = [Heading("Every trial"),
                           Paragraph(f"{len(results)} trials in pages of {PAGE_ROWS}; each opens its own page.")]
    ordered = results.sort_values("trial_id")
    for start in range(0, len(ordered), PAGE_ROWS):
        chunk = ordered.iloc[start:start + PAGE_ROWS]
        table = _trial_rows(chunk, links)
        summary = f"trials {start + 1}-{start + len(chunk)}"
        blocks.append(Html(f"<details{' open' if start == 0 else ''}><summary>{summary}</summary>{table.html}"
                           "</details>", table.markdown))
    return blocks


def _timing_histograms(results: pd.DataFrame, read: dict[str, np.ndarray]) -> list[Block]:
    """Per planner x target: every planner cycle's T_tot, its p99 and the loop's deadline (1 / rate);
    `read` holds the trials' per-cycle totals already read (by trial id)."""
    if "t_tot_ms" not in results or not results["t_tot_ms"].notna().any() or "run_dir" not in results:
        return []
    blocks: list[Block] = [Heading("Per-cycle compute time", 3),
                           Paragraph(f"Every planner cycle's T_tot (up to {HISTOGRAM_TRIALS} trials per planner "
                                     "and target), its 99th percentile and the loop's deadline, one period of "
                                     "the planner rate: cycles past it delay the next command.")]
    timed = results[results["t_tot_ms"].notna()]
    for planner, rows in timed.groupby("planner", sort=True):
        totals = {}
        for target, group in rows.groupby("target", sort=True):
            values = [read[str(row["trial_id"])] if str(row["trial_id"]) in read else cycle_totals_ms(record_dir(row))
                      for _, row in group.head(HISTOGRAM_TRIALS).iterrows()]
            totals[str(target)] = np.concatenate(values) if values else np.array([])
        rate = rows["rate_hz"].dropna()
        deadline = 1000.0 / float(rate.iloc[0]) if len(rate) else None
        figure = timing_histogram(totals, deadline, f"{planner}: T_tot per cycle")
        blocks.append(Html(div(figure, f"timing_{_slug(planner)}"),
                           f"(interactive histogram of T_tot per cycle for {planner}: see report.html)"))
    return blocks


def _fidelity_section(records: pd.DataFrame) -> list[Block]:
    """The fidelity table of manoeuvre-suite runs (benchmarks/fidelity.py --record): each figure with
    the reference's runs, the candidate's, their ratio, the band and the verdict."""
    comparison = compare_records(records.to_dict("records"))
    if comparison is None:
        return [Heading("Fidelity"), Paragraph(f"{len(records)} fidelity runs, but not a reference and a "
                                               "candidate to compare: nothing to show.")]
    c = comparison
    known, outside = differences(c.rows)
    text = (f"{c.candidate} ({c.candidate_runs} runs, measured on its {c.sources.get(c.candidate, '?')}) against "
            f"{c.reference} ({c.reference_runs} runs, on its {c.sources.get(c.reference, '?')}). The band is the "
            f"reference's own run-to-run range, widened to +-{100 * MIN_RELATIVE_BAND:.0f} % of its mean and to the "
            f"figure's floor; a figure "
            f"is within when every candidate run is. {len(c.rows) - len(outside) - len(known)} of {len(c.rows)} "
            "figures within"
            + (f"; known differences, the reason in their verdict: {', '.join(known)}" if known else "")
            + (f"; outside: {', '.join(outside)}" if outside else "") + ".")
    table = pd.DataFrame([{
        "figure": row.figure.name, "unit": row.figure.unit, "meaning": row.figure.meaning,
        f"reference {c.reference}": ", ".join(f"{v:.2f}" for v in row.reference),
        f"candidate {c.candidate}": ", ".join(f"{v:.2f}" for v in row.candidate),
        "ratio": f"{row.ratio:.2f}", "band": f"{row.low:.2f}-{row.high:.2f}",
        "verdict": "ok" if row.within else ("known: " + row.figure.known if row.figure.known else "OUTSIDE"),
    } for row in c.rows])
    return [Heading("Fidelity"), Paragraph(text), Table(table)]


def _with_derived_columns(results: pd.DataFrame) -> pd.DataFrame:
    out = results.copy()
    if out.empty:
        return out
    for column in ("success", "collided", "oracle_success"):
        out[column] = out[column].fillna(False).astype(bool)
    # Per-trial SPL and CSPL terms, so their means get intervals like every other mean.
    out["spl"] = spl_terms(out["success"], out["shortest_length_m"], out["path_length_m"].fillna(0.0))
    out["cspl"] = out["spl"] * ~out["collided"]
    return out


def _overview(results: pd.DataFrame, observed: pd.DataFrame) -> list[Block]:
    runs = ", ".join(dict.fromkeys(results["run"])) if "run" in results else "-"
    if results.empty:
        return [Paragraph(f"Runs: {runs}. No finished trials.")]
    counts = results["outcome"].value_counts().rename_axis("outcome").reset_index(name="trials")
    text = (f"Runs: {runs}. {len(results)} trials: {results['scene'].nunique()} scenes, "
            f"{results['profile'].nunique()} vehicle profiles, {results['target'].nunique()} targets, "
            f"{results['planner'].nunique()} planners. Intervals are 95 %: Wilson score for rates, BCa "
            "bootstrap (bias-corrected and accelerated, B = 1000, seeded) for means, over observations (n).")
    if len(observed) < len(results):
        text += (f" {len(results) - len(observed)} trials flew exactly as another repeat of their test case "
                 "(every flight figure equal to the last bit: nothing perturbed their repeats, `perturb: off` or a "
                 f"target that applies none of it): the {len(results)} trials are {len(observed)} "
                 f"observation{'s' if len(observed) > 1 else ''}. A figure from one observation has no interval "
                 "and says how many identical repeats it stands for.")
    if "clock" in results and (results["clock"] == NOMINAL_CLOCK).any():
        nominal = int((results["clock"] == NOMINAL_CLOCK).sum())
        text += (f" {nominal} trial{'s' if nominal > 1 else ''} kept no time stamps of the vehicle's (a target "
                 "without them, or records from before they were kept): their durations, speeds and times are on "
                 f"the harness's clock times the speed factor, column clock '{NOMINAL_CLOCK}', and a simulator "
                 "that fell behind or stalled makes them longer than the flight.")
    return [Paragraph(text), Table(counts)]


def _success_sections(results: pd.DataFrame) -> list[Block]:
    by_scene = grouped_means(results, ["planner", "scene"], "success", rate=True)
    blocks: list[Block] = [Heading("Success by scenario"),
                           Figure("success_by_scenario", "Success rate per scenario (FLYINGTRUST Fig. 9)",
                                  plots.success_by_scenario(by_scene)),
                           Table(_ci_columns(by_scene, "success rate"))]
    per_platform = grouped_means(results, ["planner", "profile"], "success", rate=True)
    capabilities = results.drop_duplicates("profile").set_index("profile")[["twr_max", "alpha_xy_max", "alpha_z_max"]]
    per_platform = per_platform.join(capabilities, on="profile")
    blocks += [Heading("Success against platform capability"),
               Figure("success_by_capability", "Per-platform success against TWR_max, alpha_xy_max, alpha_z_max "
                      "(FLYINGTRUST Fig. 10)", plots.success_by_capability(per_platform))]
    blocks.append(Heading("Platform x scenario success"))
    order = results.drop_duplicates("profile").sort_values(["twr_max", "alpha_xy_max"])["profile"]
    for planner, rows in results.groupby("planner", sort=True):
        matrix = rows.pivot_table(index="profile", columns="scene", values="success", aggfunc="mean")
        matrix = matrix.reindex([p for p in order if p in matrix.index])
        blocks.append(Figure(f"heatmap_{_slug(planner)}", f"{planner}: success rate per platform and scenario "
                             "(FLYINGTRUST Figs. 12-16)", plots.heatmap(matrix, f"{planner}")))
    return blocks


def _score_section(results: pd.DataFrame) -> list[Block]:
    rates = (results.groupby(["planner", "scene", "profile"], sort=True)
             .agg(success_rate=("success", "mean"), platform_kind=("platform_kind", "first")).reset_index()
             .rename(columns={"planner": "algorithm", "scene": "scenario", "profile": "platform"}))
    table = composite_scores(rates)
    table = table.rename(columns={"score": "Score (no penalty)", "variance": "Variance",
                                  "variance_norm": "Var norm", "final_score": "FinalScore",
                                  "missing_scenarios": "Missing scenarios"})
    return [Heading("Composite score"),
            Paragraph("FLYINGTRUST Eqs. 12-19 (Table II): classic scenarios weigh 1.2, theoretical 1.0; real "
                      "platforms 1.5, virtual 1.0; stability penalty beta = 0.3; a missing scenario is dropped "
                      "and the remaining scenario weights renormalized for that algorithm."),
            Table(table)]


# A test case (hil.campaign.TrialSpec.case), and the figures of how it flew: repeats of a case equal in all
# of these flew the same flight (stats.observations). Compute time is not one: it varies between copies.
CASE_COLUMNS = ["scene", "config", "rule", "profile", "target", "link", "fault", "planner", "compute", "onboard",
                "mission"]
METRIC_COLUMNS = [("SR", "success"), ("OSR", "oracle_success"), ("DTS (m)", "final_distance_m"),
                  ("SPL", "spl"), ("CR", "collided"), ("CSPL", "cspl"),
                  *[(f"TCR@{d:g}", f"tcr_{d:g}") for d in TCR_TOLERANCES],
                  ("Progress", "progress"), ("Avg speed (m/s)", "avg_speed"), ("Avg curv (1/m)", "avg_curvature"),
                  ("Avg acc (m/s^3)", "avg_acceleration"), ("Avg jerk (m/s^5)", "avg_jerk")]
RATE_COLUMNS = {"success", "oracle_success", "collided"}  # pass/fail per trial: Wilson intervals
SAFETY_COLUMNS = [("Min clearance (m)", "min_clearance_m"), ("Geofence viol. (s)", "geofence_violation_s"),
                  ("Altitude viol. (s)", "altitude_violation_s")]
FLIGHT_COLUMNS = ["outcome", "end_time_s", "duration_s", "path_length_m", "stages_completed",
                  *(column for _, column in METRIC_COLUMNS + SAFETY_COLUMNS)]


def _metric_table(results: pd.DataFrame, by: list[str], columns: list[tuple[str, str]], digits: int = 2) -> pd.DataFrame:
    """Per group of `by`, each column's mean [95 % CI]; n counts observations, and `trials` how many trials they
    stand for where identical repeats made those more (`results` from stats.observations)."""
    rows = []
    for key, group in results.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row["n"] = len(group)
        if "repeats" in group and group["repeats"].sum() > len(group):
            row["trials"] = int(group["repeats"].sum())
        for label, column in columns:
            if column in group:
                values = group[column].to_numpy(float)
                estimate = wilson_rate(values) if column in RATE_COLUMNS else \
                    bootstrap_mean(values, label=f"{column}|{key}")
                row[label] = describe(estimate, trials_behind(group, column), digits)
        rows.append(row)
    return pd.DataFrame(rows)


def _metrics_section(results: pd.DataFrame) -> list[Block]:
    return [Heading("Benchmark metrics"),
            Paragraph("Per planner and scenario: UAV-ON SR, OSR, DTS, SPL; HUGE-Bench CR, CSPL, TCR@1/2/5; "
                      "FlightBench Progress, average speed, curvature, acceleration ((1/L) int |a|^2 dt) and "
                      "jerk ((1/L) int |j|^2 dt). Each cell: mean [95 % CI] over n observations (trials: how many "
                      "trials those are, where identical repeats counted once)."),
            Table(_metric_table(results, ["planner", "scene"], METRIC_COLUMNS)),
            Heading("Safety", 3),
            Table(_metric_table(results, ["planner", "scene"], SAFETY_COLUMNS))]


def _stage_section(results: pd.DataFrame) -> list[Block]:
    """HUGE-Bench's process view of mission trials: how far through its stages each mission got, and
    TCR@2 per stage (the share of that stage's route flown within 2 m), per mission and target."""
    if "stages" not in results or not results["stages"].notna().any():
        return []
    blocks: list[Block] = [Heading("Mission stages"),
                           Paragraph("Mission trials (their routes flown on the autopilot), per mission and target: "
                                     "the share of stages completed in order, and HUGE-Bench's TCR@2 of each stage's "
                                     "stretch of the route. Each cell: mean [95 % CI].")]
    for mission, rows in results[results["stages"].notna()].groupby("scene", sort=True):
        stages = str(rows["stages"].iloc[0]).split(",")
        columns = [("stages completed", "stages_completed")] + [(stage, f"tcr_2_{stage}") for stage in stages]
        blocks += [Heading(mission, 3), Table(_metric_table(rows, ["target"], columns))]
    return blocks


def _timing_section(results: pd.DataFrame) -> list[Block]:
    columns = [("T_map (ms)", "t_map_ms"), ("T_plan (ms)", "t_plan_ms"), ("T_ctrl (ms)", "t_ctrl_ms"),
               ("T_tot (ms)", "t_tot_ms")]
    if not any(c in results and results[c].notna().any() for _, c in columns):
        return [Heading("Onboard computation time"),
                Paragraph("No trial recorded onboard stage timing (the planners ran inside the autopilot).")]
    return [Heading("Onboard computation time"),
            Paragraph("Mean per planner cycle (FlightBench Table 5), per planner and target."),
            Table(_metric_table(results, ["planner", "target"], columns))]


def _onboard_section(results: pd.DataFrame) -> list[Block]:
    """The same planners in the harness and on onboard agents (campaign `onboards:`): T_tot as measured
    where each ran, and its ratio to the planner's T_tot in the harness (FlightBench Table 5's question,
    measured rather than emulated)."""
    if "onboard" not in results or set(results["onboard"].dropna()) <= {"local"}:
        return []
    flown = results[results["onboard"].notna()]
    table = _metric_table(flown, ["planner", "onboard"], [("success", "success"), ("T_tot (ms)", "t_tot_ms")])
    local = flown[flown["onboard"] == "local"].groupby("planner")["t_tot_ms"].mean()
    means = flown.groupby(["planner", "onboard"])["t_tot_ms"].mean()
    table["T_tot / harness"] = [f"{means[(p, o)] / local[p]:.2f}x" if p in local and local[p] > 0 else "-"
                                for p, o in zip(table["planner"], table["onboard"])]
    return [Heading("Where the planner ran"),
            Paragraph("Per planner: in the harness (local) and on each onboard agent, each stage timed on the "
                      "machine it ran on. Success: rate [95 % CI]; T_tot: mean per cycle [95 % CI]; the last "
                      "column: the mean T_tot over the same planner's in the harness."),
            Table(table)]


def _estimation_section(results: pd.DataFrame) -> list[Block]:
    """PX4's estimate against the physics' truth, for trials flown on the harness's physics."""
    if "est_pos_h_m" not in results or not results["est_pos_h_m"].notna().any():
        return []
    flown = results[results["est_pos_h_m"].notna()]
    columns = [(label, name) for name, label in QUANTITIES.items()]
    per_trial = flown[["trial_id", "target", "profile", "scene"]].copy()
    for name, label in QUANTITIES.items():
        per_trial[label] = [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if not math.isnan(lo) else f"{m:.3f}"
                            for m, lo, hi in zip(flown[name], flown[f"{name}_low"], flown[f"{name}_high"])]
    return [Heading("PX4's estimate against the truth"),
            Paragraph(f"{len(flown)} trials flew PX4 on the harness's physics, whose truth is in each record: "
                      "PX4's EKF2 estimate (its ULog) against that truth while airborne, absolute errors. Across "
                      "trials, per target and profile: mean of the trial means [95 % bootstrap CI over trials]. "
                      "Per trial: mean [95 % CI from 2 s block means, since successive errors are correlated]."),
            Table(_metric_table(flown, ["target", "profile"], columns, digits=3)),
            Heading("Per trial", 3),
            Table(per_trial)]


# A test case as flakiness and marginal verdicts count its repeats.
CASE = ["scene", "config", "rule", "profile", "target", "link", "fault", "planner"]


def _flakiness_section(observed: pd.DataFrame) -> list[Block]:
    table = flakiness(observed, CASE)
    flaky = table[table["flaky"]]
    copies = int(((table["trials"] > 1) & (table["n"] == 1)).sum())
    text = (f"{len(table)} test cases, {int((table['trials'] > 1).sum())} repeated"
            + (f" ({copies} flew every repeat identically: one observation each, nothing to tell a flaky case "
               "by)" if copies else "")
            + f"; {len(flaky)} flaky (passed in some repeats and failed in others).")
    blocks: list[Block] = [Heading("Flakiness"), Paragraph(text)]
    if len(flaky):
        shown = flaky.sort_values("pass_rate").head(FLAKY_SHOWN)
        if len(flaky) > FLAKY_SHOWN:
            blocks.append(Paragraph(f"The {FLAKY_SHOWN} least reliable of the {len(flaky)} flaky cases:"))
        shown = shown.assign(**{"pass rate": [f"{v:.2f} [{lo:.2f}, {hi:.2f}]" for v, lo, hi in
                                              zip(shown["pass_rate"], shown["low"], shown["high"])]})
        blocks.append(Table(shown[[*CASE, "n", "pass rate"]]))
    return blocks


# Each margin's label, unit, and the outcome that ends a trial at its limit: that trial stopped at contact (or
# at the fence), so its margin is about zero by construction and says nothing of how near it came to missing.
MARGIN_KINDS = {"margin_clearance_m": ("clearance", "m", "collision"), "margin_fence_m": ("fence", "m", "breach"),
                "margin_time_s": ("time", "s", "timeout")}


def trial_margins(results: pd.DataFrame, margins: Margins) -> pd.DataFrame:
    """Each trial's margins (`MARGIN_KINDS`' columns, NaN where not applicable) and `marginal`: those within the
    user's margin of zero, either side, as "label value unit" text ("" when none is). The time margin is a
    success's budget less its time: a timeout used its budget whole, and how close it came is a distance to
    the goal, not a time."""
    out = pd.DataFrame(index=results.index)
    for column in MARGIN_FIGURES:
        out[column] = pd.to_numeric(results[column], errors="coerce") if column in results else math.nan
    budget = pd.to_numeric(results["rule"].map(margins.budgets), errors="coerce") if "rule" in results else math.nan
    if "time_budget_s" in results:  # the record's own, where it keeps one (records.summary)
        budget = pd.to_numeric(results["time_budget_s"], errors="coerce").fillna(budget)
    succeeded = results["success"].fillna(False).astype(bool) if "success" in results else False
    used = pd.to_numeric(results["end_time_s"], errors="coerce") if "end_time_s" in results else math.nan
    if "time_used_s" in results:  # a mission's armed flight; a navigation's time is its verdict's
        used = pd.to_numeric(results["time_used_s"], errors="coerce").fillna(used)
    out["margin_time_s"] = (pd.to_numeric(budget, errors="coerce") - used).where(succeeded)
    outcomes = results["outcome"] if "outcome" in results else pd.Series("", index=results.index)
    marginal = []
    for (_, row), outcome in zip(out.iterrows(), outcomes):
        marginal.append(", ".join(
            f"{label} {row[column]:+.2f} {unit}" for column, (label, unit, ended) in MARGIN_KINDS.items()
            if outcome != ended and abs(row[column]) <= (margins.seconds if unit == "s" else margins.metres)))
    out["marginal"] = marginal
    return out


def _marginal_section(results: pd.DataFrame, margins: Margins) -> list[Block]:
    table = results.drop(columns=list(MARGIN_FIGURES), errors="ignore").join(trial_margins(results, margins))
    marginal = table[table["marginal"] != ""]
    across_targets = [c for c in CASE if c != "target"]
    flips = []
    for key, group in table.groupby(across_targets, sort=True, dropna=False):
        by_target = group.groupby("target")["outcome"].nunique()
        by_repeat = group.groupby("repeat").agg(outcomes=("outcome", "nunique"), targets=("target", "nunique"))
        compared = by_repeat.loc[by_repeat["targets"] > 1, "outcomes"]
        flips.append({**dict(zip(across_targets, key if isinstance(key, tuple) else (key,))),
                      "trials": len(group), "marginal trials": int((group["marginal"] != "").sum()),
                      "flipped across repeats": f"{int((by_target > 1).sum())} of {len(by_target)} targets",
                      "flipped across targets": f"{int((compared > 1).sum())} of {len(compared)} repeats",
                      "flipped": bool((by_target > 1).any() or (compared > 1).any())})
    flips = pd.DataFrame(flips)
    shown_cases = flips[(flips["marginal trials"] > 0) | flips["flipped"]]
    text = (f"A verdict is marginal when one of its margins is within {margins.metres:g} m (the minimum clearance "
            f"to an obstacle less the vehicle radius; the closest approach to the fence or ceiling) or "
            f"{margins.seconds:g} s (a success's time budget less the time it took) of zero (`hil report "
            f"--margin-m/--margin-s`), leaving out the limit the verdict ended at (a collision's clearance, a "
            f"breach's fence, a timeout's time): {len(marginal)} of {len(table)} trials are, and "
            f"{int(flips['flipped'].sum())} of {len(flips)} test cases (all targets together) flipped their "
            "verdict across repeats or targets.")
    blocks: list[Block] = [Heading("Marginal verdicts"), Paragraph(text)]
    if len(marginal):
        if len(marginal) > MARGINAL_SHOWN:
            blocks.append(Paragraph(f"The first {MARGINAL_SHOWN} of the {len(marginal)} marginal trials:"))
        columns = ["trial_id", "outcome", "marginal", *[c for c in TRIAL_COLUMNS[2:] if c in marginal]]
        shown = marginal[columns].head(MARGINAL_SHOWN)
        blocks.append(Table(shown.rename(columns={"marginal": "within the margin"})))
    if len(shown_cases):
        blocks += [Paragraph("Test cases with a marginal trial or a flipped verdict (a flip across repeats: one "
                             "target's repeats disagree; across targets: one repeat's targets disagree):"),
                   Table(shown_cases.drop(columns="flipped"))]
    return blocks


# Each limit judged on positions: its figure stem (the truth's and the estimate's are <stem>_truth_m, _estimate_m)
# and the outcome beyond it.
LIMITS = {"min_clearance": "collision", "margin_fence": "breach"}


def truth_disagreements(results: pd.DataFrame) -> pd.DataFrame:
    """The trials whose truth and estimate fall on either side of a limit (a clearance or a fence margin below zero
    on one and not the other): the verdict (judged on what `judged_on` says), both sides' figures, and what the
    other side would have said."""
    if not set(JUDGED_FIGURES) <= set(results):
        return pd.DataFrame()
    rows = []
    for _, trial in results.iterrows():
        said = []
        for stem, beyond in LIMITS.items():
            truth, estimate = (float(trial[f"{stem}_{side}_m"]) for side in ("truth", "estimate"))
            if math.isnan(truth) or math.isnan(estimate) or (truth < 0) == (estimate < 0):
                continue
            other = "estimate" if trial.get("judged_on") == "truth" else "truth"
            value = estimate if other == "estimate" else truth
            said.append(f"{beyond if value < 0 else 'no ' + beyond} ({stem.replace('_', ' ')} {value:+.2f} m)")
        if said:
            rows.append({"trial_id": trial["trial_id"], "target": trial.get("target", ""),
                         "outcome": trial["outcome"], "judged on": trial.get("judged_on", ""),
                         **{f"{stem.replace('_', ' ')} {side} (m)": f"{float(trial[f'{stem}_{side}_m']):+.2f}"
                            for stem in LIMITS for side in ("truth", "estimate")},
                         "the other side says": "; ".join(said)})
    return pd.DataFrame(rows)


def _truth_section(results: pd.DataFrame) -> list[Block]:
    if not set(JUDGED_FIGURES) <= set(results):
        return []
    judged = results["judged_on"].fillna("estimate") if "judged_on" in results else pd.Series("estimate",
                                                                                             index=results.index)
    both = results[results[["min_clearance_truth_m", "min_clearance_estimate_m"]].notna().all(axis=1)]
    gaps = (pd.to_numeric(both["min_clearance_truth_m"]) - pd.to_numeric(both["min_clearance_estimate_m"])).abs()
    text = (f"{int((judged == 'truth').sum())} of {len(results)} trials were judged on their target's truth (the "
            "built-in vehicle's state, PX4 SIH's ground truth, the harness's physics), the rest on the estimate "
            "their telemetry reports (hardware has nothing else). "
            + (f"Where a trial has both, its minimum clearance on the truth and on the estimate differ by "
               f"{gaps.median():.2f} m in the median and {gaps.max():.2f} m at most ({int((gaps > 0.1).sum())} of "
               f"{len(gaps)} by more than 0.1 m)." if len(gaps) else "No trial has both."))
    disagree = truth_disagreements(results)
    blocks: list[Block] = [Heading("Truth and estimate"), Paragraph(text)]
    if len(disagree):
        blocks += [Paragraph(f"{len(disagree)} trials where the truth and the estimate fall on either side of a limit "
                             "(the verdict follows the side it was judged on):"), Table(disagree)]
    else:
        blocks.append(Paragraph("No trial's truth and estimate fall on either side of a limit."))
    return blocks


def _scene_trials(results: pd.DataFrame) -> pd.DataFrame:
    """The navigation trials (scene tasks); a mission file's trials are shown on their own pages."""
    return results[results["mission"].fillna("") == ""] if "mission" in results else results


def _track_section(results: pd.DataFrame) -> list[Block]:
    from missions.scenes import scene_for

    groups = list(_scene_trials(results).groupby(["scene", "config"], sort=True))
    blocks: list[Block] = [Heading("Flown tracks"),
                           Paragraph(f"Up to {TRACKS_PER_PLOT} tracks over each of the first {TRACK_SCENES} of "
                                     f"{len(groups)} scene configurations; every trial's own page (see the trial "
                                     "lists) shows its whole flight.")]
    for (scene_name, config), rows in groups[:TRACK_SCENES]:
        tracks = []
        for _, row in rows.head(TRACKS_PER_PLOT).iterrows():
            track = navigation_track(row)
            if track is not None:
                tracks.append((f"{row['profile']} {row['planner']} {row['target']}: {row['outcome']}", track))
        if tracks:
            scene = scene_for(scene_name, int(config))
            blocks.append(Figure(f"tracks_{_slug(scene_name)}_{config}", f"{scene_name} configuration {config}",
                                 plots.tracks_on_scene(scene, tracks, f"{scene_name} c{config}")))
    if len(blocks) == 2:
        blocks.append(Paragraph("No telemetry in the trial records."))
    return blocks


def _comparison_section(results: pd.DataFrame, targets: list[str]) -> list[Block]:
    from missions.scenes import scene_for

    targets = target_order(targets)
    reference = reference_target(targets)
    others = [t for t in targets if t != reference]
    hardware = [t for t in targets if _is_hardware(t)]
    title = ("Simulation against the bench" if any(t.startswith(BENCH) for t in targets)
             else "Simulation versus hardware" if hardware else "Simulation versus simulation")
    # A trial that ended in error never reached a verdict (a target that would not start, a link that timed out on a
    # loaded machine): what it measured is of the harness, not of the vehicle, so it is no sample of either side.
    errors = results["outcome"] == "error"
    count = int(errors.sum())
    left_out = (f" {count} trial{'s' if count > 1 else ''} that ended in error (no verdict: the target or the "
                f"harness failed, see Trials that did not succeed) {'are' if count > 1 else 'is'} left out of this "
                "section." if count else "")
    results = results[~errors]
    values = target_values(results, targets)
    gaps = {target: metric_gaps(results, reference, target) for target in others}
    blocks: list[Block] = [Heading(title),
                           Paragraph(f"Every target against {reference} (the bench when the runs have one, else a "
                                     "flight controller on a connection string, else PX4 SITL with SIH). Each "
                                     "target's own value: mean [95 % CI] (n trials), Wilson's interval for the "
                                     "success rate and Student's t for means. Trials are paired by scene, "
                                     "configuration, rule, profile, link, fault, planner and repeat; a difference "
                                     "is target minus reference, the mean of the paired differences [95 % "
                                     "Student's t CI] (n pairs), starred when significant: at least "
                                     f"{MIN_PAIRS} pairs, a Wilcoxon signed-rank p below 5 % after Holm's "
                                     "correction over the metrics compared, and an interval that excludes zero. "
                                     "Intervals are t rather than this report's bootstrap because bench trials "
                                     "are few: a bootstrap over two pairs is their own range. One trial or pair "
                                     "has no interval." + left_out)]
    blocks.append(Table(_side_by_side(values, gaps, targets, reference)))
    if len(values):
        every_gap = pd.concat([g.assign(target=t) for t, g in gaps.items()], ignore_index=True) if gaps else \
            pd.DataFrame(columns=["target", "metric", "difference", "low", "high", "significant"])
        blocks.append(Figure("targets_by_metric", f"Each target's value per metric, and its paired difference from "
                                                  f"{reference}", plots.targets_by_metric(values, every_gap, reference,
                                                                                          METRICS)))
    blocks += _truth_by_target(results, targets)
    for target in others:
        table = gaps[target]
        kind = "hardware" if target in hardware else "the bench" if target.startswith(BENCH) else "simulator"
        blocks.append(Heading(f"{target} ({kind}) vs {reference}", 3))
        flagged = ", ".join(table.loc[table["significant"], "metric"]) or "none"
        blocks.append(Paragraph(f"Significant gaps: {flagged}."))
        shown = table.assign(difference=[_interval(Estimate(d, lo, hi, n), "+.3g") for d, lo, hi, n in
                                         zip(table["difference"], table["low"], table["high"], table["pairs"])],
                             p=[f"{p:.3g}" for p in table["p"]],
                             significant=["yes" if s else "no" for s in table["significant"]])
        blocks.append(Table(shown[["metric", "reference", "target", "difference", "pairs", "p", "significant"]]))
        deviations = track_deviations(results, reference, target)
        if not deviations.empty:
            dtw = bootstrap_mean(deviations["dtw_m"].to_numpy(), label=f"dtw|{target}")
            blocks.append(Paragraph(f"Track deviation (DTW, mean aligned-point distance) over {dtw.n} pairs: "
                                    f"{dtw.format()} m."))
            for _, pair in deviations[deviations["scene"].isin(_scene_trials(results)["scene"])].head(
                    OVERLAYS).iterrows():
                tracks = [(name, navigation_track(results[results["trial_id"] == trial_id].iloc[0]))
                          for name, trial_id in ((reference, pair["trial_ref"]), (target, pair["trial_tgt"]))]
                scene = scene_for(pair["scene"], int(pair["config"]))
                blocks.append(Figure(f"overlay_{_slug(target)}_{_slug(pair['trial_ref'])}",
                                     f"{pair['scene']} c{pair['config']} {pair['profile']}: DTW {pair['dtw_m']:.2f} m",
                                     plots.tracks_on_scene(scene, [t for t in tracks if t[1] is not None],
                                                           f"{pair['profile']} {pair['planner']}")))
    for column, label, unit in (("t_tot_ms", "Onboard computation time (per-trial mean T_tot)", "T_tot (ms)"),
                                ("duration_s", "Navigation duration", "duration (s)")):
        if column not in results:
            continue
        samples = {t: results.loc[results["target"] == t, column].dropna().to_numpy() for t in targets}
        if all(len(v) for v in samples.values()):
            blocks.append(Figure(f"{column}_by_target", f"{label} by target",
                                 plots.distributions(samples, f"{label} by target", unit)))
    return blocks


def _side_by_side(values: pd.DataFrame, gaps: dict[str, pd.DataFrame], targets: list[str],
                  reference: str) -> pd.DataFrame:
    """One row per metric: each target's value [CI] (n), then each other target's paired difference from the
    reference [CI] (pairs), starred when significant."""
    rows = []
    for metric, group in values.groupby("metric", sort=False):
        row = {"metric": METRICS.get(metric, metric)}
        for _, value in group.set_index("target").reindex(targets).iterrows():
            row[value.name] = _interval(Estimate(value["value"], value["low"], value["high"], int(value["n"])), ".3f")
        for target, table in gaps.items():
            gap = table[table["metric"] == metric]
            row[f"{target} - {reference}"] = "-" if gap.empty else _interval(Estimate(
                *gap[["difference", "low", "high"]].iloc[0].astype(float), int(gap["pairs"].iloc[0])), "+.3g") + (
                " *" if gap["significant"].iloc[0] else "")
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(estimate: Estimate, spec: str) -> str:
    """value [low, high] (n), the value alone (1) where one sample has no interval, - where there is none."""
    if not estimate.n or math.isnan(estimate.value):
        return "-"
    if math.isnan(estimate.low):
        return f"{estimate.value:{spec}} ({estimate.n})"
    return f"{estimate.value:{spec}} [{estimate.low:{spec}}, {estimate.high:{spec}}] ({estimate.n})"


def _truth_of(rows: pd.DataFrame, target: str) -> str:
    """What a target's truth is (bridges.truth), from its name and the physics its trials flew."""
    if not pd.to_numeric(rows["truth_error_h_m"], errors="coerce").notna().any():
        return "none: its estimate is all there is"
    if "physics" in rows and (rows["physics"] == "harness").any() or target.startswith(BENCH):
        return "the harness's physics"
    if target.startswith("px4-sitl"):
        return "PX4 SIH (HIL_STATE_QUATERNION)"
    return "the vehicle's state: its estimate is its truth"


def _truth_by_target(results: pd.DataFrame, targets: list[str]) -> list[Block]:
    """The telemetry's position against the target's truth, per target that has one (reports.estimation)."""
    if "truth_error_h_m" not in results:
        return []
    rows = []
    for target in targets:
        trials = results[results["target"] == target]
        row = {"target": target, "truth": _truth_of(trials, target)}
        for column, label in (("truth_error_h_m", "horizontal"), ("truth_error_v_m", "vertical")):
            mean = t_mean(pd.to_numeric(trials[column], errors="coerce").to_numpy(float))
            p95 = pd.to_numeric(trials[f"{column}_p95"], errors="coerce").mean()
            row[f"{label} mean (m)"] = _interval(mean, ".3f")
            row[f"{label} p95 (m)"] = "-" if math.isnan(p95) else f"{p95:.3f}"
        if "est_pos_h_m" in trials and trials["est_pos_h_m"].notna().any():
            row["EKF2 horizontal, ULog (m)"] = _interval(t_mean(trials["est_pos_h_m"].to_numpy(float)), ".3f")
        rows.append(row)
    return [Heading("The estimate against the truth, per target", 3),
            Paragraph("Each telemetry snapshot's position against the target's truth at that snapshot (records.truth), "
                      "while armed: |estimate - truth| horizontal and vertical, mean of the trial means [95 % "
                      "Student's t CI] (n trials) and the mean of the trials' 95th percentiles. The truth is read as the "
                      "snapshot arrives, so its transport delay counts as error (more at a higher speed factor). "
                      "Where PX4 flew the harness's physics its ULog's EKF2 estimate is also set against the "
                      "physics' truth on the same clock (column EKF2, section PX4's estimate against the truth)."),
            Table(pd.DataFrame(rows).fillna("-"))]


def _is_hardware(target: str) -> bool:
    """A connection string names a flight controller that is already running (targets.spec)."""
    return "://" in target


def _ci_columns(table: pd.DataFrame, label: str) -> pd.DataFrame:
    keys = [c for c in table.columns if c not in ("value", "low", "high", "n", "trials")]
    out = table[keys].copy()
    out[label] = [describe(Estimate(v, lo, hi, n), trials)
                  for v, lo, hi, n, trials in zip(table["value"], table["low"], table["high"], table["n"],
                                                  table["trials"])]
    out["n"] = table["n"]
    return out


def _slug(text: str) -> str:
    """A file-name-safe form; a long one keeps a checksum of the whole, so two never share a file."""
    slug = "".join(c if c.isalnum() else "_" for c in str(text))
    return slug if len(slug) <= 60 else f"{slug[:51]}_{zlib.crc32(str(text).encode()):08x}"


# ------------------------------------------------------------------------------------------- writing
def _cell(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, (np.floating,)):
        return _cell(float(value))
    return str(value)


def to_markdown(blocks: list[Block], figures_dir: str) -> str:
    lines = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Paragraph):
            lines += [block.text, ""]
        elif isinstance(block, Table):
            frame = block.frame
            lines.append("| " + " | ".join(map(str, frame.columns)) + " |")
            lines.append("|" + "---|" * len(frame.columns))
            lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
            lines.append("")
        elif isinstance(block, Figure):
            lines += [f"![{block.caption}]({figures_dir}/{block.name}.png)", "", f"*{block.caption}*", ""]
        elif isinstance(block, Html) and block.markdown:
            lines += [block.markdown, ""]
    return "\n".join(lines)


def to_html(blocks: list[Block], title: str) -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>"
             "body{font-family:sans-serif;max-width:1400px;margin:2em auto;color:#222;font-size:15px}"
             "table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}"
             "th{background:#f3f3f3}figure{margin:1em 0}figure img{max-width:100%;height:auto}"
             "figcaption{font-size:13px;color:#555}details{margin:.5em 0}summary{cursor:pointer}"
             f"</style>{script_tag(f'report_files/{PLOTLY_JS}')}</head><body>"]
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            text = html.escape(block.text).replace("**", "")
            parts.append(f"<p>{text}</p>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in block.frame.columns)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
                           for row in block.frame.itertuples(index=False))
            parts.append(f"<table><tr>{head}</tr>{body}</table>")
        elif isinstance(block, Html):
            parts.append(block.html)
        elif isinstance(block, Figure):
            data = base64.b64encode(block.png).decode("ascii")
            parts.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(block.caption)}'>"
                         f"<figcaption>{html.escape(block.caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "".join(parts)


def write_report(results: pd.DataFrame, out_dir: Path, title: str = "Campaign report",
                 unreadable: dict[str, str] | None = None, margins: Margins = Margins()) -> tuple[Path, Path]:
    """Write report.md (+ report_files/*.png), report.html (figures inline, Plotly from report_files/, no CDN)
    and a page per trial (trials/, Plotly from report_files/) into `out_dir`; returns the paths of
    report.md and report.html. `unreadable` (RUN/TRIAL -> why) lists the trial records that could not be
    read; the records whose event log or tables turn out unreadable while their pages are written are
    added to it."""
    unreadable = {} if unreadable is None else unreadable
    out_dir.mkdir(parents=True, exist_ok=True)
    figures_dir = out_dir / "report_files"
    write_plotly_js(figures_dir)
    missions = results[results["kind"] != FIDELITY_KIND] if "kind" in results else results
    pages = write_trial_pages(missions, out_dir) if "run_dir" in results and not missions.empty else TrialPages()
    unreadable.update(pages.unreadable)
    blocks = build_report(results, title, pages, unreadable, margins)
    for block in blocks:
        if isinstance(block, Figure):
            (figures_dir / f"{block.name}.png").write_bytes(block.png)
    markdown = out_dir / "report.md"
    markdown.write_text(to_markdown(blocks, figures_dir.name), encoding="utf-8")
    page = out_dir / "report.html"
    page.write_text(to_html(blocks, title), encoding="utf-8")
    return markdown, page
