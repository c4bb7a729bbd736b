"""The sense stage: what the vehicle's depth camera sees of the scene from its current pose.

Wraps the missions sensor (`missions.sensors.DepthCamera`) for the runtime: it takes a telemetry
snapshot in the vehicle's local frame, renders in scene coordinates and hands back the depth image
and its points in the local frame, which is the frame planners work in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bridges.vehicle import VehicleState
from missions.geometry import Scene
from missions.sensors import DepthCamera, Pose


@dataclass
class SceneSensor:
    """A depth camera looking into `scene`; ``home_in_scene`` converts local NED to scene coordinates."""

    scene: Scene
    home_in_scene: tuple[float, float, float] = (0.0, 0.0, 0.0)
    camera: DepthCamera = field(default_factory=DepthCamera)

    def read(self, state: VehicleState) -> tuple[np.ndarray, np.ndarray]:
        """(depth image, its points as (N, 3) local NED) from the pose in `state`."""
        home = np.asarray(self.home_in_scene)
        pose = Pose((state.north + home[0], state.east + home[1], state.down + home[2]),
                    yaw=state.yaw, pitch=state.pitch, roll=state.roll)
        depth = self.camera.render(self.scene, pose)
        return depth, self.camera.point_cloud(depth, pose) - home
