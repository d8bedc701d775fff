"""``deltalog check``: every finding on a damaged table, none on sound ones (issue 7).

Most tests build a real table (``DeltaTable.create``, Parquet files written with pyarrow,
appends and an overwrite, a checkpoint every two versions), assert that it checks clean, damage
it the way the problem arises in practice, and assert the one finding the damage must produce:
its code, severity, version and path, the CLI's exit status, and its ``--json`` document.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import time
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import CloudTable
from tableutil import log_names, write_append_log, write_commit, write_parquet
from testpaths import GOLDEN_DIR

from deltalog import DeltaTable, check_table
from deltalog.check import CODES, CheckReport, Finding, check_storage
from deltalog.checkpoints.writer import write_checkpoint
from deltalog.cli import main
from deltalog.errors import TableNotFoundError
from deltalog.log.storage import TableStorage
from deltalog.logstores import LocalLogStore, open_store
from deltalog.maintenance.checkpointing import checkpoint_content

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("x", pa.float64()),
        ("p", pa.string()),
    ]
)
ORPHANS = {"orphan-file", "orphan-log-file"}

# tests/ and interop_tests/ both have a conftest module: name the golden tables directly.
GOLDEN_DIR = GOLDEN_DIR


def _data(start: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([start, start + 1], pa.int64()),
            "name": [f"n{start}", None],
            "ts": pa.array([start * 1_000_000, None], pa.timestamp("us", tz="UTC")),
            "x": [float("nan"), 1.5],
        }
    )


def _make(root: Path) -> DeltaTable:
    """Version 0 create; 1, 2 appends; 3 overwrites p=a; 4 appends; checkpoints at 2 and 4."""
    table = DeltaTable.create(
        str(root), SCHEMA, partition_by=["p"], configuration={"delta.checkpointInterval": "2"}
    )
    table.append_files(
        [
            write_parquet(root, "p=a/f0.parquet", _data(0)),
            write_parquet(root, "p=a/f1.parquet", _data(10)),
        ]
    )
    table.append_files([write_parquet(root, "p=b c%/g.parquet", _data(20))])
    table.overwrite_files([write_parquet(root, "p=a/h.parquet", _data(30))], where={"p": "a"})
    table.append_files([write_parquet(root, "p=z/k.parquet", _data(40))])
    assert table.wait_for_checkpoints(timeout=60)
    return table


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


def _log(root: Path, name: str) -> Path:
    return root / "_delta_log" / name


def _commit_name(version: int) -> str:
    return f"{version:020d}.json"


def _where(root: Path, version: int) -> str:
    """Finding.path of a commit-level finding in ``version``."""
    return str(_log(root, _commit_name(version)))


def _commit(root: Path, version: int, *actions: dict[str, Any]) -> None:
    info = {"commitInfo": {"timestamp": 1, "operation": "MANUAL"}}
    write_commit(root, version, [orjson.dumps(a) for a in (info, *actions)])


def _add(
    root: Path | None,
    path: str,
    stats: str | None = None,
    values: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """An add action (partition p=a by default); with ``root``, for a real Parquet file."""
    size = 1
    if root is not None:
        write_parquet(root, path, _data(99))
        size = os.path.getsize(root / path)
    add: dict[str, Any] = {
        "path": path,
        "partitionValues": {"p": "a"} if values is None else values,
        "size": size,
        "modificationTime": 1,
        "dataChange": True,
    }
    if stats is not None:
        add["stats"] = stats
    return {"add": add}


def _remove(path: str) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": 1, "dataChange": True}}


def assert_clean(uri: str, options: dict[str, str] | None = None) -> CheckReport:
    """No errors, no warnings, only orphan infos; the CLI exits 0 (also with --fail-on warning)."""
    report = check_table(uri, options)
    assert report.clean, report.findings
    assert report.codes() <= ORPHANS, report.findings
    opts = [arg for k, v in (options or {}).items() for arg in ("-o", f"{k}={v}")]
    assert _cli("check", uri, "--fail-on", "warning", *opts)[0] == 0
    return report


def flagged(
    uri: str | Path,
    code: str,
    *,
    version: int | None,
    path: str | None,
    options: dict[str, str] | None = None,
    data_files: bool = True,
) -> Finding:
    """The finding ``code`` for ``version`` and ``path``, checked through the API and the CLI."""
    uri = str(uri)
    report = check_table(uri, options, data_files=data_files)
    hits = [f for f in report.findings if f.code == code]
    assert hits, f"no {code}: {report.findings}"
    match = [f for f in hits if f.version == version and f.path == path]
    assert match, f"no {code} at version {version}, path {path}: {hits}"
    finding = match[0]
    severity = CODES[code][0]
    assert finding.severity == severity
    assert finding in getattr(report, severity + "s")
    assert report.ok is (not report.errors)
    opts = [arg for k, v in (options or {}).items() for arg in ("-o", f"{k}={v}")]
    if not data_files:
        opts.append("--no-data-files")
    status, out = _cli("check", uri, "--json", *opts)
    assert status == report.exit_code() == (3 if report.errors else 0)
    doc = orjson.loads(out)
    assert doc["ok"] is report.ok
    assert finding.to_json() in doc["findings"]
    assert {"code": code, "severity": severity, "version": version, "path": path}.items() <= (
        finding.to_json().items()
    )
    if severity != "error":
        fail_on = severity
        assert _cli("check", uri, "--fail-on", fail_on, *opts)[0] == 3
    return finding


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("check") / "t"
    _make(root)
    return root


@pytest.fixture
def table(template: Path, tmp_path: Path) -> Path:
    """A real table (a copy of one built once) that checks clean, so every damage test can fail."""
    root = tmp_path / "t"
    shutil.copytree(template, root)
    assert {"00000000000000000002.checkpoint.parquet", "_last_checkpoint"} <= set(log_names(root))
    report = assert_clean(str(root))
    assert report.version == 4
    assert report.checked["live_files"] == 3
    assert report.checked["checkpoints"] == 2
    return root


# ------------------------------------------------------------------ issue 7 acceptance


def test_version_gap(table: Path) -> None:
    _log(table, _commit_name(3)).unlink()
    f = flagged(table, "version-gap", version=3, path=_where(table, 3))
    assert "version 3 missing" in f.message


def test_duplicate_add(table: Path) -> None:
    add = _add(table, "p=a/twice.parquet")
    _commit(table, 5, add, add)
    f = flagged(table, "duplicate-add", version=5, path=_where(table, 5))
    assert "p=a/twice.parquet" in f.message


def test_checkpoint_of_an_older_state_under_a_newer_name(table: Path) -> None:
    """Checkpoint 4 replaced by one holding version 2's state (as a buggy writer would)."""
    content = checkpoint_content(DeltaTable(str(table), version=2).snapshot)
    content.version = 4
    _log(table, "00000000000000000004.checkpoint.parquet").unlink()
    write_checkpoint(LocalLogStore(), str(table / "_delta_log"), content)
    flagged(table, "checkpoint-mismatch", version=4, path="p=a/f0.parquet")  # not live
    flagged(table, "checkpoint-mismatch", version=4, path="p=a/h.parquet")  # live, lacking
    flagged(table, "checkpoint-mismatch", version=4, path="p=z/k.parquet")
    report = check_table(str(table))
    assert report.codes() - ORPHANS == {"checkpoint-mismatch", "last-checkpoint-mismatch"}


