"""Recording a vehicle's telemetry into a trial record: one loop for every kind of trial."""

from __future__ import annotations

from bridges.vehicle import Vehicle
from records.record import TrialRecorder


async def record_telemetry(vehicle: Vehicle, recorder: TrialRecorder, keep: list[dict] | None = None) -> None:
    """Every snapshot into the record's telemetry table (and into `keep`, for the trial's metrics),
    until cancelled."""
    async for state in vehicle.telemetry():
        row = state.as_row()
        if keep is not None:
            keep.append(row)
        recorder.append("telemetry", row)
