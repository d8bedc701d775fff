"""Start-up cost of deltalog against delta-rs (``deltalake``), each in a fresh interpreter.

Every CLI command and every short script is a new process, so what it pays before doing
anything counts. Each row runs deltalog's statement and delta-rs's equivalent side by side
(interleaved, in one run) in fresh interpreters and reports medians of:

* ``in-proc``: the statement's own time, measured inside the child (no interpreter start-up);
* ``wall``: the whole process, interpreter start-up included;
* ``cpu``: the child's user + system CPU time (less sensitive to a loaded machine).

Rows: ``import``, ``from ... import DeltaTable``, open + ``version()`` of a small table written
as JSON commits only, the same after a checkpoint, and ``deltalog describe <table>`` against a
``python -c`` doing delta-rs's ``DeltaTable(p).metadata()``/``schema()``/``version()``. It
also lists which heavy packages ``import deltalog`` and open + ``version()`` loaded (they
should load none: no pyarrow until a table's files are needed).

    python benchmarks/bench_import.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("pandas", "pyspark", "boto3", "botocore", "azure", "google", "numpy", "pyarrow")
_TIMED = "import time; _t = time.perf_counter(); {body}; print(time.perf_counter() - _t)"


def _rows(json_table: str, checkpointed: str) -> list[tuple[str, list[str], list[str]]]:
    """``(name, deltalog argv, deltalake argv)`` per row."""
    py = sys.executable

    def timed(body: str) -> list[str]:
        return [py, "-c", _TIMED.format(body=body)]

    def open_version(module: str, path: str) -> str:
        return f"from {module} import DeltaTable; DeltaTable({path!r}).version()"

    describe_rs = (
        "from deltalake import DeltaTable; t = DeltaTable({p!r}); "
        "print(t.version(), t.metadata(), t.schema())"
    )
    return [
        ("import", timed("import deltalog"), timed("import deltalake")),
        (
            "from ... import DeltaTable",
            timed("from deltalog import DeltaTable"),
            timed("from deltalake import DeltaTable"),
        ),
        (
            "open + version() (JSON commits)",
            timed(open_version("deltalog", json_table)),
            timed(open_version("deltalake", json_table)),
        ),
        (
            "open + version() (checkpoint)",
            timed(open_version("deltalog", checkpointed)),
            timed(open_version("deltalake", checkpointed)),
        ),
        (
            "describe (JSON commits)",
            [py, "-m", "deltalog", "describe", json_table],
            [py, "-c", describe_rs.format(p=json_table)],
        ),
    ]


def _run(argv: list[str]) -> tuple[float, float, float | None]:
    """Wall seconds, CPU seconds and the in-process seconds the child printed (if timed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    inproc = float(done.stdout.strip()) if argv[1] == "-c" and "_t =" in argv[2] else None
    return wall, cpu, inproc


def _tables(root: Path) -> tuple[str, str]:
    """A small table of JSON commits only, and one whose latest version is a checkpoint."""
    import pyarrow as pa

    from deltalog import DeltaTable, write_table

    json_table, checkpointed = str(root / "json"), str(root / "checkpointed")
    for path in (json_table, checkpointed):
        write_table(path, pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
        write_table(path, pa.table({"id": [4], "name": ["d"]}), mode="append")
    DeltaTable(checkpointed).checkpoint()
    return json_table, checkpointed


def _loaded(statement: str) -> str:
    names = "{m.split('.')[0] for m in sys.modules}"
    code = f"{statement}; import sys; print(sorted({names} & set({HEAVY!r})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env_note = (
        ""
        if os.environ.get("PYTHONDONTWRITEBYTECODE") is None
        else " (PYTHONDONTWRITEBYTECODE dropped for the children)"
    )
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # a real install has .pyc files
    with tempfile.TemporaryDirectory() as tmp:
        json_table, checkpointed = _tables(Path(tmp))
        rows = _rows(json_table, checkpointed)
        for _, ours, theirs in rows:  # write the .pyc files and warm the page cache
            _run(ours)
            _run(theirs)
        load = os.getloadavg()
        results: dict[str, dict[str, list[tuple[float, float, float | None]]]] = {
            name: {"deltalog": [], "deltalake": []} for name, _, _ in rows
        }
        for _ in range(args.runs):
            for name, ours, theirs in rows:
                results[name]["deltalog"].append(_run(ours))
                results[name]["deltalake"].append(_run(theirs))
        loaded = {
            "import deltalog": _loaded("import deltalog"),
            "open + version() (JSON commits)": _loaded(
                f"from deltalog import DeltaTable; DeltaTable({json_table!r}).version()"
            ),
        }
    end_load = os.getloadavg()
    print(
        f"{args.runs} runs, medians in ms; load average {load[0]:.2f} -> {end_load[0]:.2f}"
        f"{env_note}"
    )
    header = f"{'row':34} {'':9} {'in-proc':>8} {'wall':>8} {'cpu':>8}"
    print(header)
    for name, _, _ in rows:
        medians = {}
        for who in ("deltalog", "deltalake"):
            got = results[name][who]
            inproc = [i for _, _, i in got if i is not None]
            medians[who] = (
                _ms([i for i in inproc]) if inproc else None,
                _ms([w for w, _, _ in got]),
                _ms([c for _, c, _ in got]),
            )
            shown = "-" if medians[who][0] is None else f"{medians[who][0]:.1f}"
            label = name if who == "deltalog" else ""
            print(f"{label:34} {who:9} {shown:>8} {medians[who][1]:8.1f} {medians[who][2]:8.1f}")
        ratios = [
            "-" if a is None or b is None else f"{a / b:.2f}x"
            for a, b in zip(medians["deltalog"], medians["deltalake"], strict=True)
        ]
        print(f"{'':34} {'ratio':9} {ratios[0]:>8} {ratios[1]:>8} {ratios[2]:>8}")
    for what, packages in loaded.items():
        print(f"heavy packages loaded by {what!r}: {packages}")


if __name__ == "__main__":
    main()