def test_checkpoint_missing_an_add_row(table: Path) -> None:
    cp = _log(table, "00000000000000000004.checkpoint.parquet")
    rows = pq.read_table(cp)
    kept = [r for r in rows.to_pylist() if (r["add"] or {}).get("path") != "p=z/k.parquet"]
    assert len(kept) == rows.num_rows - 1
    pq.write_table(pa.Table.from_pylist(kept, schema=rows.schema), cp)
    f = flagged(table, "checkpoint-mismatch", version=4, path="p=z/k.parquet")
    assert "lacks live file" in f.message


def test_missing_data_file(table: Path) -> None:
    (table / "p=z" / "k.parquet").unlink()
    f = flagged(table, "missing-file", version=4, path=str(table / "p=z" / "k.parquet"))
    assert "added in version 4" in f.message
    assert check_table(str(table), data_files=False).clean  # --no-data-files skips it


@pytest.mark.parametrize(
    ("stats", "problem"),
    [
        ('{"numRecords": 2, "minValues": {"id": 1', "not JSON"),
        ('{"numRecords": "ten"}', "numRecords"),
        ('{"numRecords": 2, "minValues": {"id": "one"}, "maxValues": {"id": 5}}', "'id'"),
        ('{"numRecords": 2, "minValues": {"id": 9}, "maxValues": {"id": 1}}', "above maxValues"),
        ('{"numRecords": 2, "nullCount": {"name": 3}}', "more than numRecords"),
        ('{"numRecords": 2, "minValues": {"ts": "2024-01-01T00:00:00"}}', "'ts'"),
        ('{"numRecords": 2, "maxValues": {"x": "big"}}', "'x'"),
        ('{"numRecords": 2, "tightBounds": "yes"}', "tightBounds"),
    ],
    ids=[
        "not-json",
        "numRecords-ten",
        "int-min-string",
        "min-above-max",
        "nulls",
        "ts-no-zone",
        "double-word",
        "tightBounds",
    ],
)
def test_bad_stats(table: Path, stats: str, problem: str) -> None:
    _commit(table, 5, _add(table, "p=a/s.parquet", stats))
    f = flagged(table, "bad-stats", version=5, path="p=a/s.parquet")
    assert problem in f.message


# ------------------------------------------------------------------ the other codes


def test_missing_history(tmp_path: Path) -> None:
    table = DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["p"])
    table.append_files([write_parquet(tmp_path, "p=a/f.parquet", _data(0))])
    assert_clean(str(tmp_path))
    _log(tmp_path, _commit_name(0)).unlink()
    flagged(tmp_path, "missing-history", version=0, path=_where(tmp_path, 0))


def test_malformed_commit(table: Path) -> None:
    write_commit(table, 5, [b'{"commitInfo":{}}', b'{"add": {"path": "p=a/x.parquet"'])
    flagged(table, "malformed-commit", version=5, path=_where(table, 5))


@pytest.mark.parametrize("kind", ["metaData", "protocol"])
def test_two_metadata_or_protocol_actions(table: Path, kind: str) -> None:
    line = next(
        orjson.loads(raw)
        for raw in _log(table, _commit_name(0)).read_bytes().splitlines()
        if kind.encode() in raw
    )
    _commit(table, 5, line, line)
    code = "multiple-metadata" if kind == "metaData" else "multiple-protocol"
    flagged(table, code, version=5, path=_where(table, 5))


def test_add_and_remove_of_one_path_in_one_commit(table: Path) -> None:
    add = _add(table, "p=z/k.parquet", values={"p": "z"})
    _commit(table, 5, _remove("p=z/k.parquet"), add)
    f = flagged(table, "duplicate-file-action", version=5, path=_where(table, 5))
    assert "p=z/k.parquet" in f.message


