"""`hil link`: the MAVLink link-impairment proxy, standalone.

Put it between a flight controller and the onboard side: the autopilot sends to `--listen`, the
companion computer (MAVSDK) receives from `--forward`. With `--record DIR` every frame's fate goes
into the "link" table of a trial record in DIR (finished on Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hil.commands.args import positive_float

if TYPE_CHECKING:  # imported where used: every `hil` command line builds this verb's parser
    import asyncio


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
    loop = precise_event_loop()
    try:
        return loop.run_until_complete(_serve(args, spec, LinkProxy))
    except (TransportError, OSError) as exc:
        print(f"hil link: {exc}", file=sys.stderr)
        return 2
    finally:
        loop.close()


class _RecordWriter:
    """The proxy's rows, written into the trial record by a child process.

    Turning rows into a parquet part holds the interpreter lock for milliseconds at a time, in a thread
    as on the event loop: with the writer in a thread of this process, every flush held back the releases
    due meanwhile (measured at 1,000 frames/s: 2-4 ms late every 0.5 s, 11 ms at the first flush). Here
    the proxy only pickles a batch onto a pipe every BATCH_S; the child converts and writes it.
    """

    BATCH_S = 0.02

    def __init__(self, record: Path, config: dict, target: str, seed: int | None) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # no copy of this process's event loop or sockets
        self.conn, child = context.Pipe()
        self.rows: list[dict] = []
        self.process = context.Process(target=_write_record, args=(child, record, config, target, seed),
                                       name="hil-link-record")
        self.process.start()
        child.close()
        try:
            kind, detail = self.conn.recv() if self.conn.poll(60) else ("error", "the record writer did not start")
        except EOFError:
            kind, detail = "error", "the record writer ended before it started"
        if kind != "ready":
            self.process.join(5)
            raise OSError(detail)

    async def run(self, stop: asyncio.Event) -> None:
        """Send a batch every BATCH_S until `stop` is set (the rows after that go with `finish`)."""
        import asyncio

        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):  # wait_for's: a class of its own on Python 3.10
                await asyncio.wait_for(stop.wait(), self.BATCH_S)
            if self.rows and not stop.is_set():
                rows, self.rows = self.rows, []
                self.conn.send(("rows", rows))

    def finish(self, outcome: str, counts: dict[str, int]) -> None:
        """The last rows, the outcome and the proxy's counters; returns once the record is finished on disk."""
        self.conn.send(("rows", self.rows))
        self.rows = []
        self.conn.send(("finish", (outcome, counts)))
        self.process.join()
        self.conn.close()


def _write_record(conn, record: Path, config: dict, target: str, seed: int | None) -> None:
    """The child: a trial record with a "link" table, fed from `conn` until the proxy says finish."""
    from hil.session import TrialSession
    from records.summary import LinkSummary

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the proxy says when to stop
    # Behind the proxy for a core: a release that wakes while the writer is busy takes the core at once.
    os.nice(10)
    with contextlib.ExitStack() as stack:  # the proxy gone without a word (killed): the record says it ended unfinished
        try:
            session = stack.enter_context(TrialSession(record, config=config, target=target, seed=seed))
        except OSError as exc:
            conn.send(("error", str(exc)))
            return
        conn.send(("ready", ""))
        while True:
            try:
                kind, payload = conn.recv()
            except EOFError:
                return
            if kind == "finish":
                outcome, counts = payload
                session.finish(outcome, LinkSummary(outcome=outcome, counts=counts))
                return
            for row in payload:
                session.recorder.append("link", row)


async def _serve(args: argparse.Namespace, spec, proxy_class) -> int:
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    config = {"verb": "link", "listen": args.listen, "forward": args.forward, "profile": str(args.profile),
              "link": spec.name, "seed": spec.seed}
    writer = pump = None
    if args.record is not None:
        writer = _RecordWriter(args.record, config, args.listen, spec.seed)
    proxy = proxy_class(args.listen, args.forward, spec,
                        sink=(lambda row: writer.rows.append(row)) if writer is not None else None, speed=args.speed)
    try:
        async with proxy:
            if writer is not None:
                pump = asyncio.create_task(writer.run(stop))
            print(f"link proxy ({spec.name}): flight controller on {args.listen}, onboard side on {args.forward}",
                  flush=True)
            try:
                await stop.wait()
            finally:
                stop.set()  # also when leaving through an error
                if pump is not None:
                    await pump
    except BaseException:
        if writer is not None:
            writer.finish("failed", proxy.summary())
        raise
    if writer is not None:
        writer.finish("stopped", proxy.summary())
    summary = proxy.summary()
    print("link proxy stopped: " + ", ".join(f"{k} {v}" for k, v in summary.items()), flush=True)
    return 0
