"""A ROS 2 planner node for the campaign tests, in a process of its own (its own DDS participant, as any node
on the domain would be): ``python -m tests.ros2_node DOMAIN_ID NAMESPACE``.

It speaks the ``mavros`` preset's topics under NAMESPACE: reads the goal and odometry, and on each odometry
message (at most `RATE_HZ`) publishes a pose setpoint at the goal, stamped with that odometry's header stamp
(the latency convention: the bridge's age of the setpoint is then sensor-to-command). Prints "ready" once
its endpoints exist, and runs until terminated.
"""

from __future__ import annotations

import asyncio
import sys
import time

from onboard.ros2 import messages as m
from onboard.ros2.dds_backend import DdsBackend
from onboard.ros2.topics import PRESETS

RATE_HZ = 20.0


async def main(domain_id: int, namespace: str) -> None:
    topics = PRESETS["mavros"].under(namespace)
    node = DdsBackend(domain_id)
    goal: list[m.PoseStamped] = []
    last = [0.0]
    publish = node.publisher(topics.pose, "geometry_msgs/msg/PoseStamped")

    def on_odometry(odometry: m.Odometry) -> None:
        if not goal or time.monotonic() - last[0] < 1.0 / RATE_HZ:
            return
        last[0] = time.monotonic()
        setpoint = m.PoseStamped(pose=m.Pose(goal[-1].pose.position, odometry.pose.pose.orientation))
        setpoint.header.stamp = odometry.header.stamp  # the sensor data this command reacts to
        setpoint.header.frame_id = "map"
        publish(setpoint)

    node.subscribe(topics.goal, "geometry_msgs/msg/PoseStamped", goal.append, qos="latched")
    node.subscribe(topics.odom, "nav_msgs/msg/Odometry", on_odometry)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
