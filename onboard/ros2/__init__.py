"""The ROS 2 bridge: vehicle odometry and sensor data out as ROS 2 topics, planner setpoints in.

`bridge.Ros2Bridge` does the work over a backend: `rclpy_backend` when ROS 2 is installed,
otherwise `dds_backend`, which speaks ROS 2's conventions directly over Cyclone DDS from PyPI
(topic names ``rt/<topic>``, type names ``pkg::msg::dds_::Type_``, CDR, ROS 2 default QoS).
`frames` converts between the harness's NED/FRD and ROS's ENU/FLU (REP 103).
"""
