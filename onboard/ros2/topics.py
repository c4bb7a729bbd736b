"""Where a ROS 2 planner node meets the vehicle: topic names (a preset under a namespace) and the DDS domain.

Presets (names without a leading "/" resolve under the namespace as a node's relative names do; a
namespace prefixes every name, as ``ros2 run ... --ros-args -r __ns:=/uav1`` does for MAVROS):

=================  ======================  ===================================
what               ``bridge`` (default)    ``mavros``
=================  ======================  ===================================
odometry (out)     ``odom``                ``/mavros/local_position/odom``
goal (out)         ``goal``                ``goal``
depth image (out)  ``camera/depth``        ``camera/depth``
point cloud (out)  ``camera/points``       ``camera/points``
pose setpoint      ``setpoint/pose``       ``/mavros/setpoint_position/local``
trajectory         ``setpoint/trajectory`` ``/mavros/setpoint_trajectory/local``
PositionCommand    ``planning/pos_cmd``    ``planning/pos_cmd``
=================  ======================  ===================================

MAVROS publishes no camera, goal or quadrotor_msgs/PositionCommand topic, so the ``mavros`` preset keeps
the bridge's names for those. There is no px4_msgs (``/fmu/...``) preset: those topics carry px4_msgs
types (VehicleOdometry, TrajectorySetpoint, OffboardControlMode) that the bridge neither produces nor
reads, stamped with PX4's boot-time ``timestamp`` rather than a ROS header (so there is no header stamp
to measure latency from), and publishing nav_msgs under PX4's names would clash with PX4's own
uXRCE-DDS bridge on a shared domain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from config.fields import Field, Invalid, choice, integer

ROS2 = "ros2"  # a campaign's planner name for an external ROS 2 node
DOMAIN_ID_MAX = 232  # the highest ROS_DOMAIN_ID ROS 2 accepts (DDS's port mapping)
# ROS 2 namespace: "/" or "/" tokens of letters, digits and underscores, not starting with a digit.
_NAMESPACE = re.compile(r"(/[A-Za-z_][A-Za-z0-9_]*)+|/")


@dataclass(frozen=True)
class Topics:
    """The bridge's topic names, one per stream."""

    odom: str
    goal: str
    depth: str
    points: str
    pose: str
    trajectory: str
    pos_cmd: str

    def under(self, namespace: str) -> "Topics":
        """Every name prefixed by `namespace` ("/" or "": as they are, relative names stay relative)."""
        if namespace in ("", "/"):
            return self
        return replace(self, **{f.name: f"{namespace}/{getattr(self, f.name).lstrip('/')}" for f in fields(self)})


BRIDGE = Topics(odom="odom", goal="goal", depth="camera/depth", points="camera/points", pose="setpoint/pose",
                trajectory="setpoint/trajectory", pos_cmd="planning/pos_cmd")
PRESETS = {
    "bridge": BRIDGE,
    "mavros": replace(BRIDGE, odom="/mavros/local_position/odom", pose="/mavros/setpoint_position/local",
                      trajectory="/mavros/setpoint_trajectory/local"),
}


def _namespace(value) -> str:
    if not isinstance(value, str) or not _NAMESPACE.fullmatch(value):
        raise Invalid("a ROS 2 namespace such as /uav1 ('/' then names of letters, digits and _, not starting "
                      "with a digit, separated by '/')")
    return value


# The options of a campaign's `{ros2: {...}}` planner entry, read with config.fields.
OPTION_FIELDS: dict[str, Field] = {
    "topics": choice(tuple(PRESETS), required=False, default="bridge"),
    "namespace": Field("a ROS 2 namespace such as /uav1", _namespace, required=False, default="/"),
    "domain_id": integer("the DDS domain, ROS_DOMAIN_ID", at_least=0, at_most=DOMAIN_ID_MAX, required=False,
                         default=0),
}


@dataclass(frozen=True)
class Ros2Endpoint:
    """An external ROS 2 planner node's side of the bridge: topic preset, namespace, DDS domain."""

    topics: str = "bridge"
    namespace: str = "/"
    domain_id: int = 0

    @property
    def name(self) -> str:
        """How campaigns, trial ids and results name it: ``ros2``, or ``ros2(OPTION=VALUE,...)`` for the
        options that differ from the defaults."""
        options = [f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name) != f.default]
        return f"{ROS2}({','.join(options)})" if options else ROS2

    @classmethod
    def parse(cls, name: str) -> "Ros2Endpoint":
        """The endpoint a `name` names (its inverse); ValueError for anything else."""
        if name == ROS2:
            return cls()
        match = re.fullmatch(rf"{ROS2}\((.+)\)", name)
        if not match:
            raise ValueError(f"not a ROS 2 planner name: {name!r}")
        values = {}
        for option in match.group(1).split(","):
            key, _, value = option.partition("=")
            if key not in OPTION_FIELDS:
                raise ValueError(f"{name!r}: unknown option {key!r}")
            try:
                values[key] = OPTION_FIELDS[key].parse(int(value) if key == "domain_id" and value.isdigit() else value)
            except Invalid as invalid:
                raise ValueError(f"{name!r}: {key}: expected {invalid}") from None
        return cls(**values)

    def resolved(self) -> Topics:
        """The topic names this endpoint uses."""
        return PRESETS[self.topics].under(self.namespace)


def is_ros2(name: str) -> bool:
    """Whether a campaign planner name means an external ROS 2 node."""
    return name == ROS2 or name.startswith(f"{ROS2}(")
