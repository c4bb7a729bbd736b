"""Data flows one way: every import of a package points at its own layer or a lower one.

The layer table is the one in docs/design.md ("Layers"); this test reads every import statement of
the tree (top level and inside functions) and fails naming the file, the line and the two layers.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"


def _layers() -> dict[str, int]:
    """Package -> layer, read from the design document's table so the two cannot disagree."""
    layers: dict[str, int] = {}
    for line in DESIGN.read_text().splitlines():
        row = re.match(r"\|\s*(\d+)\s*\|([^|]+)\|", line)
        if row:
            for package in re.findall(r"`(\w+)`", row.group(2)):
                layers[package] = int(row.group(1))
    return layers


def _imported_packages(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def test_the_design_document_names_every_package_of_the_tree():
    layers = _layers()
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "benchmarks"}
    assert packages <= set(layers), f"packages missing from docs/design.md's layer table: {packages - set(layers)}"


def test_no_package_imports_a_higher_layer():
    layers = _layers()
    wrong = []
    for package, layer in layers.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, imported in _imported_packages(path):
                if imported in layers and layers[imported] > layer:
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {package} (layer {layer}) imports "
                                 f"{imported} (layer {layers[imported]})")
    assert not wrong, "imports against the flow of data:\n" + "\n".join(wrong)
