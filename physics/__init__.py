"""The simulated vehicle's physics: the rigid body (`dynamics`), what its sensors read (`sensors`: PX4 SIH's
noise on the built-in vehicle's readings; `sensor_suite`: the IMU, magnetometer, barometer and GPS samples
PX4's external simulator sends, and the standard atmosphere both use) and its faults (`faults`).

One physics for both autopilots that fly it: the built-in vehicle (`px4.sim`) steps it in its own process, and
PX4's external simulator (`px4.external_physics`) steps it for real PX4 firmware. It knows nothing of either.
"""
