"""The package's structure: floors, no import circles, small modules.

``deltalog/`` is built in floors (``../shared/DESIGN.md``); a module may import from its own
floor's package or from lower floors, never from higher ones, and no set of modules imports
itself in a circle (lazy imports inside functions included). ``logstores`` knows nothing of
Delta; ``checkpoints`` knows only a log store. These tests read the source with ``ast``, so
they see what any reader of the code sees, without importing anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "deltalog"
MAX_LINES = 800

#: Top-level part of ``deltalog`` -> floor. A module imports only from floors <= its own, and
#: from its own floor only within its own part (``write`` and ``check`` share floor 4 but
#: neither imports the other).
FLOORS: dict[str, int] = {
    "logstores": 0,
    "lazy": 0,
    "checkpoints": 1,
    "errors": 2,
    "worker_pool": 2,
    "arrow": 2,
    "units": 2,
    "protocol": 3,
    "stats": 4,
    "log": 5,
    "write": 6,
    "read": 6,
    "check": 6,
    "maintenance": 7,
    "dml": 8,
    "table": 9,
    "writer": 10,
    "spark": 11,
    "report": 11,
    "compat": 11,
    "cli": 12,
    "__main__": 13,
}
#: Parts that may import each other on one floor: none.
SAME_FLOOR_ALLOWED: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    """Every module of the installed package: ``logstores/`` and ``checkpoints/`` sit at the
    repository's top level and install as ``deltalog.logstores`` / ``deltalog.checkpoints``."""
    found = {}
    for folder, prefix in (
        (PACKAGE, ("deltalog",)),
        *((ROOT / sub, ("deltalog", sub)) for sub in ("logstores", "checkpoints")),
    ):
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts or path.is_relative_to(PACKAGE / "logstores"):
                continue
            if path.is_relative_to(PACKAGE / "checkpoints"):
                continue
            parts = (*prefix, *path.relative_to(folder).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every ``deltalog`` module the file imports, anywhere in it (type-only imports too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                if path.name != "__init__.py":
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name and target != "deltalog":
                out.add(target)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_part_has_a_floor() -> None:
    unknown = {_part(m) for m in MODULES} - set(FLOORS) - {"__init__"}
    assert not unknown, f"give these parts of deltalog a floor in FLOORS: {sorted(unknown)}"


def test_imports_only_point_down() -> None:
    wrong = []
    for module, targets in GRAPH.items():
        mine = _part(module)
        if mine == "__init__":
            continue
        for target in sorted(targets):
            theirs = _part(target)
            if theirs == mine:
                continue
            if FLOORS[theirs] > FLOORS[mine] or (
                FLOORS[theirs] == FLOORS[mine] and (mine, theirs) not in SAME_FLOOR_ALLOWED
            ):
                wrong.append(
                    f"{module} (floor {FLOORS[mine]}) -> {target} (floor {FLOORS[theirs]})"
                )
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(wrong)


def test_no_import_circles() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert not circles, f"import circles: {circles}"


def test_logstores_know_nothing_of_delta() -> None:
    wrong = {
        m: sorted(t for t in targets if not t.startswith("deltalog.logstores"))
        for m, targets in GRAPH.items()
        if m.startswith("deltalog.logstores")
    }
    assert not {m: t for m, t in wrong.items() if t}


def test_checkpoints_know_only_a_store() -> None:
    allowed = ("deltalog.checkpoints", "deltalog.logstores")
    wrong = {
        m: sorted(t for t in targets if not t.startswith(allowed))
        for m, targets in GRAPH.items()
        if m.startswith("deltalog.checkpoints")
    }
    assert not {m: t for m, t in wrong.items() if t}


@pytest.mark.parametrize("folder", ["deltalog", "logstores", "checkpoints", "benchmarks"])
def test_no_module_over_800_lines(folder: str) -> None:
    big = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / folder).rglob("*.py"))
        if "__pycache__" not in p.parts and (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not big, f"split these by concept (over {MAX_LINES} lines): {big}"


def test_every_package_says_what_lives_there() -> None:
    bare = [
        str(p.relative_to(ROOT))
        for p in sorted(PACKAGE.rglob("__init__.py"))
        if "__pycache__" not in p.parts and not ast.get_docstring(ast.parse(p.read_text()))
    ]
    assert not bare, f"packages without a docstring: {bare}"


def test_moved_modules_keep_their_old_names() -> None:
    """``import deltalog.<old>`` (0.1's flat layout) gives the moved module, with a warning."""
    import importlib
    import subprocess
    import sys

    import deltalog

    for old, new in deltalog._MOVED.items():
        assert (PACKAGE / (new.replace(".", "/") + ".py")).is_file(), (old, new)
    code = (
        "import warnings, deltalog\n"
        "warnings.simplefilter('error')\n"
        "try:\n"
        "    import deltalog.column_mapping\n"
        "except DeprecationWarning as w:\n"
        "    print('warned', w)\n"
        "warnings.simplefilter('ignore')\n"
        "import deltalog.column_mapping as old, deltalog.protocol.column_mapping as new\n"
        "from deltalog.predicates import col\n"
        "print(old is new, callable(old.to_physical_batch), col('a') is not None)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert "warned deltalog.column_mapping moved to deltalog.protocol.column_mapping" in out
    assert out.strip().endswith("True True True")
    assert importlib.import_module("deltalog.commit") is importlib.import_module(
        "deltalog.write.commit"
    )
