"""The built-in vehicle: quadrotor rigid-body physics and a PX4-shaped flight controller.

Both run in lockstep in one Python process, so the hot paths are written with plain floats
(see ``dynamics.py`` and ``control.py``): a 2 ms physics step plus the rate loop must cost a few
microseconds for a trial to run hundreds of times faster than real time.
"""

# The PX4 release the built-in vehicle imitates, and how it names itself where a person reads it (its
# ULog's header, `hil sim --help`, a test report's hil_autopilot): never as that release itself.
PX4_VERSION = (1, 16, 1)
BUILTIN_AUTOPILOT = "built-in vehicle (quad-hil) imitating PX4 v{}.{}.{}".format(*PX4_VERSION)
