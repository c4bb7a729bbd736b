"""One trial session (hil.session): the one place in the harness that opens a target or a trial record and
finishes it, so that every entry point records, stops and finishes alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = "hil/session.py"


def _calls(path: Path) -> list[tuple[int, str]]:
    """(line, what) for every call that opens a target, opens a trial record or finishes one."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if name in ("open_target", "TrialRecorder"):
            found.append((node.lineno, name))
        elif name == "finish" and isinstance(node.func, ast.Attribute) and "recorder" in ast.unparse(node.func.value):
            found.append((node.lineno, "recorder.finish"))
    return found


def test_only_the_session_opens_targets_and_records_and_finishes_them():
    elsewhere = []
    for path in sorted((ROOT / "hil").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        if relative == SESSION:
            continue
        elsewhere += [f"{relative}:{line}: {what}" for line, what in _calls(path)]
    assert not elsewhere, "outside the trial session (hil.session.TrialSession):\n" + "\n".join(elsewhere)