def test_remove_of_a_file_that_is_not_live(table: Path) -> None:
    _commit(table, 5, _remove("p=a/f0.parquet"))  # removed in version 3 already
    flagged(table, "remove-of-missing-file", version=5, path=_where(table, 5))
    report = check_table(str(table))
    assert report.ok and not report.clean
    assert _cli("check", str(table))[0] == 0
    assert _cli("check", str(table), "--fail-on", "warning")[0] == 3


@pytest.mark.parametrize(
    ("values", "problem"),
    [({"q": "1"}, "partitioned by ['p']"), ({}, "partitioned by ['p']")],
    ids=["wrong-column", "none"],
)
def test_bad_partition_values(table: Path, values: dict[str, str], problem: str) -> None:
    add = _add(table, "p=a/v.parquet")
    add["add"]["partitionValues"] = values
    _commit(table, 5, add)
    f = flagged(table, "bad-partition-values", version=5, path="p=a/v.parquet")
    assert problem in f.message


@pytest.mark.parametrize("value", ["x", "1.5", "99999999999"])
def test_partition_value_of_the_wrong_type(tmp_path: Path, value: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32())])
    DeltaTable.create(str(tmp_path), schema, partition_by=["n"])
    _commit(tmp_path, 1, _add(None, "n=1/a.parquet", values={"n": value}))
    flagged(tmp_path, "bad-partition-values", version=1, path="n=1/a.parquet", data_files=False)


def test_unsupported_reader_feature(table: Path) -> None:
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["teleportation"],
        "writerFeatures": ["teleportation"],
    }
    _commit(table, 5, {"protocol": protocol})
    f = flagged(table, "unsupported-reader-feature", version=5, path=_where(table, 5))
    assert "teleportation" in f.message
    flagged(table, "unsupported-writer-feature", version=5, path=_where(table, 5))


def test_size_mismatch(table: Path) -> None:
    path = table / "p=z" / "k.parquet"
    logged = path.stat().st_size
    with path.open("ab") as fh:
        fh.write(b"tail")
    f = flagged(table, "size-mismatch", version=4, path=str(path))
    assert f"holds {logged + 4} bytes, the log says {logged}" in f.message


def test_orphan_data_file_is_info(table: Path) -> None:
    write_parquet(table, "p=a/uncommitted.parquet", _data(5))
    (table / "_temporary").mkdir()  # hidden: Delta ignores it, so does the check
    (table / "_temporary" / "x.parquet").write_bytes(b"x")
    (table / ".hidden.parquet").write_bytes(b"x")
    f = flagged(table, "orphan-file", version=None, path=str(table / "p=a" / "uncommitted.parquet"))
    report = check_table(str(table))
    assert report.clean and report.findings == [f]  # removed, unvacuumed files are no orphans
    assert _cli("check", str(table), "--fail-on", "warning")[0] == 0


def test_orphan_log_file_is_info(table: Path) -> None:
    temp = _log(table, ".00000000000000000005.json.0a1b2c.tmp")
    temp.write_bytes(b'{"commitInfo":{}}\n')
    flagged(table, "orphan-log-file", version=None, path=str(temp))
    assert check_table(str(table)).clean


def test_bad_last_checkpoint(table: Path) -> None:
    _log(table, "_last_checkpoint").write_bytes(b'{"version": 4, "size": ')
    flagged(table, "bad-last-checkpoint", version=None, path=str(_log(table, "_last_checkpoint")))
    assert check_table(str(table)).ok


@pytest.mark.parametrize(
    ("pointer", "version", "problem"),
    [
        ({"version": 4, "size": 99}, 4, "size is 99"),
        ({"version": 4, "numOfAddFiles": 7}, 4, "numOfAddFiles is 7"),
        ({"version": 4, "parts": 2}, 4, "parts is 2"),
        ({"version": 3}, 3, "no complete checkpoint"),
        ({"version": 9}, 9, "no complete checkpoint"),
    ],
    ids=["size", "adds", "parts", "no-checkpoint", "future"],
)
def test_last_checkpoint_mismatch(
    table: Path, pointer: dict[str, int], version: int, problem: str
) -> None:
    _log(table, "_last_checkpoint").write_bytes(orjson.dumps(pointer))
    path = str(_log(table, "_last_checkpoint"))
    f = flagged(table, "last-checkpoint-mismatch", version=version, path=path)
    assert problem in f.message


def test_last_checkpoint_moved_back_to_a_checkpoint_cleanup_removed_is_stale_not_wrong(
    table: Path,
) -> None:
    """A background checkpoint's read-then-write of the hint moved it back to checkpoint 2
    after checkpoint 4 was written, and cleanup then removed version 2's files. Readers list
    on from version 2 and use checkpoint 4: an info, not a warning."""
    for name in log_names(table):
        if name[:20].isdigit() and int(name[:20]) <= 2:
            _log(table, name).unlink()
    _log(table, "_last_checkpoint").write_bytes(orjson.dumps({"version": 2, "size": 5}))
    path = str(_log(table, "_last_checkpoint"))
    f = flagged(table, "stale-last-checkpoint", version=2, path=path)
    assert f.severity == "info" and "newest checkpoint is 4" in f.message
    report = check_table(str(table))
    assert report.clean and "last-checkpoint-mismatch" not in report.codes(), report.findings


def test_incomplete_multipart_checkpoint(table: Path) -> None:
    part = _log(table, "00000000000000000003.checkpoint.0000000001.0000000002.parquet")
    part.write_bytes(_log(table, "00000000000000000002.checkpoint.parquet").read_bytes())
    f = flagged(table, "incomplete-checkpoint", version=3, path=None)
    assert "[2]" in f.message
    assert check_table(str(table)).codes() == {"incomplete-checkpoint"}


