"""What came out of trials: metrics, aggregation, statistics, scores, comparisons and rendering.

`reports.trial_summary` computes the headline numbers of one trial from its telemetry.
"""
