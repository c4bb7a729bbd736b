"""The ROS 2 backend on rclpy, for machines with ROS 2 installed (rclpy is not on PyPI).

Same interface as `dds_backend.DdsBackend`: messages come from the installed message packages
(quadrotor_msgs must be built in the workspace for PositionCommand), callbacks run on the asyncio
loop, which spins the node between its other work. Each backend has its own rclpy context, so its
node joins the DDS domain it was given whatever else the process has initialized.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any, Callable

from aio.tasks import cancel_and_wait

SPIN_S = 0.002


def rclpy_available() -> bool:
    try:
        importlib.import_module("rclpy")
    except ImportError:
        return False
    return True


class RclpyBackend:
    """ROS 2 topics through an rclpy node."""

    name = "rclpy"

    def __init__(self, node_name: str = "hil_bridge", domain_id: int = 0) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import (
            DurabilityPolicy,
            QoSProfile,
            ReliabilityPolicy,
            qos_profile_sensor_data,
        )

        self._context = Context()
        self._context.init(domain_id=domain_id)
        self.node = rclpy.create_node(node_name, context=self._context)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._qos = {"default": 10, "sensor": qos_profile_sensor_data,
                     "latched": QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                           durability=DurabilityPolicy.TRANSIENT_LOCAL)}
        self._spinner: asyncio.Task | None = None

    @staticmethod
    def _type(ros_type: str):
        package, _, name = ros_type.split("/")
        return getattr(importlib.import_module(f"{package}.msg"), name)

    def message(self, ros_type: str) -> Any:
        return self._type(ros_type)()

    def publisher(self, topic: str, ros_type: str, qos: str = "default") -> Callable[[Any], None]:
        return self.node.create_publisher(self._type(ros_type), topic, self._qos[qos]).publish

    def subscribe(self, topic: str, ros_type: str, callback: Callable[[Any], None], qos: str = "default") -> None:
        self.node.create_subscription(self._type(ros_type), topic, callback, self._qos[qos])
        if self._spinner is None:
            self._spinner = asyncio.create_task(self._spin())

    async def _spin(self) -> None:
        while True:
            self._executor.spin_once(timeout_sec=0)
            await asyncio.sleep(SPIN_S)

    async def close(self) -> None:
        if self._spinner is not None:
            await cancel_and_wait(self._spinner)
        self._executor.shutdown()
        self.node.destroy_node()
        self._context.try_shutdown()
