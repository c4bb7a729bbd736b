"""The harness's physics as PX4's external simulator, over MAVLink's HIL simulator protocol.

Real PX4 firmware flies the harness's vehicle: its rigid body (`physics.dynamics`), profile,
faults (`physics.faults`) and sensor models act on PX4 through the sensor data PX4 reads, exactly
as on hardware, in SITL (PX4 connects over TCP 4560+N and runs in lockstep) or on a flight
controller in HITL mode over a serial line.

- `sensors`: what the IMU, magnetometer, barometer and GPS read, with the noise, bias and rates of
  the vehicle profile's sensors (`profiles.sensors`);
- `hil_messages`: HIL_SENSOR / HIL_GPS / HIL_STATE_QUATERNION out, HIL_ACTUATOR_CONTROLS in;
- `simulator`: physics, faults and sensors stepped one frame (IMU period) at a time, no I/O;
- `links`: PX4 SITL's TCP connection and serial lines;
- `lockstep`: the exchange loop on its own thread (lockstep with SITL, paced for HITL);
- `records`: ground truth and what was sent, handed to a caller's sink as table rows;
- `sitl_run`: `px4_on_harness_physics`, PX4 SITL and all of the above for one block.

The HITL bench (a real board over a serial URL, with its SYS_HITL check and the arming gate)
is `bridges.hitl_bench`, since it also routes the board's MAVLink to a client.
"""

from physics.sensor_suite import DEFAULT_HOME
from profiles.sensors import MagneticField, SensorProfile
from px4.external_physics.links import SimulatorLinkError
from px4.external_physics.simulator import HarnessSimulator, SimulatorOptions, px4_params_for
from px4.external_physics.sitl_run import HarnessSitlRun, px4_on_harness_physics

__all__ = ["DEFAULT_HOME", "HarnessSimulator", "HarnessSitlRun", "MagneticField", "SensorProfile",
           "SimulatorLinkError", "SimulatorOptions", "px4_on_harness_physics", "px4_params_for"]
