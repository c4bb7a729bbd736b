"""Turning trajectory and acceleration commands into setpoints the `Vehicle` API can carry.

The `Vehicle` takes position and velocity setpoints. A trajectory command (timed NED positions and
velocities) is tracked by the runtime between planner steps: at each setpoint tick it samples the
trajectory at the current time and sends velocity = sampled velocity + gain x position error, the
feed-forward-plus-P law PX4's own position controller uses. An acceleration command is integrated
into the velocity setpoint at every tick.
"""

from __future__ import annotations

import numpy as np

# Position error to velocity correction (1/s). PX4's MPC_XY_P default is 0.95; a little stiffer
# here because the correction rides on top of the feed-forward and the link adds a small delay.
TRACK_GAIN = 1.5


def sample(trajectory: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Position and velocity at time `t` (same clock as column 0), linearly interpolated.

    Before the first row: the first row. After the last row: its position, at rest (a finished
    trajectory holds its end point rather than coasting on).
    """
    times = trajectory[:, 0]
    if t >= times[-1]:
        return trajectory[-1, 1:4].copy(), np.zeros(3)
    if t <= times[0]:
        return trajectory[0, 1:4].copy(), trajectory[0, 4:7].copy()
    i = int(np.searchsorted(times, t)) - 1
    w = (t - times[i]) / (times[i + 1] - times[i])
    row = trajectory[i] * (1 - w) + trajectory[i + 1] * w
    return row[1:4], row[4:7]


def track(trajectory: np.ndarray, t: float, position: np.ndarray, speed_limit: float) -> tuple[np.ndarray, float]:
    """Velocity setpoint tracking the trajectory at time `t` from `position`, and the position error (m)."""
    reference, feed_forward = sample(trajectory, t)
    return follow(reference, feed_forward, position, speed_limit)


def follow(reference: np.ndarray, feed_forward: np.ndarray, position: np.ndarray,
           speed_limit: float) -> tuple[np.ndarray, float]:
    """Velocity setpoint towards a moving reference (position and velocity), and the position error (m)."""
    error = np.asarray(reference, dtype=float) - position
    velocity = np.asarray(feed_forward, dtype=float) + TRACK_GAIN * error
    # Only the horizontal part is capped: scaling the vertical one with it would let the vehicle
    # sag in a hard manoeuvre. The flight controller caps vertical speed itself.
    speed = float(np.linalg.norm(velocity[:2]))
    if speed > speed_limit:
        velocity[:2] *= speed_limit / speed
    return velocity, float(np.linalg.norm(error))


def integrate_acceleration(velocity: np.ndarray, acceleration: np.ndarray, dt: float,
                           speed_limit: float) -> np.ndarray:
    """The velocity setpoint `dt` seconds of `acceleration` after the setpoint `velocity`."""
    target = np.asarray(velocity, dtype=float) + np.asarray(acceleration, dtype=float) * dt
    speed = float(np.linalg.norm(target))
    return target * (speed_limit / speed) if speed > speed_limit else target
