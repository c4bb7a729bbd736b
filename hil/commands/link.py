"""`hil link`: the MAVLink link-impairment proxy, standalone.

Put it between a flight controller and the onboard side: the autopilot sends to `--listen`, the
companion computer (MAVSDK) receives from `--forward`. With `--record DIR` every frame's fate goes
into the "link" table of a trial record in DIR (finished on Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from hil.commands.args import positive_float


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "link", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run the MAVLink link-impairment proxy between a flight controller and the onboard side",
        description="Forward MAVLink between a flight controller (--listen) and the onboard side (--forward), "
                    "applying a link profile's latency, loss, reordering, corruption, bandwidth cap and outages "
                    "per direction. Frames are understood (MAVLink 1 and 2); other bytes are counted and passed "
                    "or dropped as the profile says. Stop with Ctrl-C.",
        epilog="examples:\n"
               "  hil sim --link udpout://127.0.0.1:14600 &\n"
               "  hil link --listen udpin://127.0.0.1:14600 --forward udpout://127.0.0.1:14540 --profile wifi\n"
               "      # MAVSDK then connects to udpin://127.0.0.1:14540 as usual\n"
               "  hil link --listen serial:///dev/ttyTHS1:921600 --forward udpout://127.0.0.1:14540 \\\n"
               "           --profile telemetry_radio_57600 --record runs/link-bench\n"
               "\nprofiles: a name from profiles/links/ (wifi, telemetry_radio_57600, serial_921600, "
               "flightbench_25_50ms) or a YAML file.")
    parser.add_argument("--listen", required=True, metavar="URL",
                        help="flight-controller side: udpin://HOST:PORT the autopilot sends to, or serial:///dev/DEV:BAUD")
    parser.add_argument("--forward", required=True, metavar="URL",
                        help="onboard side: udpout://HOST:PORT where MAVSDK listens (or udpin://, serial://)")
    parser.add_argument("--profile", default="serial_921600",
                        help="link profile name or YAML file (default: %(default)s)")
    parser.add_argument("--seed", type=int, help="override the profile's seed")
    parser.add_argument("--speed", type=positive_float, default=1.0,
                        help="the simulator's speed factor, so delays are applied in vehicle time (default: 1)")
    parser.add_argument("--record", type=Path, metavar="DIR", help="write a trial record with a 'link' table here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from bridges.link_proxy import LinkProxy, precise_event_loop
    from bridges.transport import TransportError
    from config.errors import ConfigError
    from profiles.link import load_link_profile

    try:
        spec = load_link_profile(args.profile)
    except ConfigError as exc:
        print(f"hil link: {exc}", file=sys.stderr)
        return 2
    if args.seed is not None:
        spec = replace(spec, seed=args.seed)
    try:
        with asyncio.Runner(loop_factory=precise_event_loop) as runner:
            return runner.run(_serve(args, spec, LinkProxy))
    except (TransportError, OSError) as exc:
        print(f"hil link: {exc}", file=sys.stderr)
        return 2


class _RowsOffTheLoop:
    """Collects the proxy's rows and writes them to the recorder from a worker thread.

    Writing a parquet part takes milliseconds; done on the event loop it would hold back every
    release due meanwhile (measured: p99 delay error ~10 ms at 500 frames/s instead of ~1 ms). The recorder is
    only ever used by one thread at a time: the worker while the loop runs, the caller at the end.
    """

    PERIOD_S = 0.5

    def __init__(self, recorder) -> None:
        self.recorder = recorder
        self.rows: list[dict] = []

    def _write(self, rows: list[dict]) -> None:
        for row in rows:
            self.recorder.append("link", row)

    async def run(self, stop: asyncio.Event) -> None:
        """Write a batch every PERIOD_S until `stop` is set (then the last batch, then return).

        Stopped by an event, never cancelled: a cancelled await would leave the worker thread
        writing while the caller goes on to use the recorder.
        """
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.PERIOD_S)
            rows, self.rows = self.rows, []
            await asyncio.to_thread(self._write, rows)

    def drain(self) -> None:
        """Write what is left (after `run` has returned)."""
        rows, self.rows = self.rows, []
        self._write(rows)


async def _serve(args: argparse.Namespace, spec, proxy_class) -> int:
    from records.record import TrialRecorder

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    config = {"verb": "link", "listen": args.listen, "forward": args.forward, "profile": str(args.profile),
              "link": spec.name, "seed": spec.seed}
    with contextlib.ExitStack() as stack:
        recorder = rows = pump = None
        if args.record is not None:
            recorder = stack.enter_context(TrialRecorder(args.record, config=config, target=args.listen, seed=spec.seed))
            rows = _RowsOffTheLoop(recorder)
        proxy = proxy_class(args.listen, args.forward, spec,
                            sink=(lambda row: rows.rows.append(row)) if rows is not None else None, speed=args.speed)
        async with proxy:
            if rows is not None:
                pump = asyncio.create_task(rows.run(stop))
            print(f"link proxy ({spec.name}): flight controller on {args.listen}, onboard side on {args.forward}",
                  flush=True)
            try:
                await stop.wait()
            finally:
                stop.set()  # also when leaving through an error
                if pump is not None:
                    await pump
        summary = proxy.summary()
        if recorder is not None:
            rows.drain()
            recorder.finish("stopped", summary=summary)
    print("link proxy stopped: " + ", ".join(f"{k} {v}" for k, v in summary.items()), flush=True)
    return 0
