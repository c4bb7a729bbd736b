"""Vehicle profiles: a quadrotor described by its capability (FLYINGTRUST's TWR and angular
accelerations), loaded from YAML and turned into the physical parameters the simulator flies."""
