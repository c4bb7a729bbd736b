"""Local NED <-> WGS84 conversion the way PX4 does it (azimuthal equidistant about home).

It lives with the missions because mission files (QGroundControl plans, lat/lon waypoints) are
converted with it at load, and the flight-controller side uses the same projection.

The vehicle reports GLOBAL_POSITION_INT from its local position and the bridge turns local
waypoints into the lat/lon that MAVSDK's mission and goto calls take; both must use the same
projection or a waypoint lands a few centimetres off where the client meant it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

EARTH_RADIUS_M = 6_371_000.0


@dataclass(frozen=True)
class GeoOrigin:
    """The reference point (home) of a local NED frame."""

    lat_deg: float
    lon_deg: float
    alt_m: float  # AMSL

    @cached_property
    def _reference(self) -> tuple[float, float, float, float]:
        """The origin in radians, and its latitude's sine and cosine: to_global runs hundreds of times a
        simulated second (snapshots, telemetry), and these never change."""
        ref_lat = math.radians(self.lat_deg)
        return ref_lat, math.radians(self.lon_deg), math.sin(ref_lat), math.cos(ref_lat)

    def to_global(self, north: float, east: float, down: float) -> tuple[float, float, float]:
        """Local NED metres -> (lat deg, lon deg, alt AMSL m)."""
        ref_lat, ref_lon, sin_ref, cos_ref = self._reference
        x = north / EARTH_RADIUS_M
        y = east / EARTH_RADIUS_M
        c = math.hypot(x, y)
        if c < 1e-12:
            lat, lon = ref_lat, ref_lon
        else:
            sin_c, cos_c = math.sin(c), math.cos(c)
            lat = math.asin(cos_c * sin_ref + x * sin_c * cos_ref / c)
            lon = ref_lon + math.atan2(y * sin_c, c * cos_ref * cos_c - x * sin_ref * sin_c)
        return math.degrees(lat), math.degrees(lon), self.alt_m - down

    def to_local(self, lat_deg: float, lon_deg: float, alt_m: float) -> tuple[float, float, float]:
        """(lat deg, lon deg, alt AMSL m) -> local NED metres."""
        ref_lat = math.radians(self.lat_deg)
        lat = math.radians(lat_deg)
        d_lon = math.radians(lon_deg - self.lon_deg)
        cos_d_lon = math.cos(d_lon)
        arg = math.sin(ref_lat) * math.sin(lat) + math.cos(ref_lat) * math.cos(lat) * cos_d_lon
        c = math.acos(max(-1.0, min(1.0, arg)))
        k = 1.0 if abs(c) < 1e-12 else c / math.sin(c)
        north = k * (math.cos(ref_lat) * math.sin(lat) - math.sin(ref_lat) * math.cos(lat) * cos_d_lon) * EARTH_RADIUS_M
        east = k * math.cos(lat) * math.sin(d_lon) * EARTH_RADIUS_M
        return north, east, self.alt_m - alt_m