def test_corrupt_checkpoint(table: Path) -> None:
    cp = _log(table, "00000000000000000004.checkpoint.parquet")
    pq.write_table(pa.table({"unrelated": [1, 2, 3]}), cp)  # readable Parquet, no actions
    f = flagged(table, "corrupt-checkpoint", version=4, path=str(cp))
    assert "0 protocol and 0 metaData" in f.message
    # Replay of the commits goes on, and _last_checkpoint is not compared with it.
    assert check_table(str(table)).codes() == {"corrupt-checkpoint"}


def test_stats_naming_an_unknown_column(table: Path) -> None:
    stats = '{"numRecords": 2, "minValues": {"id": 1, "nope": 3}, "maxValues": {"id": 2}}'
    _commit(table, 5, _add(table, "p=a/u.parquet", stats))
    f = flagged(table, "stats-unknown-column", version=5, path="p=a/u.parquet")
    assert "'nope'" in f.message
    assert check_table(str(table)).ok


def test_bad_schema(table: Path) -> None:
    line = next(
        orjson.loads(raw)
        for raw in _log(table, _commit_name(0)).read_bytes().splitlines()
        if b"metaData" in raw
    )
    line["metaData"]["partitionColumns"] = ["nope"]
    _commit(table, 5, line)
    flagged(table, "bad-schema", version=5, path=_where(table, 5))


def test_findings_of_one_commit_come_together(table: Path) -> None:
    """One broken commit with several problems: all of them, ordered by severity."""
    add = _add(table, "p=a/m.parquet", '{"numRecords": -1}')
    _commit(table, 5, add, add, _remove("p=a/never.parquet"))
    report = check_table(str(table))
    codes = [f.code for f in report.findings if f.version == 5]
    assert set(codes) == {"duplicate-add", "bad-stats", "remove-of-missing-file"}
    assert codes[-1] == "remove-of-missing-file"
    assert report.summary() == {"error": len(report.errors), "warning": 1, "info": 0}
    assert report.exit_code() == 3 and report.exit_code("warning") == 3


# ------------------------------------------------------------------ the CLI and the API


def test_cli_cannot_check_a_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        check_table(str(tmp_path))
    assert _cli("check", str(tmp_path))[0] == 2
    assert _cli("check", str(tmp_path / "nowhere"), "--json")[0] == 2
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "_last_checkpoint").write_bytes(b"{}")
    with pytest.raises(TableNotFoundError):
        check_table(str(tmp_path))
    assert _cli("check", str(tmp_path))[0] == 2
    assert _cli("check", str(tmp_path), "-o", "no-equals-sign")[0] == 2


def test_cli_text_output(table: Path) -> None:
    (table / "p=z" / "k.parquet").unlink()
    status, out = _cli("check", str(table))
    assert status == 3
    assert "ERROR" in out and "missing-file" in out and "1 errors, 0 warnings" in out


def test_table_check_equals_check_table(table: Path) -> None:
    _commit(table, 5, _remove("p=a/gone.parquet"))
    (table / "p=z" / "k.parquet").unlink()
    opened = DeltaTable(str(table))
    assert opened.check().to_json() == check_table(str(table)).to_json()
    assert opened.check(data_files=False) == check_table(str(table), data_files=False)
    assert opened.check().codes() == {"missing-file", "remove-of-missing-file"}


def test_check_sees_the_log_as_it_is_now(table: Path) -> None:
    opened = DeltaTable(str(table), version=2)
    _commit(table, 5, _remove("p=a/gone.parquet"))
    assert opened.check().version == 5


# ------------------------------------------------------------------ sound logs stay clean


def test_empty_table_is_clean(tmp_path: Path) -> None:
    DeltaTable.create(str(tmp_path), SCHEMA)
    report = assert_clean(str(tmp_path))
    assert report.version == 0 and report.findings == []


def test_checkpoint_at_version_zero(tmp_path: Path) -> None:
    table = DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["p"])
    table.checkpoint()
    assert "00000000000000000000.checkpoint.parquet" in log_names(tmp_path)
    table.append_files([write_parquet(tmp_path, "p=a/f.parquet", _data(0))])
    assert_clean(str(tmp_path))
    _log(tmp_path, _commit_name(0)).unlink()  # the checkpoint alone gives version 0
    assert_clean(str(tmp_path))


def _age_log(root: Path, days: float = 40) -> None:
    old = time.time() - days * 86_400
    for name in log_names(root):
        os.utime(_log(root, name), (old, old))


def test_clean_after_log_cleanup(table: Path) -> None:
    _age_log(table)
    deleted = DeltaTable(str(table)).cleanup_log()
    assert sorted(deleted) == sorted(
        [*(_commit_name(v) for v in range(4)), "00000000000000000002.checkpoint.parquet"]
    )
    assert_clean(str(table))
    again = DeltaTable(str(table))
    again.append_files([write_parquet(table, "p=a/late.parquet", _data(50))])
    assert again.wait_for_checkpoints(timeout=60)
    report = assert_clean(str(table))
    assert report.checked["live_files"] == 4


def test_clean_when_the_log_starts_with_a_checkpoint(table: Path) -> None:
    """Only checkpoint 4 and later commits: what a cleanup by hand leaves."""
    for v in range(5):
        _log(table, _commit_name(v)).unlink()
    _log(table, "00000000000000000002.checkpoint.parquet").unlink()
    DeltaTable(str(table)).append_files([write_parquet(table, "p=q/n.parquet", _data(60))])
    report = assert_clean(str(table))
    assert report.checked["live_files"] == 4


