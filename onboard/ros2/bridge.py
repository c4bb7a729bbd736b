"""The ROS 2 bridge: a `Vehicle` seen from ROS 2, for planners that are ROS 2 nodes.

Topic names are a preset's under a namespace (`onboard.ros2.topics`); the default preset's are below.

Out (ENU world frame "map", FLU body "base_link", REP 103/105):

* ``odom`` (nav_msgs/Odometry) at every telemetry snapshot; twist in the body frame, as REP 105 says;
* with a goal: ``goal`` (geometry_msgs/PoseStamped, "map"; latched: transient local), first of all and then
  once a second, for a node to learn its task;
* with a sensor: ``camera/points`` (sensor_msgs/PointCloud2, x y z float32 in "map") and
  ``camera/depth`` (sensor_msgs/Image, 32FC1 metres, NaN = no return) at the camera's rate.

In (each converted to NED and forwarded through the `Vehicle`; offboard starts on the first one):

* ``setpoint/pose`` (geometry_msgs/PoseStamped): a position setpoint with the pose's yaw;
* ``setpoint/trajectory`` (trajectory_msgs/MultiDOFJointTrajectory): the points (first transform
  and velocity of each, timed by time_from_start from the header stamp) are tracked as the runtime
  tracks a trajectory command (onboard.tracking);
* ``planning/pos_cmd`` (quadrotor_msgs/PositionCommand, EGO-Planner's 100 Hz output): position with
  velocity feed-forward and yaw.

Every incoming message's age at arrival (now - header.stamp, system clock, as ROS stamps) is kept
per topic in `latencies` and, with a recorder, in table "ros2" (topic, latency_s). A node that stamps
its command with the stamp of the odometry or depth image it reacted to makes that age the sensor-to-
command latency (wall time: publishing, the node's computation and both DDS hops). Leaving the bridge
switches a vehicle it put in offboard to Hold.

A message that cannot be a setpoint (a NaN or infinite coordinate, a trajectory point without a
transform) is dropped and counted per topic in `rejected`; with a recorder, the first of each topic is
an event ``ros2_rejected`` naming why. The vehicle keeps the last good setpoint, and the bridge keeps
listening: the node may send a good one next.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from aio.tasks import cancel_and_wait
from missions.sensors import Pose
from onboard.ros2 import frames
from onboard.ros2.messages import FLOAT32
from onboard.ros2.topics import BRIDGE, Topics
from onboard.sensing import SceneSensor
from onboard.tracking import follow, track

SETPOINT_HZ = 30.0
GOAL_PERIOD_S = 1.0  # wall seconds between goal messages: a node that starts late still learns it


@dataclass(frozen=True)
class _Setpoint:
    """A setpoint received, in NED: a fixed position, or a reference to track."""

    kind: str  # "position" | "trajectory" | "reference"
    yaw: float
    position: tuple[float, float, float] = (math.nan,) * 3
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    trajectory: np.ndarray | None = None  # rows as onboard.planner.TRAJECTORY_COLUMNS, t from `t0_wall`
    t0_wall: float = 0.0  # header stamp, system-clock seconds


def _stamp(msg) -> tuple[int, int]:
    return msg.header.stamp.sec, msg.header.stamp.nanosec


def _ned(v) -> tuple[float, float, float]:
    return _finite(*(float(x) for x in frames.enu_to_ned([v.x, v.y, v.z])))


def _finite(*values: float) -> tuple[float, ...]:
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"expected finite numbers, got {values}")
    return values


def _yaw(q) -> float:
    """The ENU quaternion's yaw, NED."""
    return _finite(frames.yaw_enu_to_ned(frames.yaw_from_quaternion(q.x, q.y, q.z, q.w)))[0]


