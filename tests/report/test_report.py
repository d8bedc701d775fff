"""``deltalog report``: the page's numbers, read back from it, equal history() and files().

The page is parsed as a browser would see it (its ``data-*`` attributes); each number is
compared with what the public API gives on the same table, computed here independently
(commit files read line by line, sizes binned in Python).
"""

from __future__ import annotations

import os
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pageparse import having, number

from deltalog import DeltaTable
from deltalog.check import check_table
from deltalog.cli import main
from deltalog.report import build_report, render_html
from deltalog.report.files import SIZE_BOUNDS

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "delta-golden"


def _parquet(root: Path, relative: str, rows: int, seed: int) -> str:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = pa.array(range(seed, seed + rows), pa.int64())
    text = pa.array([f"row-{seed}-{i:08d}-" + "x" * (i % 50) for i in range(rows)])
    pq.write_table(pa.table({"id": ids, "note": text}), path, compression="none")
    return relative


def build_table(root: Path) -> str:
    """A partitioned table: files of many sizes, appends, a replaced partition, checkpoints."""
    schema = pa.schema([("id", pa.int64()), ("note", pa.string()), ("region", pa.string())])
    t = DeltaTable.create(
        str(root),
        schema,
        partition_by=["region"],
        configuration={"delta.checkpointInterval": "4"},
        name="events",
    )
    sizes = [1, 40, 300, 2_000, 9_000, 12, 60]
    for i, rows in enumerate(sizes):
        region = ["eu", "us", "eu", "apac", "eu", "us", "eu"][i]
        t.append_files([_parquet(root, f"region={region}/part-{i}.parquet", rows, i * 100_000)])
    t.overwrite_files(
        [_parquet(root, "region=us/compacted.parquet", 52, 7_000_000)], predicate="region = 'us'"
    )
    t.wait_for_checkpoints(timeout=60)
    return str(root)


@pytest.fixture
def table_uri(tmp_path: Path) -> str:
    return build_table(tmp_path / "events")


@pytest.fixture
def dv_table(tmp_path: Path) -> str:
    source = GOLDEN / "dv-partitioned-with-checkpoint"
    if not source.is_dir():
        pytest.skip("golden tables are not available")
    target = tmp_path / "dv"
    shutil.copytree(source, target)
    return str(target)


def _actions(uri: str, version: int) -> list[dict[str, object]]:
    path = Path(uri) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _page(uri: str, **options: object) -> str:
    return render_html(build_report(uri, **options))  # type: ignore[arg-type]


@pytest.mark.parametrize("which", ["deltalog", "delta-spark-dv"])
def test_timeline_equals_history_and_the_commits(
    which: str, request: pytest.FixtureRequest
) -> None:
    uri = request.getfixturevalue("table_uri" if which == "deltalog" else "dv_table")
    page = _page(uri)
    rows = having(page, cls="commit")
    history = DeltaTable(uri).history()
    assert [number(r["data-version"]) for r in rows] == [h["version"] for h in history]
    for row, entry in zip(rows, history, strict=True):
        version = entry["version"]
        assert number(row["data-timestamp"]) == entry["timestamp"]
        assert row["data-operation"] == entry["operation"]
        assert row["data-engine"] == entry.get("engineInfo", "-")
        actions = _actions(uri, version)
        adds = [a["add"] for a in actions if "add" in a]
        removes = [a["remove"] for a in actions if "remove" in a]
        assert number(row["data-files-added"]) == len(adds)
        assert number(row["data-bytes-added"]) == sum(int(a["size"]) for a in adds)
        assert number(row["data-files-removed"]) == len(removes)
        assert number(row["data-bytes-removed"]) == sum(int(r.get("size") or 0) for r in removes)
        assert number(row["data-dv-added"]) == sum(
            a.get("deletionVector") is not None for a in adds
        )
        metrics = entry.get("operationMetrics") or {}
        if entry["operation"] == "WRITE":  # the writer's own account agrees
            assert number(row["data-files-added"]) == int(metrics["numFiles"])
            assert number(row["data-files-removed"]) == int(metrics.get("numRemovedFiles", 0))
            assert number(row["data-rows"]) == int(metrics["numOutputRows"])
            if "numOutputBytes" in metrics:
                assert number(row["data-bytes-added"]) == int(metrics["numOutputBytes"])
        # Each commit has its bars in both charts.
        bars = [e for e in having(page, cls="column") if e.get("data-version") == str(version)]
        assert len(bars) == 2
    engines = Counter(h.get("engineInfo", "-") for h in history)
    writers = {w["data-engine"]: number(w["data-commits"]) for w in having(page, cls="writer")}
    assert writers == dict(engines)