def test_clean_when_a_path_is_readded_or_removed_and_readded(table: Path) -> None:
    readd = _add(table, "p=z/k.parquet", values={"p": "z"})  # already live: replaces its entry
    readd["add"]["dataChange"] = False
    _commit(table, 5, readd)
    _commit(table, 6, _remove("p=z/k.parquet"))
    _commit(table, 7, _add(table, "p=z/k.parquet", values={"p": "z"}))
    _commit(table, 8, {"txn": {"appId": "app", "version": 3}})
    DeltaTable(str(table)).checkpoint()
    report = assert_clean(str(table))
    assert report.checked["live_files"] == 3


def test_clean_with_special_characters_in_partitions_and_names(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("d", pa.date32())])
    table = DeltaTable.create(
        str(tmp_path),
        schema,
        partition_by=["p", "d"],
        configuration={"delta.checkpointInterval": "2"},
    )
    data = pa.table({"id": pa.array([1], pa.int64())})
    for i, p in enumerate(["a b", "100%", "ü=é", "x/y".replace("/", "%2F"), "#?&"]):
        table.append_files(
            [write_parquet(tmp_path, f"p={p}/d=2024-01-0{i + 1}/f {i}.parquet", data)]
        )
    assert table.wait_for_checkpoints(timeout=60)
    report = assert_clean(str(tmp_path))
    assert report.findings == [] and report.checked["live_files"] == 5


def test_clean_with_legit_stats_values(tmp_path: Path) -> None:
    """NaN and infinities, zoned timestamps, dates, nested structs, decimals: all valid."""
    schema = {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": True, "metadata": {}}
            for n, t in [
                ("d", "double"),
                ("f", "float"),
                ("ts", "timestamp"),
                ("ntz", "timestamp_ntz"),
                ("day", "date"),
                ("dec", "decimal(10,2)"),
                ("b", "boolean"),
                (
                    "s",
                    {
                        "type": "struct",
                        "fields": [
                            {"name": "i", "type": "integer", "nullable": True, "metadata": {}}
                        ],
                    },
                ),
                ("arr", {"type": "array", "elementType": "long", "containsNull": True}),
            ]
        ],
    }
    DeltaTable.create(str(tmp_path), orjson.dumps(schema).decode())
    stats = {
        "numRecords": 3,
        "tightBounds": True,
        "minValues": {
            "d": "-Infinity",
            "f": -1.5,
            "ts": "2024-01-01T00:00:00.000Z",
            "ntz": "2024-01-01 00:00:00",
            "day": "0001-01-01",
            "dec": -99.99,
            "s": {"i": -3},
        },
        "maxValues": {
            "d": "NaN",
            "f": "Infinity",
            "ts": "2024-01-01T09:00:00.000+08:00",
            "ntz": "2024-01-01T00:00:00.123456",
            "day": "9999-12-31",
            "dec": 12,
            "s": {"i": 7},
        },
        "nullCount": {"d": 0, "f": 1, "ts": 3, "s": {"i": 0}, "arr": 2, "b": 0},
    }
    _commit(tmp_path, 1, _add(None, "f.parquet", orjson.dumps(stats).decode(), values={}))
    report = check_table(str(tmp_path), data_files=False)
    assert report.findings == []


def test_clean_after_a_column_is_dropped_under_column_mapping(tmp_path: Path) -> None:
    """Old files keep stats under a dropped column's physical name; a checkpoint copies them."""
    src = _golden("data-skipping-basic-stats-all-types-columnmapping-name")
    root = tmp_path / "cm"
    _copy(src, root)
    raw = _log(root, _commit_name(0)).read_bytes().splitlines()
    meta = next(orjson.loads(line) for line in raw if b"metaData" in line)
    schema = orjson.loads(meta["metaData"]["schemaString"])
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "as_string"]
    meta["metaData"]["schemaString"] = orjson.dumps(schema).decode()
    _commit(root, 1, meta)
    DeltaTable(str(root)).checkpoint()
    assert_clean(str(root))
    # Logical names in stats are a writer's mistake under column mapping.
    stats = '{"numRecords": 1, "minValues": {"as_int": 1}}'
    _commit(root, 2, _add(None, "new.parquet", stats, values={}))
    f = flagged(root, "stats-unknown-column", version=2, path="new.parquet", data_files=False)
    assert "logical name" in f.message


def test_partition_values_by_logical_name_under_column_mapping(tmp_path: Path) -> None:
    root = tmp_path / "dv"
    _copy(_golden("dv-with-columnmapping"), root)
    assert_clean(str(root))
    latest = max(int(n[:20]) for n in log_names(root) if n.endswith(".json"))
    _commit(root, latest + 1, _add(None, "x.parquet", values={"part": "0"}))
    flagged(root, "bad-partition-values", version=latest + 1, path="x.parquet", data_files=False)


@pytest.mark.parametrize("retention", [None, "interval 1 hour"])
def test_expired_app_ids_may_leave_checkpoints(table: Path, retention: str | None) -> None:
    """With delta.setTransactionRetentionDuration, writers drop expired txns from checkpoints."""
    table_obj = DeltaTable(str(table))
    with table_obj.transaction() as tx:
        tx.set_transaction("stream", 1)
        if retention:
            tx.update_metadata(
                configuration={
                    **table_obj.metadata().configuration,
                    "delta.setTransactionRetentionDuration": retention,
                }
            )
    content = checkpoint_content(DeltaTable(str(table)).snapshot)
    content.actions = [(name, body) for name, body in content.actions if name != "txn"]
    write_checkpoint(LocalLogStore(), str(table / "_delta_log"), content)
    report = check_table(str(table))
    if retention:
        assert report.clean, report.findings
    else:
        assert report.codes() == {"checkpoint-mismatch"}


