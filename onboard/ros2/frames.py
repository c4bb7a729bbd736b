"""NED/FRD (PX4, the harness) <-> ENU/FLU (ROS, REP 103), and ROS time stamps.

World: ENU = (east, north, up) = (NED[1], NED[0], -NED[2]); the same swap converts velocities and
points both ways (it is its own inverse). Body: FLU = (x, -y, -z) of FRD. Attitude: with ZYX Euler
angles, roll stays, pitch changes sign and yaw becomes pi/2 - yaw (heading from east, counter-
clockwise, instead of from north, clockwise), as MAVROS converts.
"""

from __future__ import annotations

import math
import time

import numpy as np

_SWAP = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # NED <-> ENU, its own inverse


def ned_to_enu(vectors) -> np.ndarray:
    """(3,) or (N, 3) NED vectors (positions, velocities, points) in ENU; also ENU -> NED."""
    return np.asarray(vectors, dtype=float) @ _SWAP.T


enu_to_ned = ned_to_enu


def yaw_ned_to_enu(yaw: float) -> float:
    """Heading clockwise from north -> counter-clockwise from east (and back: the map is its own inverse)."""
    return math.remainder(math.pi / 2 - yaw, math.tau)


yaw_enu_to_ned = yaw_ned_to_enu


def quaternion_from_euler(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of ZYX Euler angles, ROS's component order."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def yaw_from_quaternion(x: float, y: float, z: float, w: float) -> float:
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def attitude_ned_to_enu(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """Quaternion (x, y, z, w) of the FLU body in ENU from FRD-in-NED Euler angles."""
    return quaternion_from_euler(roll, -pitch, yaw_ned_to_enu(yaw))


def frd_to_flu(vectors) -> np.ndarray:
    return np.asarray(vectors, dtype=float) * np.array([1.0, -1.0, -1.0])


def stamp_now() -> tuple[int, int]:
    """(sec, nanosec) of the system clock, the clock ROS 2 nodes stamp headers with by default."""
    ns = time.time_ns()
    return ns // 1_000_000_000, ns % 1_000_000_000


def age_s(sec: int, nanosec: int) -> float:
    """Seconds since a header stamp (on this machine's system clock)."""
    return (time.time_ns() - (sec * 1_000_000_000 + nanosec)) / 1e9
