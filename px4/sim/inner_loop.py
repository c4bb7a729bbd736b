"""The built-in vehicle's 500 Hz loop in one compiled call: controllers, failed motors and physics, step after step.

Between two runs of the 50 Hz navigator nothing but this loop changes the vehicle, so the autopilot
hands it a whole run of steps at once (`px4.sim.autopilot.Autopilot.advance`): one call into compiled
code instead of a dozen Python calls per step, which made the physics and controllers a quarter of a
lockstep trial's time.
"""

from __future__ import annotations

import numba
import numpy as np

from physics.dynamics import M_DT, physics_step
from px4.sim.control_kernels import IDLE_THRUST, control_step

# What drives the motors: nothing (disarmed), idle thrust (armed on the ground), or the controllers.
MOTORS_OFF, MOTORS_IDLE, MOTORS_CONTROLLED = 0, 1, 2


@numba.njit(cache=True)
def run_steps(s: np.ndarray, m: np.ndarray, efficiency: np.ndarray, wind: np.ndarray,
              c: np.ndarray, k: np.ndarray, lim: np.ndarray, kind: int, sp: np.ndarray,
              drive: int, motor_working: np.ndarray, motors: np.ndarray,
              time: float, until: float, due: float, max_steps: int) -> tuple[int, float]:
    """Step physics state `s` while ``time + dt / 2 < until``, at most `max_steps` steps, and no further
    than the step at whose end ``time >= due``. Returns the steps taken and the new time.

    `drive` says what commands the motors (MOTORS_*); with MOTORS_CONTROLLED the controller (state
    `c`, constants `k`, parameters `lim`) follows setpoint `sp` of `kind`. A motor whose
    `motor_working` entry is 0 gets nothing. `motors` receives the last commands the motors got.
    """
    dt = m[M_DT]
    half = 0.5 * dt
    steps = 0
    while steps < max_steps and time + half < until:
        if drive == MOTORS_CONTROLLED:
            control_step(c, k, lim, s, kind, sp, dt, motors)
        else:
            motors[:] = IDLE_THRUST if drive == MOTORS_IDLE else 0.0
        for i in range(4):
            if motor_working[i] == 0.0:
                motors[i] = 0.0
        physics_step(s, m, efficiency, wind, motors[0], motors[1], motors[2], motors[3])
        time += dt
        steps += 1
        if time >= due:
            break
    return steps, time