# ------------------------------------------------------------------ weird logs never crash


def test_a_huge_version_number_is_one_gap_not_a_hang(table: Path) -> None:
    write_commit(table, 10**19, [b'{"commitInfo":{}}'])
    start = time.monotonic()
    flagged(table, "version-gap", version=5, path=_where(table, 5))
    assert time.monotonic() - start < 10


def test_a_version_given_only_by_a_corrupt_checkpoint_stops_replay(table: Path) -> None:
    """Commit 4 gone and checkpoint 4 unreadable: later commits are not replayed on version 3."""
    table_obj = DeltaTable(str(table))
    table_obj.overwrite_files([write_parquet(table, "p=y/o.parquet", _data(70))])  # version 5
    _log(table, _commit_name(4)).unlink()
    _log(table, "00000000000000000004.checkpoint.parquet").write_bytes(b"junk")
    (table / "p=a" / "h.parquet").unlink()  # removed by version 5: gone is fine
    report = check_table(str(table))
    assert report.codes() == {"corrupt-checkpoint"}, report.findings


def test_last_checkpoint_agrees_with_one_of_several_checkpoints(table: Path) -> None:
    v2 = _log(table, "00000000000000000004.checkpoint.0f3c1d7e-8a34-4c53-9f0e-1a2b3c4d5e6f.json")
    v2.write_bytes(b"{not json")
    flagged(table, "corrupt-checkpoint", version=4, path=str(v2))
    assert check_table(str(table)).codes() == {"corrupt-checkpoint"}


def _racing(root: Path, after_listing: Any) -> TableStorage:
    """The table's storage, running ``after_listing`` once right after the first log listing."""
    storage = TableStorage.open(str(root))
    listed = storage.list_log
    done: list[bool] = []

    def list_log(start_name: str = "") -> Any:
        entries = listed(start_name)
        if not done:
            done.append(True)
            after_listing()
        return entries

    storage.list_log = list_log  # type: ignore[method-assign]
    return storage


def test_a_checkpoint_written_during_the_check_is_no_mismatch(table: Path) -> None:
    def writer() -> None:
        t = DeltaTable(str(table))
        t.append_files([write_parquet(table, "p=r/race.parquet", _data(80))])
        assert t.wait_for_checkpoints(timeout=60)  # checkpoint 6 and _last_checkpoint -> 6
        t.append_files([write_parquet(table, "p=r/race2.parquet", _data(90))])
        assert t.wait_for_checkpoints(timeout=60)

    report = check_storage(_racing(table, writer))
    assert report.version == 4
    assert report.codes() <= ORPHANS, report.findings  # the new data files are not yet live


def test_a_checkpoint_deleted_by_cleanup_during_the_check_is_no_corruption(table: Path) -> None:
    def cleanup() -> None:
        for name in [_commit_name(0), _commit_name(1), "00000000000000000002.checkpoint.parquet"]:
            _log(table, name).unlink()

    report = check_storage(_racing(table, cleanup))
    assert report.clean and report.findings == [], report.findings


WEIRD_LINES = {
    "partition-values-null": b'{"add":{"path":"a","partitionValues":null,"size":1,'
    b'"modificationTime":1,"dataChange":true}}',
    "size-string": b'{"add":{"path":"a","partitionValues":{},"size":"1","modificationTime":1,'
    b'"dataChange":true}}',
    "path-number": b'{"add":{"path":5,"partitionValues":{},"size":1,"modificationTime":1,'
    b'"dataChange":true}}',
    "stats-object": b'{"add":{"path":"a","partitionValues":{"p":"a"},"size":1,'
    b'"modificationTime":1,"dataChange":true,"stats":{"numRecords":1}}}',
    "stats-nested-wrong": b'{"add":{"path":"a","partitionValues":{"p":"a"},"size":1,'
    b'"modificationTime":1,"dataChange":true,"stats":"{\\"minValues\\":{\\"id\\":{\\"x\\":1}},'
    b'\\"nullCount\\":[1]}"}}',
    "stats-huge-number": b'{"add":{"path":"a","partitionValues":{"p":"a"},"size":1,'
    b'"modificationTime":1,"dataChange":true,"stats":"{\\"numRecords\\":1e999}"}}',
    "deletion-vector-string": b'{"add":{"path":"a","partitionValues":{"p":"a"},"size":1,'
    b'"modificationTime":1,"dataChange":true,"deletionVector":"x"}}',
    "remove-without-path": b'{"remove":{"deletionTimestamp":1}}',
    "metadata-no-schema": b'{"metaData":{"id":"x","format":{"provider":"parquet"},'
    b'"partitionColumns":[],"configuration":{}}}',
    "metadata-schema-not-struct": b'{"metaData":{"id":"x","format":{"provider":"parquet"},'
    b'"schemaString":"\\"long\\"","partitionColumns":[],"configuration":{}}}',
    "protocol-strings": b'{"protocol":{"minReaderVersion":"1","minWriterVersion":2}}',
    "txn-wrong-types": b'{"txn":{"appId":5,"version":"x"}}',
    "domain-wrong-types": b'{"domainMetadata":{"domain":5,"configuration":3,"removed":"no"}}',
    "two-actions-on-a-line": b'{"add":{"path":"q","partitionValues":{"p":"a"},"size":1,'
    b'"modificationTime":1,"dataChange":true},"remove":{"path":"q"}}',
    "array-line": b"[1, 2]",
    "not-utf8": b'{"commitInfo":{"x":"\xff"}}',
    "nul-in-path": b'{"add":{"path":"a\\u0000b","partitionValues":{"p":"a"},"size":1,'
    b'"modificationTime":1,"dataChange":true}}',
    "bad-percent-escape": b'{"add":{"path":"%zz%","partitionValues":{"p":"a"},"size":1,'
    b'"modificationTime":1,"dataChange":true}}',
    "nul-in-an-external-path": b'{"add":{"path":"file:/tmp/%00x","partitionValues":{"p":"a"},'
    b'"size":1,"modificationTime":1,"dataChange":true}}',
    "cdc-escaping": b'{"cdc":{"path":"../c.parquet","partitionValues":{},"size":1,'
    b'"dataChange":false}}',
    "unknown-action": b'{"futureAction":{"x":1}}',
}


