"""Reference planners: `straight:StraightLine` (FLYINGTRUST's baseline) and `avoid:OccupancyPlanner`."""
