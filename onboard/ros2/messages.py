"""The ROS 2 message types the bridge uses, as Cyclone DDS IDL types named as ROS 2 names them.

ROS 2 maps ``pkg/msg/Type`` to the DDS type ``pkg::msg::dds_::Type_``; field names and order
follow the .msg files (builtin_interfaces, std_msgs, geometry_msgs, nav_msgs, sensor_msgs,
trajectory_msgs), so these serialize to the same CDR as rclpy's. quadrotor_msgs/PositionCommand has
the shape EGO-Planner's ROS 2 ports publish. The bridge reads messages only by field name, so an
rclpy message works with it as well as one of these.
"""

# No `from __future__ import annotations` here: Cyclone DDS reads the annotations as real types.
from dataclasses import dataclass, field

from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float64, int32, sequence, uint8, uint32


@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32 = 0
    nanosec: uint32 = 0


@dataclass
class Duration(IdlStruct, typename="builtin_interfaces::msg::dds_::Duration_"):
    sec: int32 = 0
    nanosec: uint32 = 0


@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time = field(default_factory=Time)
    frame_id: str = ""


@dataclass
class Point(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Quaternion(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@dataclass
class Pose(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    position: Point = field(default_factory=Point)
    orientation: Quaternion = field(default_factory=Quaternion)


@dataclass
class PoseStamped(IdlStruct, typename="geometry_msgs::msg::dds_::PoseStamped_"):
    header: Header = field(default_factory=Header)
    pose: Pose = field(default_factory=Pose)


@dataclass
class Twist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3 = field(default_factory=Vector3)
    angular: Vector3 = field(default_factory=Vector3)


@dataclass
class Transform(IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3 = field(default_factory=Vector3)
    rotation: Quaternion = field(default_factory=Quaternion)


@dataclass
class PoseWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::PoseWithCovariance_"):
    pose: Pose = field(default_factory=Pose)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class TwistWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::TwistWithCovariance_"):
    twist: Twist = field(default_factory=Twist)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class Odometry(IdlStruct, typename="nav_msgs::msg::dds_::Odometry_"):
    header: Header = field(default_factory=Header)
    child_frame_id: str = ""
    pose: PoseWithCovariance = field(default_factory=PoseWithCovariance)
    twist: TwistWithCovariance = field(default_factory=TwistWithCovariance)


@dataclass
class PointField(IdlStruct, typename="sensor_msgs::msg::dds_::PointField_"):
    name: str = ""
    offset: uint32 = 0
    datatype: uint8 = 0
    count: uint32 = 0


@dataclass
class PointCloud2(IdlStruct, typename="sensor_msgs::msg::dds_::PointCloud2_"):
    header: Header = field(default_factory=Header)
    height: uint32 = 0
    width: uint32 = 0
    fields: sequence[PointField] = field(default_factory=list)
    is_bigendian: bool = False
    point_step: uint32 = 0
    row_step: uint32 = 0
    data: sequence[uint8] = field(default_factory=list)
    is_dense: bool = False


@dataclass
class Image(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    header: Header = field(default_factory=Header)
    height: uint32 = 0
    width: uint32 = 0
    encoding: str = ""
    is_bigendian: uint8 = 0
    step: uint32 = 0
    data: sequence[uint8] = field(default_factory=list)


@dataclass
class MultiDOFJointTrajectoryPoint(IdlStruct, typename="trajectory_msgs::msg::dds_::MultiDOFJointTrajectoryPoint_"):
    transforms: sequence[Transform] = field(default_factory=list)
    velocities: sequence[Twist] = field(default_factory=list)
    accelerations: sequence[Twist] = field(default_factory=list)
    time_from_start: Duration = field(default_factory=Duration)


@dataclass
class MultiDOFJointTrajectory(IdlStruct, typename="trajectory_msgs::msg::dds_::MultiDOFJointTrajectory_"):
    header: Header = field(default_factory=Header)
    joint_names: sequence[str] = field(default_factory=list)
    points: sequence[MultiDOFJointTrajectoryPoint] = field(default_factory=list)


@dataclass
class PositionCommand(IdlStruct, typename="quadrotor_msgs::msg::dds_::PositionCommand_"):
    header: Header = field(default_factory=Header)
    position: Point = field(default_factory=Point)
    velocity: Vector3 = field(default_factory=Vector3)
    acceleration: Vector3 = field(default_factory=Vector3)
    jerk: Vector3 = field(default_factory=Vector3)
    yaw: float64 = 0.0
    yaw_dot: float64 = 0.0
    kx: array[float64, 3] = field(default_factory=lambda: [0.0] * 3)
    kv: array[float64, 3] = field(default_factory=lambda: [0.0] * 3)
    trajectory_id: uint32 = 0
    trajectory_flag: uint8 = 0


FLOAT32 = 7  # sensor_msgs/PointField.FLOAT32
