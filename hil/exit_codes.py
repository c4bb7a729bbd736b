"""The `hil` command's exit codes, the same for every verb, so that scripts and CI can tell a failed
flight from a refusal and from a broken set-up without reading the output."""

from __future__ import annotations

OK = 0  # success, or a dry run whose checks all passed
FAILED = 1  # the flight ran and did not succeed: timeout, failsafe, breach, collision, pilot takeover, link lost, aborted
USAGE = 2  # a bad command line or input file: nothing was started
REFUSED = 3  # a safety gate refused to fly: the vehicle already armed or flying, a failed pre-flight check
ERROR = 4  # the infrastructure failed: no autopilot answered, PX4 or the simulator died, agent lost, disk full or read-only
INTERRUPTED = 130  # Ctrl-C before the verb could handle it (128 + SIGINT, as shells count)

_BY_OUTCOME = {"success": OK, "dry_run": OK, "refused": REFUSED, "preflight_failed": REFUSED, "error": ERROR,
               "onboard_lost": ERROR}

HELP = """exit codes (every verb):
  0  success (or a dry run whose checks passed)     3  refused by a safety gate (already flying, pre-flight check)
  1  the flight failed (timeout, failsafe, breach)  4  infrastructure error (no autopilot answered, PX4 died,
  2  bad command line or input file                    disk full or read-only)
                                                    130  interrupted (Ctrl-C)"""


def for_outcome(outcome: str) -> int:
    """The exit code of a flight that ended with `outcome` (a trial record's outcome)."""
    return _BY_OUTCOME.get(outcome, FAILED)
