"""The ROS 2 bridge: frame conversions, and the vehicle driven by a ROS 2-conventions publisher over the
Cyclone DDS backend (a separate DDS participant, as another process's node would be; real DDS, loopback only)."""

from __future__ import annotations

import asyncio
import math
import os
import random

import numpy as np
import pytest

from onboard.ros2 import frames
from missions.scenes.base import make_scene, vertical_cylinders
from missions.sensors import Pose
from onboard.sensing import SceneSensor

# Keep DDS discovery on loopback and off the real network (docs/design.md: traffic stays on loopback).
os.environ.setdefault("CYCLONEDDS_URI", "<CycloneDDS><Domain><General><Interfaces><NetworkInterface address="
                      "\"127.0.0.1\"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery>"
                      "<Peers><Peer address=\"127.0.0.1\"/></Peers><ParticipantIndex>auto</ParticipantIndex>"
                      "</Discovery></Domain></CycloneDDS>")
cyclonedds = pytest.importorskip("cyclonedds")

from onboard.ros2 import messages as m  # noqa: E402
from onboard.ros2.bridge import Ros2Bridge  # noqa: E402
from onboard.ros2.dds_backend import DdsBackend, dds_topic_name  # noqa: E402


def test_enu_ned_conversions_agree_with_rotation_matrices():
    assert frames.ned_to_enu([1.0, 2.0, -3.0]) == pytest.approx([2.0, 1.0, 3.0])
    assert frames.enu_to_ned(frames.ned_to_enu([[1, 2, 3]]))[0] == pytest.approx([1, 2, 3])
    assert frames.yaw_ned_to_enu(0.0) == pytest.approx(math.pi / 2)  # facing north
    assert frames.yaw_enu_to_ned(frames.yaw_ned_to_enu(0.3)) == pytest.approx(0.3)
    swap = np.array([[0, 1, 0], [1, 0, 0], [0, 0, -1.0]])
    flip = np.diag([1.0, -1.0, -1.0])
    for roll, pitch, yaw in [(0.1, -0.2, 0.7), (0.0, 0.0, -2.5), (-0.4, 0.3, 3.0)]:
        expected = swap @ Pose((0, 0, 0), yaw=yaw, pitch=pitch, roll=roll).rotation() @ flip  # FLU -> ENU
        x, y, z, w = frames.attitude_ned_to_enu(roll, pitch, yaw)
        got = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        assert got == pytest.approx(expected, abs=1e-9)


def test_ros2_naming_and_cdr_round_trip():
    assert dds_topic_name("/planning/pos_cmd") == "rt/planning/pos_cmd"
    assert m.PositionCommand.__idl_typename__ == "quadrotor_msgs::msg::dds_::PositionCommand_"
    cmd = m.PositionCommand(position=m.Point(1, 2, 3), yaw=0.5, trajectory_id=7)
    assert m.PositionCommand.deserialize(cmd.serialize()) == cmd


def _stamped(msg):
    msg.header.stamp.sec, msg.header.stamp.nanosec = frames.stamp_now()
    msg.header.frame_id = "map"
    return msg


async def test_a_ros2_publisher_drives_the_vehicle_through_the_dds_backend(vehicle):
    domain = random.randint(1, 200)  # away from ROS_DOMAIN_ID 0 and from concurrent test runs
    await vehicle.arm()
    await vehicle.takeoff(2.0)
    node = DdsBackend(domain)  # the "planner node": its own DDS participant
    odometry, clouds = [], []
    node.subscribe("odom", "nav_msgs/msg/Odometry", odometry.append)
    node.subscribe("camera/points", "sensor_msgs/msg/PointCloud2", clouds.append, qos="sensor")
    # One trunk 3 m north of home, in front of the camera.
    trunk = vertical_cylinders(np.array([3.0]), np.array([0.0]), np.array([0.3]), 6.0)
    scene = make_scene("one-tree", 0, (np.array([-10.0, -10, -5]), np.array([10.0, 10, 0])), np.zeros(3),
                       np.ones(3), cylinders=trunk)
    publish_cmd = node.publisher("planning/pos_cmd", "quadrotor_msgs/msg/PositionCommand")
    publish_pose = node.publisher("setpoint/pose", "geometry_msgs/msg/PoseStamped")
    try:
        async with Ros2Bridge(vehicle, DdsBackend(domain), sensor=SceneSensor(scene)) as bridge:
            await asyncio.sleep(0.5)  # discovery
            # EGO-Planner style: 4 m east (ENU x), 2.5 m up, at 100 Hz until the vehicle is there.
            for _ in range(600):
                publish_cmd(_stamped(m.PositionCommand(position=m.Point(4.0, 0.0, 2.5), yaw=0.0)))
                await asyncio.sleep(0.01)
                if abs(vehicle.state.east - 4.0) < 0.3 and abs(vehicle.state.altitude - 2.5) < 0.3:
                    break
            assert vehicle.state.east == pytest.approx(4.0, abs=0.3)
            assert vehicle.state.altitude == pytest.approx(2.5, abs=0.3)
            # Messages no vehicle can fly (a NaN coordinate, a trajectory point without a transform) are
            # dropped and counted; the bridge keeps listening and the vehicle keeps its last setpoint.
            publish_trajectory = node.publisher("setpoint/trajectory", "trajectory_msgs/msg/MultiDOFJointTrajectory")
            for _ in range(100):  # until the new writer is discovered and both have been dropped
                publish_pose(_stamped(m.PoseStamped(pose=m.Pose(m.Point(math.nan, 3.0, 2.5), m.Quaternion(0, 0, 0, 1)))))
                publish_trajectory(_stamped(m.MultiDOFJointTrajectory(points=[m.MultiDOFJointTrajectoryPoint()])))
                await asyncio.sleep(0.05)
                if bridge.rejected["setpoint/pose"] and bridge.rejected["setpoint/trajectory"]:
                    break
            assert bridge.rejected["setpoint/pose"] and bridge.rejected["setpoint/trajectory"], bridge.rejected
            assert not bridge.latencies["setpoint/pose"] and not bridge.latencies["setpoint/trajectory"]
            assert vehicle.state.east == pytest.approx(4.0, abs=0.3)  # still where the last good command put it
            # A pose setpoint: 3 m north (ENU y) of home, facing north (ENU yaw pi/2).
            x, y, z, w = frames.quaternion_from_euler(0.0, 0.0, math.pi / 2)
            publish_pose(_stamped(m.PoseStamped(pose=m.Pose(m.Point(4.0, 3.0, 2.5), m.Quaternion(x, y, z, w)))))
            await vehicle.wait_until(lambda s: abs(s.north - 3.0) < 0.3, 15.0, "north 3 m from a PoseStamped")
            assert bridge.latencies["planning/pos_cmd"] and bridge.latencies["setpoint/pose"]
            assert max(bridge.latencies["planning/pos_cmd"]) < 1.0
    finally:
        await node.close()
    cloud = next(c for c in clouds if c.width > 0)
    xyz = np.frombuffer(bytes(cloud.data), dtype="<f4").reshape(-1, 3)
    assert cloud.point_step == 12 and len(xyz) == cloud.width
    assert np.all(np.abs(xyz[:, 1] - 2.7) < 0.5)  # ENU y = north: the trunk's near face, about 2.7 m away
    last = odometry[-1]
    assert last.header.frame_id == "map" and last.child_frame_id == "base_link"
    assert last.pose.pose.position.x == pytest.approx(vehicle.state.east, abs=0.5)  # ENU x = east
    await vehicle.land()
