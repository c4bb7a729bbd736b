"""What to fly: mission files, scenario geometry and benchmark suites.

`missions.waypoint` reads the waypoint mission files that `hil fly MISSION.yaml` flies; the
shipped examples live in `missions/examples/`.
"""
