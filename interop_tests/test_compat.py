"""``deltalog compat`` with the real engines on golden tables and on tables made here.

docs/compat.md's example run is the first test. Every engine must run (``require``): none is
skipped, on either Spark line. delta-spark and Kernel each start one JVM per ``compare``, for
all its tables; the golden sweep runs the engines that read a hundred tables in a few minutes
(deltalog, delta-rs, Kernel) and delta-spark on a sample of them.

Only :func:`test_tables_made_here_agree_in_every_version` carries the ``spark`` mark, so the
PySpark 3.5 run (``pytest -m spark``) checks the delta-spark 3.x probe once with all four
engines; the example run, the golden sample and the write probe (several JVMs each) run on the
default line only, to keep CI's time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.compat import compare
from deltalog.compat.registry import NAMES

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT.parent / "shared" / "delta-golden"
if not GOLDEN.is_dir():
    GOLDEN = Path("/work/shared/delta-golden")
ALL = list(NAMES)
FAST = ["deltalog", "delta-rs", "kernel"]
#: Golden tables delta-spark reads in the sweep: features, checkpoints, DVs, column mapping.
SPARK_SAMPLE = [
    "basic-decimal-table",
    "basic-with-inserts-deletes-checkpoint",
    "data-reader-escaped-chars",
    "data-reader-array-complex-objects",
    "data-reader-partition-values",
    "dv-partitioned-with-checkpoint",
    "table-with-columnmapping-mode-name",
    "kernel-timestamp-partition-col-ISO8601",
]


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    """A copy of the golden tables compat.md's example names (read-only originals)."""
    out = tmp_path / "golden"
    out.mkdir()
    for name in ("basic-decimal-table", "basic-with-vacuum-protocol-check-feature"):
        shutil.copytree(GOLDEN / name, out / name)
    return out


def test_the_docs_example_run(golden: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deltalog",
            "compat",
            "golden/basic-decimal-table",
            "golden/basic-with-vacuum-protocol-check-feature",
            "--versions",
            "all",
            *(f"--require={e}" for e in ALL),
        ],
        cwd=golden.parent,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "golden/basic-with-vacuum-protocol-check-feature: AGREE (known limitations)" in out
    assert "delta-rs does not support the vacuumProtocolCheck feature" in out
    assert out.rstrip().endswith("3 of 3 table versions agree; all engines agree")
    assert "SKIPPED" not in out


def _made_tables(root: Path) -> list[str]:
    """Tables written here by deltalog and delta-rs, with every kind of value."""
    data = pa.table(
        {
            "part": pa.array(["a", "b", None, "a"]),
            "day": pa.array([date(2024, 1, 1), date(2024, 1, 2), date(2024, 1, 1), None]),
            "i": pa.array([1, -2, None, 2**40], pa.int64()),
            "f": pa.array([1.5, -0.0, float("nan"), None], pa.float64()),
            "d": pa.array(
                [Decimal("1.10"), None, Decimal("-3.25"), Decimal("0")], pa.decimal128(9, 2)
            ),
            "t": pa.array(
                [
                    datetime(2024, 1, 1, 12, tzinfo=UTC),
                    None,
                    datetime(1969, 12, 31, tzinfo=UTC),
                    datetime(2024, 6, 1, 0, 0, 0, 123456, tzinfo=UTC),
                ],
                pa.timestamp("us", "UTC"),
            ),
            "s": pa.array(["x", "", None, "ünï"]),
            "b": pa.array([b"\x00\x01", None, b"", b"z"], pa.binary()),
            "ok": pa.array([True, False, None, True]),
            "st": pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": "b"}, {"x": 2, "y": None}]),
            "l": pa.array([[1, 2], [], None, [None]], pa.list_(pa.int32())),
            "m": pa.array([[("k", 1)], None, [], [("a", None)]], pa.map_(pa.string(), pa.int32())),
        }
    )
    made = []
    written = str(root / "deltalog-types")
    deltalog.write_table(written, data, partition_by=["part", "day"])
    deltalog.write_table(written, data.slice(0, 2), mode="append")
    made.append(written)
    dv = str(root / "deltalog-dv")
    deltalog.write_table(
        dv,
        pa.table({"k": list(range(20)), "v": [str(i) for i in range(20)]}),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    deltalog.DeltaTable(dv).delete("k % 3 = 0")
    made.append(dv)
    from deltalake import write_deltalake

    rs = str(root / "delta-rs-written")
    write_deltalake(rs, data.drop_columns(["m"]), partition_by=["part"])
    write_deltalake(rs, data.drop_columns(["m"]).slice(1, 2), mode="append", partition_by=["part"])
    made.append(rs)
    return made


@pytest.mark.spark
def test_tables_made_here_agree_in_every_version(tmp_path: Path) -> None:
    report = compare(_made_tables(tmp_path), require=ALL, versions="all")
    assert [e.state for e in report.engines] == ["ran"] * 4, report.render()
    assert report.agree, report.render()
    assert len(report.tables) == 6  # 3 tables of 2 versions each


def _golden_tables() -> list[Path]:
    return sorted(p for p in GOLDEN.iterdir() if (p / "_delta_log").is_dir())


def test_every_golden_table_agrees_or_is_a_known_limitation() -> None:
    report = compare([str(p) for p in _golden_tables()], engines=FAST, require=FAST)
    assert [e.state for e in report.engines] == ["ran"] * 3, report.render()
    assert report.agree, report.render()


def test_delta_spark_agrees_on_a_sample_of_golden_tables() -> None:
    tables = [str(GOLDEN / name) for name in SPARK_SAMPLE]
    report = compare(tables, require=ALL, versions=[0])
    assert report.agree, report.render()


def test_write_probe_each_engine_appends_and_all_read_back(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    deltalog.write_table(uri, pa.table({"p": ["a", "b"], "x": [1, 2]}), partition_by="p")
    report = compare(uri, engines=["deltalog", "delta-rs", "delta-spark"], write_probe=True)
    assert report.agree, report.render()
    steps = report.write_probe[0]["steps"]
    assert [s.split(" ")[0] for s in steps if "appended" in s] == [
        "deltalog",
        "delta-rs",
        "delta-spark",
    ]
    assert deltalog.DeltaTable(uri).version() == 0  # the probe wrote on a copy
