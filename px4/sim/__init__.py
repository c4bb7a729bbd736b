"""The built-in vehicle: quadrotor rigid-body physics and a PX4-shaped flight controller.

Both run in lockstep in one Python process, so the hot paths are written with plain floats
(see ``dynamics.py`` and ``control.py``): a 2 ms physics step plus the rate loop must cost a few
microseconds for a trial to run hundreds of times faster than real time.
"""