class Ros2Bridge:
    """Publishes a vehicle's state and sensor to ROS 2 and forwards ROS 2 setpoints to it."""

    def __init__(self, vehicle, backend, *, sensor: SceneSensor | None = None, speed_limit: float = 4.0,
                 recorder=None, frame_id: str = "map", child_frame_id: str = "base_link", topics: Topics = BRIDGE,
                 goal: tuple[float, float, float] | None = None) -> None:
        """`goal`: local NED, published on the goal topic; `topics`: the names used (`onboard.ros2.topics`)."""
        self.vehicle, self.backend, self.sensor = vehicle, backend, sensor
        self.speed_limit, self.recorder = speed_limit, recorder
        self.frame_id, self.child_frame_id = frame_id, child_frame_id
        self.topics, self.goal = topics, goal
        self.latencies: dict[str, list[float]] = {topics.pose: [], topics.trajectory: [], topics.pos_cmd: []}
        self.received = 0
        self.rejected: dict[str, int] = {topics.pose: 0, topics.trajectory: 0, topics.pos_cmd: 0}
        self._setpoint: _Setpoint | None = None
        self._new_setpoint = asyncio.Event()
        self._offboard = False
        self._tasks: list[asyncio.Task] = []
        self._closing = False

    async def __aenter__(self) -> "Ros2Bridge":
        b, topics = self.backend, self.topics
        self._publish_odom = b.publisher(topics.odom, "nav_msgs/msg/Odometry")
        b.subscribe(topics.pose, "geometry_msgs/msg/PoseStamped", self._guarded(topics.pose, self._on_pose))
        b.subscribe(topics.trajectory, "trajectory_msgs/msg/MultiDOFJointTrajectory",
                    self._guarded(topics.trajectory, self._on_trajectory))
        b.subscribe(topics.pos_cmd, "quadrotor_msgs/msg/PositionCommand",
                    self._guarded(topics.pos_cmd, self._on_position_command))
        if self.goal is not None:  # before odometry: a node should know where to go when the vehicle appears
            self._publish_goal = b.publisher(topics.goal, "geometry_msgs/msg/PoseStamped", "latched")
            self._tasks.append(asyncio.create_task(self._goal()))
        self._tasks.append(asyncio.create_task(self._odometry()))
        self._tasks.append(asyncio.create_task(self._forward()))
        if self.sensor is not None:
            self._publish_points = b.publisher(topics.points, "sensor_msgs/msg/PointCloud2", "sensor")
            self._publish_depth = b.publisher(topics.depth, "sensor_msgs/msg/Image", "sensor")
            self._tasks.append(asyncio.create_task(self._camera()))
        return self

    async def __aexit__(self, *exc) -> None:
        # The loops also stop on this flag: Python 3.10's wait_for can swallow a cancellation that
        # arrives as its event is set (setpoints at 100 Hz), and the loop would then run on forever.
        self._closing = True
        self._new_setpoint.set()
        for task in self._tasks:
            await cancel_and_wait(task)
        await self.backend.close()
        if self._offboard:
            # Hold, as the onboard runtime leaves it; a vehicle gone mid-flight must not hide why the bridge closed.
            with contextlib.suppress(Exception):
                await asyncio.shield(self.vehicle.stop_offboard())

    # ------------------------------------------------------------------ out
    def _header(self, msg, frame_id: str) -> None:
        msg.header.stamp.sec, msg.header.stamp.nanosec = frames.stamp_now()
        msg.header.frame_id = frame_id

    def odometry_message(self, state) -> Any:
        msg = self.backend.message("nav_msgs/msg/Odometry")
        self._header(msg, self.frame_id)
        msg.child_frame_id = self.child_frame_id
        p = msg.pose.pose
        p.position.x, p.position.y, p.position.z = frames.ned_to_enu([state.north, state.east, state.down])
        q = frames.attitude_ned_to_enu(state.roll, state.pitch, state.yaw)
        p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = q
        body_frd = _rotation_ned_frd(state.roll, state.pitch, state.yaw).T @ np.array([state.vn, state.ve, state.vd])
        t = msg.twist.twist.linear
        t.x, t.y, t.z = (float(v) for v in frames.frd_to_flu(body_frd))
        return msg

    async def _odometry(self) -> None:
        async for state in self.vehicle.telemetry():
            self._publish_odom(self.odometry_message(state))

    async def _goal(self) -> None:
        msg = self.backend.message("geometry_msgs/msg/PoseStamped")
        p = msg.pose.position
        p.x, p.y, p.z = frames.ned_to_enu(self.goal)
        while not self._closing:
            self._header(msg, self.frame_id)
            self._publish_goal(msg)
            await asyncio.sleep(GOAL_PERIOD_S)

    async def _camera(self) -> None:
        period = 1.0 / self.sensor.camera.rate_hz
        while not self._closing:
            depth, points = self.sensor.read(self.vehicle.state)
            self._publish_points(self.point_cloud_message(points))
            self._publish_depth(self.depth_message(depth))
            await self.vehicle.sleep(period)

    def point_cloud_message(self, points_ned: np.ndarray) -> Any:
        msg = self.backend.message("sensor_msgs/msg/PointCloud2")
        self._header(msg, self.frame_id)
        xyz = frames.ned_to_enu(points_ned).astype("<f4") if len(points_ned) else np.zeros((0, 3), "<f4")
        fields = []
        for i, name in enumerate("xyz"):
            field = self.backend.message("sensor_msgs/msg/PointField")
            field.name, field.offset, field.datatype, field.count = name, 4 * i, FLOAT32, 1
            fields.append(field)
        msg.height, msg.width, msg.fields = 1, len(xyz), fields
        msg.is_bigendian, msg.point_step, msg.row_step, msg.is_dense = False, 12, 12 * len(xyz), True
        msg.data = list(xyz.tobytes())
        return msg

    def depth_message(self, depth: np.ndarray) -> Any:
        msg = self.backend.message("sensor_msgs/msg/Image")
        self._header(msg, "camera")
        msg.height, msg.width, msg.encoding = depth.shape[0], depth.shape[1], "32FC1"
        msg.is_bigendian, msg.step = 0, 4 * depth.shape[1]
        msg.data = list(depth.astype("<f4").tobytes())
        return msg

    # ------------------------------------------------------------------ in
    def _guarded(self, topic: str, handler):
        """`handler` as a subscription callback that drops (and counts) a message it cannot use."""
        def receive(msg) -> None:
            try:
                handler(msg)
            except (ValueError, TypeError, AttributeError, IndexError) as exc:
                self.rejected[topic] += 1
                if self.recorder is not None and self.rejected[topic] == 1:
                    self.recorder.event("ros2_rejected", topic=topic, reason=f"{type(exc).__name__}: {exc}"[:200])
        return receive

    def _arrived(self, topic: str, msg) -> None:
        latency = frames.age_s(*_stamp(msg))
        self.latencies[topic].append(latency)
        self.received += 1
        if self.recorder is not None:
            self.recorder.append("ros2", {"topic": topic, "latency_s": latency})

    def _set(self, setpoint: _Setpoint) -> None:
        self._setpoint = setpoint
        self._new_setpoint.set()

    def _on_pose(self, msg) -> None:
        setpoint = _Setpoint("position", _yaw(msg.pose.orientation), position=_ned(msg.pose.position))
        self._arrived(self.topics.pose, msg)
        self._set(setpoint)

    def _on_trajectory(self, msg) -> None:
        rows = []
        for point in msg.points:
            t = point.time_from_start.sec + point.time_from_start.nanosec / 1e9
            velocity = _ned(point.velocities[0].linear) if len(point.velocities) else (0.0, 0.0, 0.0)
            rows.append((t, *_ned(point.transforms[0].translation), *velocity))
        yaw = _yaw(msg.points[0].transforms[0].rotation) if rows else math.nan
        self._arrived(self.topics.trajectory, msg)
        if not rows:
            return
        sec, nanosec = _stamp(msg)
        self._set(_Setpoint("trajectory", yaw, trajectory=np.array(rows), t0_wall=sec + nanosec / 1e9))

    def _on_position_command(self, msg) -> None:
        setpoint = _Setpoint("reference", _finite(frames.yaw_enu_to_ned(msg.yaw))[0], position=_ned(msg.position),
                             velocity=_ned(msg.velocity))
        self._arrived(self.topics.pos_cmd, msg)
        self._set(setpoint)

    async def _forward(self) -> None:
        """Send the latest setpoint; references and trajectories are re-tracked at SETPOINT_HZ."""
        period = 1.0 / SETPOINT_HZ
        while not self._closing:
            if self._setpoint is None or self._setpoint.kind == "position":
                await self._new_setpoint.wait()
            self._new_setpoint.clear()
            sp = self._setpoint
            if self._closing:
                break
            if not self._offboard:
                await self.vehicle.start_offboard(SETPOINT_HZ)
                self._offboard = True
            s = self.vehicle.state
            here = np.array([s.north, s.east, s.down])
            if sp.kind == "position":
                await self.vehicle.set_position_ned(*sp.position, yaw=sp.yaw)
                continue
            if sp.kind == "trajectory":
                age = frames.age_s(int(sp.t0_wall), int(round((sp.t0_wall % 1) * 1e9)))
                # ROS stamps are wall time, so the trajectory is followed in wall time.
                velocity, _ = track(sp.trajectory, age, here, self.speed_limit)
            else:
                velocity, _ = follow(np.array(sp.position), np.array(sp.velocity), here, self.speed_limit)
            await self.vehicle.set_velocity_ned(*velocity, yaw=sp.yaw)
            with contextlib.suppress(asyncio.TimeoutError):  # wait_for's: a class of its own on Python 3.10
                await asyncio.wait_for(self._new_setpoint.wait(), period / self._speed())

    def _speed(self) -> float:
        """Vehicle seconds per wall second: setpoints go out at SETPOINT_HZ of vehicle time."""
        factor = self.vehicle.speed_factor
        return 1.0 if math.isinf(factor) else factor


def _rotation_ned_frd(roll: float, pitch: float, yaw: float) -> np.ndarray:
    return Pose((0.0, 0.0, 0.0), yaw=yaw, pitch=pitch, roll=roll).rotation()


def open_backend(domain_id: int = 0, prefer: str = "auto"):
    """rclpy when installed (or asked for), else the Cyclone DDS backend."""
    from onboard.ros2.rclpy_backend import RclpyBackend, rclpy_available

    if prefer == "rclpy" or (prefer == "auto" and rclpy_available()):
        return RclpyBackend(domain_id=domain_id)
    from onboard.ros2.dds_backend import DdsBackend

    return DdsBackend(domain_id)
