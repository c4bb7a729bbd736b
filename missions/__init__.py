"""What to fly: mission files, scenario geometry and benchmark suites.

* `missions.waypoint`: the waypoint mission files `hil fly MISSION.yaml` flies (`missions/examples/`).
* `missions.schema`, `missions.templates`, `missions.suite`: benchmark missions (a scene plus a task,
  UAVBench-style blocks, HUGE-Bench-style multi-stage templates) and suites of them
  (`missions/examples/benchmark/`, `missions/suites/`).
* `missions.scenes`: the seeded scene generators (FLYINGTRUST's seven, FlightBench's eight tests).
* `missions.geometry`: obstacle primitives and the distance / collision queries every target shares;
  `missions.paths`: free-space grids, connectivity and guide paths; `missions.sensors`: the virtual
  depth camera; `missions.difficulty`: FlightBench's TO / VO / AOL.
* `missions.export` (PLY, PCD, OBJ, NPZ) and `missions.render` (top and side PNGs).
* `missions.faults`: fault schedules (owned by the fault-injection work).
"""
