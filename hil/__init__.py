"""Orchestration: configuration, trials and campaigns, the trial monitor, the recorder, the `hil` CLI.

`hil.record` writes and reads trial records (a directory per trial).
"""
