"""deltalog through S3 + DynamoDB and delta-spark through s3a on one table of the moto server.

Two deltalog processes race 50 appends each into one ``s3a://`` table with
``s3.commit_protocol=dynamodb`` (delta-spark's ``S3DynamoDBLogStore`` protocol, one shared
DynamoDB table). Then delta-spark, in its own process with hadoop-aws (jars from Maven Central
through ``spark.jars.packages``), takes its turn: it must see the same version, file set and
rows, append with ``INSERT``, and read that back; deltalog then reads delta-spark's commit and
commits after it through DynamoDB again.

Not here, because this workplace's Maven Central does not serve
``io.delta:delta-storage-s3-dynamodb`` (every version answers 404): delta-spark *with*
``S3DynamoDBLogStore`` writing concurrently with deltalog, and crash recovery between the two.
delta-spark's own S3 store (``S3SingleDriverLogStore``) has no cross-process mutual exclusion,
so delta-spark only takes turns here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyspark
import pytest
from servers.fixtures import cloud_location
from sparkutil import delta_package
from spawned import run_writers
from test_cloud_concurrency import SCHEMA, _child, _rel, _row

from deltalog import DeltaTable

WRITERS = 2
ROUNDS = 50
DRIVER = Path(__file__).resolve().parent / "drivers" / "spark_s3_turn.py"

pytestmark = pytest.mark.spark


def _hadoop_aws() -> str:
    """hadoop-aws matching the Hadoop client PySpark ships (it brings its AWS SDK bundle)."""
    jars = Path(pyspark.__file__).parent / "jars"
    (api,) = jars.glob("hadoop-client-api-*.jar")
    version = api.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    return f"org.apache.hadoop:hadoop-aws:{version}"


def _spark_turn(endpoint: str, uri: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "spark.json"
    packages = f"{delta_package()},{_hadoop_aws()}"
    done = subprocess.run(
        [sys.executable, str(DRIVER), endpoint, uri, str(out), packages],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"delta-spark driver failed:\n{done.stderr[-6000:]}"
    report: dict[str, Any] = json.loads(out.read_text())
    return report


@pytest.mark.timeout(1200)
def test_deltalog_dynamodb_writers_and_delta_spark_share_an_s3a_table(
    request: pytest.FixtureRequest, moto_server: Any, tmp_path: Path
) -> None:
    location = cloud_location(request, "s3_dynamodb")
    uri = location.uri.replace("s3://", "s3a://", 1)
    options = location.options
    assert (
        DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options).version() == 0
    )

    reports = run_writers(
        _child,
        lambda w, barrier, results: (uri, options, w, barrier, results, ROUNDS),
        WRITERS,
        600,
    )
    assert not [r.failures for r in reports if r.failures]
    assert all(r.checkpoints_done for r in reports)
    versions = sorted(c.version for r in reports for c in r.commits)
    total = WRITERS * ROUNDS
    assert versions == list(range(1, total + 1)), "a commit was lost or landed twice"

    ours = DeltaTable(uri, storage_options=options)
    assert ours.version() == total
    our_files = sorted(ours.files(with_stats=False).column("path").to_pylist())
    assert our_files == sorted(_rel(w, s) for w in range(WRITERS) for s in range(ROUNDS))
    rows = sorted(_row(w, s) for w in range(WRITERS) for s in range(ROUNDS))

    spark = _spark_turn(moto_server.endpoint, uri, tmp_path)
    before, after = spark["before"], spark["after"]
    assert before["version"] == total
    assert before["files"] == our_files
    assert before["rows"] == rows
    assert after["version"] == total + 1
    assert after["rows"] == sorted([*rows, 999999])

    # deltalog reads delta-spark's commit and commits after it through DynamoDB.
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == total + 1
    assert sorted(table.files(with_stats=False).column("path").to_pylist()) == after["files"]
    commits = _child_commit(uri, options)
    assert commits == total + 2
    final = DeltaTable(uri, storage_options=options)
    assert final.version() == total + 2
    # Only the DynamoDB protocol's temp files remain (deleted once the entries' TTL has passed).
    findings = final.check(data_files=False).findings
    assert {f.code for f in findings} <= {"orphan-log-file"}
    assert all("/_delta_log/.tmp/" in (f.path or "") for f in findings)


def _child_commit(uri: str, options: dict[str, str]) -> int:
    """One more deltalog append (writer 9, seq 0) in this process, through DynamoDB."""
    from test_cloud_concurrency import _commit

    from deltalog.logstores import open_store

    store, root = open_store(uri, options)
    return _commit(DeltaTable(uri, storage_options=options), store, root, 9, 0).version
