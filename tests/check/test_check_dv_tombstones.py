"""``deltalog check`` on a table whose deletion vectors were dropped (issue 29, item 12).

``ALTER TABLE ... DROP FEATURE deletionVectors`` in delta-spark 4.x purges the DVs (REORG) and
then commits "Deletion Vector Tombstones": a ``remove`` of each DV file the tombstones point to,
so that vacuum deletes them. Those removes name files that were never added; ``check`` must not
call them removes of files that are not live.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from sparkutil import delta_spark_version
from tableutil import dv_json, write_commit

from deltalog import check_table
from deltalog.cli import main
from deltalog.protocol.deletion_vectors import dv_file_path

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def _add(path: str, dv: dict[str, object] | None, *, data_change: bool = True) -> dict[str, Any]:
    add: dict[str, Any] = {
        "path": path,
        "partitionValues": {},
        "size": 700,
        "modificationTime": 1,
        "dataChange": data_change,
    }
    if dv is not None:
        add["deletionVector"] = dv
    return {"add": add}


def _remove(path: str, dv: dict[str, object] | None, *, data_change: bool) -> dict[str, Any]:
    remove: dict[str, Any] = {"path": path, "deletionTimestamp": 5, "dataChange": data_change}
    if dv is not None:
        remove["deletionVector"] = dv
    return {"remove": remove}


def _write(root: Path, version: int, operation: str, *actions: dict[str, Any]) -> None:
    info = {"commitInfo": {"timestamp": version + 1, "operation": operation}}
    write_commit(root, version, [orjson.dumps(a) for a in (info, *actions)])


def _dv(prefix: str = "") -> dict[str, object]:
    """A ``u`` deletion vector in ``<prefix>/deletion_vector_<uuid>.bin`` (random prefixes)."""
    dv = dv_json(1)
    return dv | {"pathOrInlineDv": prefix + str(dv["pathOrInlineDv"])}


def _dropped_dv_log(root: Path, tombstone: dict[str, Any], dv: dict[str, object]) -> None:
    """The log delta-spark 4.4 writes: create, DELETE (a DV), REORG, tombstones, DROP FEATURE."""
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7}
    _write(
        root,
        0,
        "WRITE",
        {
            "protocol": protocol
            | {"readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}
        },
        {
            "metaData": {
                "id": "dv-drop",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA,
                "partitionColumns": [],
                "configuration": {"delta.enableDeletionVectors": "true"},
            }
        },
        _add("part-0.parquet", None),
    )
    _write(root, 1, "DELETE", _remove("part-0.parquet", None, data_change=True))
    _write(root, 2, "DELETE", _add("part-0.parquet", dv))
    _write(
        root,
        3,
        "REORG",
        _remove("part-0.parquet", dv, data_change=False),
        _add("part-1.parquet", None, data_change=False),
    )
    _write(root, 4, "Deletion Vector Tombstones", tombstone)
    _write(
        root,
        5,
        "DROP FEATURE",
        {"protocol": protocol | {"writerFeatures": ["checkpointProtection"]}},
    )


def _exit(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return main(list(argv))


@pytest.mark.parametrize("prefix", ["", "xy"])
def test_dv_tombstones_are_not_removes_of_missing_files(tmp_path: Path, prefix: str) -> None:
    dv = _dv(prefix)
    dv_path = dv_file_path(dv)
    assert dv_path is not None and dv_path.startswith(f"{prefix}/" if prefix else "deletion_")
    _dropped_dv_log(tmp_path, _remove(dv_path, None, data_change=False), dv)
    report = check_table(str(tmp_path), data_files=False)
    assert report.clean, report.findings
    assert _exit("check", str(tmp_path), "--no-data-files", "--fail-on", "warning") == 0


@pytest.mark.parametrize(
    "tombstone",
    [
        _remove("part-9.parquet", None, data_change=False),  # not a DV file
        _remove("deletion_vector_0000.bin", dv_json(2), data_change=False),  # carries a DV
    ],
)
def test_other_removes_of_files_never_added_are_still_reported(
    tmp_path: Path, tombstone: dict[str, Any]
) -> None:
    _dropped_dv_log(tmp_path, tombstone, _dv())
    report = check_table(str(tmp_path), data_files=False)
    assert [(f.code, f.version) for f in report.findings] == [("remove-of-missing-file", 4)]


def test_check_is_clean_after_delta_spark_drops_deletion_vectors(
    delta_spark: Any, tmp_path: Path
) -> None:
    root = str(tmp_path / "t")
    delta_spark.range(0, 100, 1, 2).write.format("delta").option(
        "delta.enableDeletionVectors", "true"
    ).save(root)
    delta_spark.sql(f"DELETE FROM delta.`{root}` WHERE id % 7 = 0")
    drop = f"ALTER TABLE delta.`{root}` DROP FEATURE deletionVectors"
    if int(delta_spark_version().split(".")[0]) < 4:
        # delta-spark 3.x cannot drop the feature: the table keeps its DVs, and check is clean.
        with pytest.raises(Exception, match="DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"):
            delta_spark.sql(drop)
        report = check_table(root)
        assert report.clean, report.findings
        assert _exit("check", root, "--fail-on", "warning") == 0
        return
    delta_spark.sql(drop)
    operations = [
        row["operation"] for row in delta_spark.sql(f"DESCRIBE HISTORY delta.`{root}`").collect()
    ]
    assert "Deletion Vector Tombstones" in operations  # the log has the shape under test
    report = check_table(root)
    assert report.clean, report.findings
    assert report.codes() <= {"orphan-file"}, report.findings
    assert _exit("check", root, "--fail-on", "warning") == 0