@pytest.mark.parametrize("name", sorted(WEIRD_LINES))
def test_weird_commit_lines_are_reported_not_raised(table: Path, name: str) -> None:
    write_commit(table, 5, [b'{"commitInfo":{}}', WEIRD_LINES[name]])
    report = check_table(str(table))  # must not raise
    assert report.version == 5
    status, out = _cli("check", str(table), "--json")
    assert status in (0, 3) and orjson.loads(out)["version"] == 5
    if name != "unknown-action":  # unknown actions are ignored, as readers must
        assert not report.clean, name


@pytest.mark.parametrize(
    "damage",
    ["garbage", "empty", "other-columns", "add-not-a-struct", "json"],
)
def test_weird_checkpoints_are_reported_not_raised(table: Path, damage: str) -> None:
    cp = _log(table, "00000000000000000004.checkpoint.parquet")
    if damage in ("other-columns", "add-not-a-struct"):
        column = "a" if damage == "other-columns" else "add"
        sink = io.BytesIO()
        pq.write_table(pa.table({column: [1]}), sink)
        cp.write_bytes(sink.getvalue())
    else:
        cp.write_bytes({"garbage": b"garbage", "empty": b"", "json": b'{"protocol":{}}'}[damage])
    flagged(table, "corrupt-checkpoint", version=4, path=str(cp))


@pytest.mark.parametrize(
    "pointer", [b"", b"\xff\xfe", b"[1]", b'{"version":"4"}', b'{"version":-1}', b"{}"]
)
def test_weird_last_checkpoints_are_reported_not_raised(table: Path, pointer: bytes) -> None:
    _log(table, "_last_checkpoint").write_bytes(pointer)
    flagged(table, "bad-last-checkpoint", version=None, path=str(_log(table, "_last_checkpoint")))


# ------------------------------------------------------------------ object stores


def test_cloud_table_checks_clean_then_flags_a_missing_object(cloud_table: CloudTable) -> None:
    uri, options = cloud_table.uri, cloud_table.options
    store, _ = open_store(uri, options)
    storage = TableStorage.open(uri, options)
    table = DeltaTable.create(
        uri,
        SCHEMA,
        partition_by=["p"],
        storage_options=options,
        configuration={"delta.checkpointInterval": "2"},
    )
    for i, relative in enumerate(["p=a/f0.parquet", "p=b c/f1.parquet", "p=a/f2.parquet"]):
        sink = io.BytesIO()
        pq.write_table(_data(i), sink)
        store.write(storage.data_file(relative), sink.getvalue(), overwrite=True)
        table.append_files([relative])
    assert table.wait_for_checkpoints(timeout=60)
    report = assert_clean(uri, options)
    assert report.checked["checkpoints"] == 1 and report.checked["live_files"] == 3
    gone = storage.data_file("p=b c/f1.parquet")
    store.delete(gone)
    flagged(uri, "missing-file", version=2, path=gone, options=options)


# ------------------------------------------------------------------ golden tables


def _golden(name: str) -> Path:
    path = GOLDEN_DIR / name
    if not path.is_dir():
        pytest.skip(f"golden table {name} not found under {GOLDEN_DIR}")
    return path


def _copy(src: Path, dst: Path) -> None:
    """Copy a (read-only) golden table to a writable place."""
    for dirpath, _, files in os.walk(src):
        target = dst / Path(dirpath).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / name).write_bytes((Path(dirpath) / name).read_bytes())


def _golden_roots() -> list[str]:
    if not GOLDEN_DIR.is_dir():
        return []
    roots = []
    for dirpath, dirnames, _ in os.walk(GOLDEN_DIR):
        if "_delta_log" in dirnames:
            roots.append(os.path.relpath(dirpath, GOLDEN_DIR))
            dirnames.clear()
    tops = [d.name for d in GOLDEN_DIR.iterdir() if d.is_dir()]
    roots += [d for d in tops if not any(r == d or r.startswith(d + "/") for r in roots)]
    return sorted(roots)