def test_timeline_limit_shows_the_newest_commits(table_uri: str) -> None:
    page = _page(table_uri, commits=3)
    versions = [number(r["data-version"]) for r in having(page, cls="commit")]
    assert versions == [h["version"] for h in DeltaTable(table_uri).history(3)]
    (summary,) = [c for c in having(page, cls="card") if "data-commits" in c]
    assert number(summary["data-commits"]) == len(DeltaTable(table_uri).history())


@pytest.mark.parametrize("which", ["deltalog", "delta-spark-dv"])
def test_files_panels_equal_files(which: str, request: pytest.FixtureRequest) -> None:
    uri = request.getfixturevalue("table_uri" if which == "deltalog" else "dv_table")
    small = 4096
    page = _page(uri, small_file_size_bytes=small)
    table = DeltaTable(uri)
    files = table.files(flatten_stats=True).to_pylist()
    sizes = [f["size"] for f in files]
    cards = {k: v for c in having(page, cls="card") for k, v in c.items() if k.startswith("data-")}
    assert number(cards["data-version"]) == table.version()
    assert number(cards["data-num-files"]) == len(files)
    assert number(cards["data-total-bytes"]) == sum(sizes)
    assert number(cards["data-rows"]) == sum(f["num_records"] or 0 for f in files)
    assert number(cards["data-small-files"]) == sum(s < small for s in sizes)
    # Histogram: every file in exactly one bin, bins as the bounds say.
    bins = having(page, cls="bin")
    assert len(bins) == len(SIZE_BOUNDS) + 1
    for b in bins:
        low, high = number(b["data-low"]), number(b.get("data-high"))
        assert low is not None
        inside = [s for s in sizes if s >= low and (high is None or s < high)]
        assert number(b["data-files"]) == len(inside)
        assert number(b["data-bytes"]) == sum(inside)
    assert sum(number(b["data-files"]) or 0 for b in bins) == len(files)
    # Partitions: files, bytes and rows per partition.
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for f in files:
        key = ",".join(f"{k}={v}" for k, v in dict(f["partition_values"]).items())
        expected[key][0] += 1
        expected[key][1] += f["size"]
        expected[key][2] += f["num_records"]
    shown = {
        r["data-values"]: [number(r["data-files"]), number(r["data-bytes"]), number(r["data-rows"])]
        for r in having(page, cls="row")
    }
    assert shown == dict(expected)
    assert number(cards["data-partitions"]) == len(expected)
    # Deletion vectors.
    with_dv = [f for f in files if f["deletion_vector"] is not None]
    assert number(cards["data-dv-files"]) == len(with_dv)
    (dv,) = having(page, id="deletion-vectors")
    assert number(dv["data-dv-rows-deleted"]) == sum(
        f["deletion_vector"]["cardinality"] for f in with_dv
    )
    if which == "delta-spark-dv":
        assert with_dv  # the golden table has some


def test_health_panels(table_uri: str) -> None:
    page = _page(table_uri, now_ms=2**62)  # far in the future: every retention has passed
    (cp,) = having(page, id="checkpoints")
    table = DeltaTable(table_uri)
    assert number(cp["data-checkpoint-version"]) == 8  # interval 4, version 8
    assert number(cp["data-commits-to-replay"]) == table.version() - 8
    assert cp["data-ok"] == "True"
    (retention,) = having(page, id="retention")
    tombstones = table.snapshot.tombstones
    assert number(retention["data-tombstones"]) == tombstones.num_rows == 2
    assert number(retention["data-vacuumable-files"]) == 2
    assert retention["data-ok"] == "False"  # VACUUM could delete them


