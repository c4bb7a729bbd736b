"""A ROS 2 backend without ROS: Cyclone DDS (PyPI `cyclonedds`) with ROS 2's naming and QoS.

What makes a DDS endpoint a ROS 2 topic (as rmw_cyclonedds_cpp does it):

* topic ``/odom`` is DDS topic ``rt/odom`` ("rt" = ROS topic);
* type ``nav_msgs/msg/Odometry`` is DDS type ``nav_msgs::msg::dds_::Odometry_`` (onboard.ros2.messages);
* data are CDR in the .msg field order;
* QoS "default" is reliable, volatile, keep last 10; "sensor" (rclpy's qos_profile_sensor_data) is
  best effort, volatile, keep last 5; "latched" is reliable, transient local, keep last 1 (a reader that
  joins late still gets the last message, as ROS 1's latched topics).

Subscriptions are polled from the asyncio loop (every `POLL_S`), so callbacks run on the loop.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.internal import InvalidSample
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from aio.tasks import cancel_and_wait
from onboard.ros2 import messages

POLL_S = 0.002
QOS = {
    "default": Qos(Policy.Reliability.Reliable(duration(milliseconds=100)), Policy.Durability.Volatile,
                   Policy.History.KeepLast(10)),
    "sensor": Qos(Policy.Reliability.BestEffort, Policy.Durability.Volatile, Policy.History.KeepLast(5)),
    "latched": Qos(Policy.Reliability.Reliable(duration(milliseconds=100)), Policy.Durability.TransientLocal,
                   Policy.History.KeepLast(1)),
}
# ROS type name -> IDL class.
TYPES = {
    "geometry_msgs/msg/PoseStamped": messages.PoseStamped,
    "nav_msgs/msg/Odometry": messages.Odometry,
    "sensor_msgs/msg/PointCloud2": messages.PointCloud2,
    "sensor_msgs/msg/PointField": messages.PointField,
    "sensor_msgs/msg/Image": messages.Image,
    "trajectory_msgs/msg/MultiDOFJointTrajectory": messages.MultiDOFJointTrajectory,
    "quadrotor_msgs/msg/PositionCommand": messages.PositionCommand,
}


def dds_topic_name(topic: str) -> str:
    """ROS 2 topic name -> DDS topic name: "/odom" and "odom" -> "rt/odom"."""
    return "rt/" + topic.lstrip("/")


class DdsBackend:
    """ROS 2 topics over Cyclone DDS in one domain (ROS_DOMAIN_ID's meaning)."""

    name = "cyclonedds"

    def __init__(self, domain_id: int = 0) -> None:
        self.participant = DomainParticipant(domain_id)
        self._readers: list[tuple[DataReader, Callable[[Any], None]]] = []
        self._topics: dict[str, Topic] = {}
        self._poller: asyncio.Task | None = None

    def message(self, ros_type: str) -> Any:
        """A new, zeroed message of a ROS type name."""
        return TYPES[ros_type]()

    def _topic(self, topic: str, ros_type: str) -> Topic:
        name = dds_topic_name(topic)
        if name not in self._topics:
            self._topics[name] = Topic(self.participant, name, TYPES[ros_type])
        return self._topics[name]

    def publisher(self, topic: str, ros_type: str, qos: str = "default") -> Callable[[Any], None]:
        writer = DataWriter(self.participant, self._topic(topic, ros_type), qos=QOS[qos])
        return writer.write

    def subscribe(self, topic: str, ros_type: str, callback: Callable[[Any], None], qos: str = "default") -> None:
        reader = DataReader(self.participant, self._topic(topic, ros_type), qos=QOS[qos])
        self._readers.append((reader, callback))
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll())

    async def _poll(self) -> None:
        while True:
            for reader, callback in self._readers:
                for sample in reader.take(N=64):
                    # A writer leaving (a node or bridge that closed) arrives as a sample without data.
                    if not isinstance(sample, InvalidSample):
                        callback(sample)
            await asyncio.sleep(POLL_S)

    async def close(self) -> None:
        if self._poller is not None:
            await cancel_and_wait(self._poller)
        self._readers.clear()