#: Verdicts on the golden tables whose check is not clean: every error and warning code. The
#: log-only fixtures (hand-made logs of delta-spark's tests, data files never written) have
#: true missing-file errors; bad-schema is a metaData without the required schemaString.
GOLDEN_FINDINGS: dict[str, set[str]] = {
    "canonicalized-paths-normal-a": {"bad-schema"},  # log only; no schemaString
    "canonicalized-paths-normal-b": {"bad-schema"},
    "canonicalized-paths-special-a": {"bad-schema"},
    "canonicalized-paths-special-b": {"bad-schema"},
    "checkpoint": {"missing-file"},  # log only
    "corrupted-last-checkpoint": {"bad-schema", "missing-file"},  # log only
    "corrupted-last-checkpoint-kernel": {"bad-last-checkpoint"},  # an empty _last_checkpoint
    "data-reader-absolute-paths-escaped-chars": {"unsafe-path", "missing-metadata", "missing-file"},
    "delete-re-add-same-file-different-transactions": {"missing-file"},  # log only
    "deltalog-commit-info": {"bad-schema", "missing-file"},  # log only
    "deltalog-invalid-protocol-version": {"unsupported-reader-feature", "missing-file"},
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata": {
        "bad-schema",
        "missing-file",
        "corrupt-checkpoint",
    },
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol": {
        "bad-schema",
        "missing-file",
        "corrupt-checkpoint",
    },
    "deltalog-state-reconstruction-without-metadata": {"missing-metadata", "missing-file"},
    "deltalog-state-reconstruction-without-protocol": {"missing-protocol", "missing-file"},
    "log-replay-special-characters-b": {"missing-file"},  # log only
    "parquet-decimal-dictionaries-v1": {"missing-file"},  # the one file the copy lacks
    "update-deleted-directory": {"bad-schema", "missing-file"},  # log only
    "versions-not-contiguous": {"bad-schema", "version-gap"},
}
#: Folders that hold no table.
GOLDEN_NOT_TABLES = {"log-store-listFrom", "log-store-read", "no-delta-log-folder"}
#: Tables delta-spark wrote with real data files and no intended damage: must be clean.
GOLDEN_SOUND = [
    "basic-decimal-table",
    "basic-with-inserts-deletes-checkpoint",
    "basic-with-inserts-merge",
    "data-skipping-basic-stats-all-types",
    "data-skipping-basic-stats-all-types-checkpoint",
    "data-skipping-basic-stats-all-types-columnmapping-id",
    "data-skipping-basic-stats-all-types-columnmapping-name",
    "data-reader-timestamp_ntz-name-mode",
    "dv-partitioned-with-checkpoint",
    "dv-with-columnmapping",
    "multi-part-checkpoint",
    "spark-variant-checkpoint",
    "type-widening",
    "v2-checkpoint-json",
    "v2-checkpoint-parquet",
]


@pytest.mark.parametrize("name", _golden_roots() or ["(absent)"])
def test_golden_table_verdicts(name: str) -> None:
    """Never raises; exactly the expected error and warning codes; only harmless infos."""
    if not GOLDEN_DIR.is_dir():
        pytest.skip(f"golden tables not found at {GOLDEN_DIR}")
    uri = str(GOLDEN_DIR / name)
    if name in GOLDEN_NOT_TABLES:
        with pytest.raises(TableNotFoundError):
            check_table(uri)
        return
    report = check_table(uri)
    codes = {f.code for f in report.findings if f.severity != "info"}
    assert codes == GOLDEN_FINDINGS.get(name, set()), report.findings
    assert {f.code for f in report.infos} <= {"orphan-file", "external-path"}


@pytest.mark.parametrize("name", GOLDEN_SOUND)
def test_golden_tables_written_by_delta_spark_are_clean(name: str) -> None:
    report = assert_clean(str(_golden(name)))
    assert report.checked["live_files"] > 0 and report.checked["commits"] > 0


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("versions-not-contiguous", "version-gap"),
        ("deltalog-state-reconstruction-without-protocol", "missing-protocol"),
        ("deltalog-state-reconstruction-without-metadata", "missing-metadata"),
        ("deltalog-invalid-protocol-version", "unsupported-reader-feature"),
        ("corrupted-last-checkpoint-kernel", "bad-last-checkpoint"),
    ],
)
def test_golden_tables_known_invalid_are_flagged(name: str, code: str) -> None:
    report = check_table(str(_golden(name)))
    assert code in report.codes(), report.findings
    assert _cli("check", str(GOLDEN_DIR / name), "--fail-on", "warning")[0] == 3


# ------------------------------------------------------------------ linear in history


def test_check_looks_at_each_checkpoint_row_once(tmp_path: Path) -> None:
    """Checkpoint rows that repeat replay's files exactly are not checked again, one by one.

    Before, every row of every checkpoint was (sum of checkpoint sizes: quadratic in the
    history). Now only rows that are not known to agree with replay are: none on a healthy log,
    the first retained checkpoint's rows after log cleanup, and a damaged checkpoint's rows.
    Timings are in benchmarks/bench_check.py.
    """
    write_append_log(tmp_path, 300)
    report = check_table(str(tmp_path), data_files=False)
    assert report.ok, report.findings
    assert report.checked["checkpoints"] == 30
    assert report.checked["checkpoint_rows_checked"] == 0

    log = tmp_path / "_delta_log"
    for v in range(100):  # what log cleanup leaves: history from checkpoint 100 on
        (log / f"{v:020d}.json").unlink()
        (log / f"{v:020d}.checkpoint.parquet").unlink(missing_ok=True)
    report = check_table(str(tmp_path), data_files=False)
    assert report.ok, report.findings
    assert report.checked["checkpoint_rows_checked"] == 100  # checkpoint 100, where replay starts

    damaged = log / f"{200:020d}.checkpoint.parquet"
    rows = pq.read_table(damaged)
    pq.write_table(rows.slice(0, rows.num_rows - 1), damaged)  # one add row lost
    report = check_table(str(tmp_path), data_files=False)
    assert {f.code for f in report.findings} >= {"checkpoint-mismatch"}
    assert report.checked["checkpoint_rows_checked"] == 100 + 199
