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


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, type_hints: bool = False) -> set[str]:
    """Every module an import statement of `path` names when it runs, with `from M import N` also as M.N (N may
    be a module); imports for type checkers only (`if TYPE_CHECKING:`) are left out unless `type_hints`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only = set() if type_hints else {
        id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
        and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING" for n in ast.walk(block)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _import_circles(paths: list[Path], type_hints: bool = False) -> list[str]:
    """Each circle of imports between the files of one package among `paths`, as `a -> b -> a`."""
    files = {_module(p): p for p in paths}
    edges = {m: {n for n in _imported_modules(p, type_hints) if n in files and n != m
                 and n.split(".")[0] == m.split(".")[0]} for m, p in files.items()}
    circles, done = [], set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            circles.append(" -> ".join(path[path.index(module):] + [module]))
            return
        if module in done:
            return
        for imported in sorted(edges[module]):
            visit(imported, path + [module])
        done.add(module)

    for module in sorted(edges):
        visit(module, [])
    return circles


def test_no_import_circle_between_the_files_of_a_package():
    """A circle (hil.fly and hil.navigation imported each other, inside functions) means two files are one part."""
    circles = _import_circles([p for package in _layers() for p in (ROOT / package).rglob("*.py")])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_no_import_circle_between_the_files_of_the_built_in_vehicle_type_hints_included():
    """The built-in vehicle's parts (px4/sim) each own their state, so none needs another's types that needs its
    own: a circle of annotations (Link naming the mission upload that names Link) is a circle too."""
    circles = _import_circles(sorted((ROOT / "px4" / "sim").glob("*.py")), type_hints=True)
    assert not circles, "import circles in px4/sim, type hints included:\n" + "\n".join(circles)


# Where an import may wait until a function runs: the command line's dispatch (a verb loads its part only
# when it runs, so `hil --version` and `--help` answer at once), the pytest plugin (it costs a project
# nothing until a HIL option, marker or fixture is used), optional extras that may not be installed, and
# hil/__init__.py, which every command line imports and whose version() only `hil --version` asks for.
DEFERRED_IMPORTS_IN = ("hil/commands/", "hil/cli.py", "hil/pytest_plugin/", "hil/__init__.py")
OPTIONAL_EXTRAS = ("ray", "onboard.ros2", "rclpy", "cyclonedds")


def test_imports_inside_functions_only_in_the_command_line_dispatch_the_pytest_plugin_or_for_extras():
    deferred = []
    for path in sorted((ROOT / "hil").rglob("*.py")):
        if str(path.relative_to(ROOT)).startswith(DEFERRED_IMPORTS_IN):
            continue
        for function in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                    if not (module or "").startswith(OPTIONAL_EXTRAS):
                        deferred.append(f"{path.relative_to(ROOT)}:{node.lineno}: {module} imported in {function.name}")
    assert not deferred, "imports that belong at the top of their module:\n" + "\n".join(deferred)


# Reports read records; the harness below its command line and pytest plugin writes them and never reads a figure
# back: what it knows of a trial goes into the record's summary (records.summary), and reports compute the rest.
READS_REPORTS = ("hil/commands/", "hil/cli.py", "hil/pytest_plugin/")


def _hil_modules_importing_reports() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "hil").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        if not relative.startswith(READS_REPORTS):
            lines = [f"{relative}:{line}" for line, imported in _imported_packages(path) if imported == "reports"]
            if lines:
                found[relative] = lines
    return found


def test_the_harness_below_its_command_line_does_not_import_reports():
    wrong = [line for lines in _hil_modules_importing_reports().values() for line in lines]
    assert not wrong, "hil imports reports (compute figures in reports.figures, from the record):\n" + "\n".join(wrong)


def _finish_calls_with_a_mapping(path: Path) -> list[int]:
    """Lines where a session's `finish` is handed a dict display, a dict comprehension or a dict() call."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "finish"
                and "session" in ast.unparse(node.func.value)):
            continue
        handed = node.args[1:] + [keyword.value for keyword in node.keywords if keyword.arg == "summary"]
        if any(isinstance(value, (ast.Dict, ast.DictComp)) or (isinstance(value, ast.Call) and isinstance(
                value.func, ast.Name) and value.func.id == "dict") for value in handed):
            lines.append(node.lineno)
    return lines


def test_a_trial_session_is_finished_with_a_typed_summary_not_a_dict():
    from typing import get_type_hints

    from hil.session import TrialSession
    from records.summary import Summary

    assert get_type_hints(TrialSession.finish)["summary"] is Summary
    found = {}
    for path in sorted([*(ROOT / "hil").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]):
        lines = _finish_calls_with_a_mapping(path)
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert not found, f"a dict handed to session.finish (hand a records.summary dataclass): {found}"
