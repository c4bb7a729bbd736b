"""A campaign's workers start on a new scene together: the scene's facts are computed by one of them while the
others wait for its file (hil.trial.scene_facts), instead of each computing the same numbers."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import threading

from hil.trial import scene_facts
from records.summary import SceneFacts


def test_a_worker_waits_for_the_facts_another_is_computing(tmp_path):
    # This test plays the worker that computes: it holds the cache's lock and writes numbers no scene has.
    written = SceneFacts(difficulty_to=-1.0, difficulty_vo=-2.0, difficulty_aol=-3.0, guide_length_m=-4.0,
                         shortest_length_m=-5.0)
    directory = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(directory, fcntl.LOCK_EX)
    got = []
    other = threading.Thread(target=lambda: got.append(scene_facts("forest", 0, tmp_path)))
    other.start()
    try:
        other.join(0.5)  # long enough for a worker that does not wait to compute the real ones
        (tmp_path / "forest-c0.json").write_text(json.dumps(dataclasses.asdict(written)))
    finally:
        os.close(directory)  # releases the lock
    other.join()
    assert got == [written]
