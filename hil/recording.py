"""Recording a vehicle's telemetry into a trial record: one loop for every kind of trial.

The record gets the telemetry table (one row per snapshot) and, beside it, telemetry.tlog: every
MAVLink frame the harness receives from the vehicle, as QGroundControl and MAVProxy write a telemetry
log (each frame after its time stamp, a big-endian uint64 of microseconds since the Unix epoch), so a
trial opens in QGroundControl, MAVExplorer or PlotJuggler, and `pymavlink.mavutil.mavlink_connection`
reads it. What the frames are on each target, and their time stamps, is the vehicle's to say
(`Vehicle.mavlink_frames`).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct

from bridges.mavlink_frames import frame_header
from bridges.vehicle import Vehicle, VehicleLost, VehicleState
from records.record import TrialRecorder
from records.truth import TRUTH_TABLE

TLOG_NAME = "telemetry.tlog"
_STAMP = struct.Struct(">Q")
_HEARTBEAT = 0  # MAVLink message id


async def record_telemetry(vehicle: Vehicle, recorder: TrialRecorder, keep: list[dict] | None = None) -> None:
    """Every snapshot into the record's telemetry table (and into `keep`, for the trial's metrics), where the
    target has a truth (`Vehicle.truth`) the true position as of each snapshot into table `truth` (keyed by the
    snapshot's t_ns), and every MAVLink frame into its telemetry.tlog (`record_tlog`), until cancelled, or until the
    vehicle is lost (bridges.vehicle.VehicleLost), which is the record's event `vehicle_lost`: nothing more comes,
    and the trial's own end goes on to finish the record."""
    truth = vehicle.truth

    def record(state: VehicleState) -> None:
        row = state.as_row()
        if keep is not None:
            keep.append(row)
        recorder.append("telemetry", row)
        true = truth.position(state) if truth is not None else None
        if true is not None:
            recorder.append(TRUTH_TABLE, {"t_ns": state.t_ns, "north": true[0], "east": true[1], "down": true[2]})

    tlog = asyncio.create_task(record_tlog(vehicle, recorder))
    try:
        await vehicle.each_snapshot(record)
    except VehicleLost as lost:
        recorder.event("vehicle_lost", reason=str(lost))
    finally:
        # A trial torn down by a signal may have this coroutine finalized after its loop closed: nothing
        # left to stop then. Otherwise record_tlog raises nothing but its cancellation, and a SystemExit or
        # KeyboardInterrupt that landed in it has left the loop once already: raised again here it would
        # cut the loop's clean-up short.
        if not tlog.get_loop().is_closed():
            tlog.cancel()
            await asyncio.gather(tlog, return_exceptions=True)


async def record_tlog(vehicle: Vehicle, recorder: TrialRecorder) -> None:
    """Every MAVLink frame the vehicle hands over into the record's telemetry.tlog, until cancelled.

    The recorder keeps the file on disk within its flush interval and closes it with the record. When
    cancelled, a `tlog_closed` event says how many frames, and how many HEARTBEATs among them, the
    harness received and wrote: a reader of the file must find exactly these. A failure of the log
    (a vehicle that cannot give its frames) is a `tlog_failed` event instead; the telemetry table goes on.
    """
    frames = heartbeats = 0
    try:
        log = recorder.side_file(TLOG_NAME)
        async with contextlib.aclosing(vehicle.mavlink_frames()) as arriving:
            async for batch in arriving:
                log.write(b"".join(_STAMP.pack(stamp) + frame for stamp, frame in batch))
                frames += len(batch)
                heartbeats += sum(frame_header(frame)[4] == _HEARTBEAT for _, frame in batch)
                recorder.flush_if_due()
    except asyncio.CancelledError:
        recorder.event("tlog_closed", path=TLOG_NAME, frames=frames, heartbeats=heartbeats)
        raise
    except Exception as exc:  # noqa: BLE001 - the log is a by-product: the trial and its table go on without it
        recorder.event("tlog_failed", error=f"{type(exc).__name__}: {exc}", frames=frames, heartbeats=heartbeats)