def test_checkpoint_health_warns_without_checkpoints(tmp_path: Path) -> None:
    t = DeltaTable.create(
        str(tmp_path),
        pa.schema([("id", pa.int64()), ("note", pa.string())]),
        configuration={"delta.checkpointInterval": "2"},
    )
    for i in range(5):
        t.append_files([_parquet(tmp_path, f"f{i}.parquet", 1, i)])
    t.wait_for_checkpoints(timeout=60)
    for name in os.listdir(tmp_path / "_delta_log"):  # as if no writer ever checkpointed
        if "checkpoint" in name:
            (tmp_path / "_delta_log" / name).unlink()
    report = build_report(str(tmp_path), check=False)
    assert report.checkpoints.checkpoint_version is None
    assert report.checkpoints.warnings and "no checkpoint" in report.checkpoints.warnings[0]
    (cp,) = having(render_html(report), id="checkpoints")
    assert cp["data-ok"] == "False" and number(cp["data-commits-to-replay"]) == 6


def test_findings_are_check_s(table_uri: str) -> None:
    (Path(table_uri) / "region=apac" / "part-3.parquet").unlink()  # a live file is gone
    page = _page(table_uri)
    report = check_table(table_uri)
    shown = [(f["data-severity"], f["data-code"]) for f in having(page, cls="finding")]
    assert shown == [(f.severity, f.code) for f in report.findings]
    assert ("error", "missing_data_file") in shown or any(s == "error" for s, _ in shown)
    (card,) = [c for c in having(page, cls="card") if "data-errors" in c]
    assert number(card["data-errors"]) == len(report.errors) >= 1


def test_the_page_is_self_contained(table_uri: str) -> None:
    page = _page(table_uri)
    lowered = page.lower()
    assert "<script" not in lowered and "src=" not in lowered and "href=" not in lowered
    assert "url(" not in lowered and "@import" not in lowered and "http://" not in lowered
    assert "https://" not in lowered
    assert "content-security-policy" in lowered and "default-src 'none'" in page
    assert page.count("<svg") >= 4


def test_hostile_names_are_escaped(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = DeltaTable.create(
        str(root),
        pa.schema([("id", pa.int64()), ("note", pa.string()), ("p", pa.string())]),
        partition_by=["p"],
        name="<script>alert(1)</script>",
    )
    t.append_files([_parquet(root, "p=%3Cimg%20src%3Dx%3E/f.parquet", 1, 0)])
    page = _page(str(root))
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;" in page and "&lt;img src=x&gt;" in page


def test_cli_report_writes_the_page_and_json(
    table_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    assert main(["report", table_uri, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out} (") and "check: 0 errors, 0 warnings" in printed
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert main(["report", table_uri, "--json", "--no-check"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["check"] is None
    assert [c["version"] for c in doc["commits"]] == sorted(
        number(r["data-version"]) or 0 for r in having(page, cls="commit")
    )
    assert doc["files"]["num_files"] == DeltaTable(table_uri).files().num_rows
    assert main(["report", table_uri, "--commits", "0"]) == 2
    assert "commits must be a positive integer" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "x.html")]) == 2
    assert not (tmp_path / "x.html").exists()


def test_the_docs_example_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "examples" / "report_example.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {tmp_path / 'report.html'}: 3 files, 4 commits" in proc.stdout
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    page = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text()
    assert script.read_text().split('"""', 2)[2].strip() in page  # the page shows this script


def test_the_docs_commands_run(tmp_path: Path) -> None:
    """docs/report.md's shell block, run as written in a directory holding ``events``."""
    from docsnippets import blocks, run_shell, shell_environment

    page = Path(__file__).resolve().parents[2] / "docs" / "report.md"
    (example,) = [b for b in blocks(page) if b.tested_by == "tests/report/test_report.py"]
    work = tmp_path / "work"
    build_table(work / "events")
    done = run_shell(example.code, work, shell_environment(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (work / "events.html").read_text().startswith("<!DOCTYPE html>")
    assert (work / "report.html").read_text().startswith("<!DOCTYPE html>")  # --no-check
    shown = orjson.loads((work / "events.json").read_bytes())
    assert shown["files"]["num_files"] == DeltaTable(str(work / "events")).files().num_rows
