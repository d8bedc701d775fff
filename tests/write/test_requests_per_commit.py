"""Requests per commit, counted at the test servers: each store does only what it needs.

A table on each object store is reached through ``servers.fault_proxy`` with a
``servers.request_log.RequestLog`` rule (it records, never fails), and appends are made the
usual way, ``write_table(table, rows, mode="append")`` on a table object that stays open. Each
append must send exactly the requests of its store's protocol, in order:

* S3 with conditional PUT, GCS, Azure: one listing to refresh the table (from the version
  held: nothing new), the data file, the commit (create-if-absent), its version checksum.
* S3 + DynamoDB: the refresh's query of the newest entry and listing (delta-spark's
  ``listFrom``), the data file, then delta-spark's protocol: temp file, entry (conditional),
  copy to ``N.json``, entry completed; and the checksum. Its step 0/1 checks (``N.json`` absent,
  ``N-1`` complete) are known from the refresh or the writer's own previous commit.

Before this was fixed an append refreshed by replaying the log from ``_last_checkpoint`` (every
commit since the checkpoint re-read), read each uploaded data file's size back with a HEAD, and
on S3 + DynamoDB sent three HEADs of commit files, a GetItem and a HEAD before every create.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from servers.fault_proxy import proxied_location
from servers.fixtures import CLOUD_BACKENDS
from servers.request_log import RequestLog

from deltalog import DeltaTable, write_table
from deltalog.logstores import open_store
from deltalog.logstores.external import ExternalCoordinatedLogStore

ROWS = pa.table({"x": pa.array([1, 2, 3], pa.int64())})
PLAIN = ["LIST log", "PUT data", "PUT commit", "PUT checksum"]
EXPECTED = {
    "s3": PLAIN,
    "gcs": PLAIN,
    "azure": PLAIN,
    "s3_dynamodb": [
        "DynamoDB Query",
        "LIST log",
        "PUT data",
        "PUT temp",
        "DynamoDB PutItem",
        "PUT commit",
        "DynamoDB PutItem",
        "PUT checksum",
    ],
}


@pytest.mark.parametrize("backend", CLOUD_BACKENDS)
def test_an_append_sends_only_the_requests_its_store_needs(
    request: pytest.FixtureRequest, backend: str
) -> None:
    log = RequestLog()
    with proxied_location(request, backend, log) as (_, location, _proxy):
        table = DeltaTable.create(location.uri, ROWS.schema, storage_options=location.options)
        write_table(table, ROWS, mode="append")
        for version in (2, 3, 4):  # below the first checkpoint (interval 10)
            log.recording = True
            assert write_table(table, ROWS, mode="append").version == version
            log.recording = False
            assert log.take() == EXPECTED[backend], f"commit {version}"
        assert DeltaTable(location.uri, storage_options=location.options).version() == 4


def test_a_refresh_reads_only_the_commits_after_the_version_held(
    request: pytest.FixtureRequest,
) -> None:
    log = RequestLog()
    with proxied_location(request, "s3", log) as (_, location, _proxy):
        table = DeltaTable.create(location.uri, ROWS.schema, storage_options=location.options)
        other = DeltaTable(location.uri, storage_options=location.options)
        write_table(other, ROWS, mode="append")
        write_table(other, ROWS, mode="append")
        log.recording = True
        assert table.update() == 2
        log.recording = False
        assert log.take() == ["LIST log", "GET commit", "GET commit"]
        assert table.files(with_stats=False).num_rows == 2


def test_s3_dynamodb_checks_again_once_what_it_knows_may_be_stale(
    request: pytest.FixtureRequest,
) -> None:
    """Knowing that N-1 is the newest complete commit lasts half an entry lifetime: after it, a
    commit makes delta-spark's checks again (HEAD N.json, GetItem N-1, HEAD N-1.json)."""
    log = RequestLog()
    with proxied_location(request, "s3_dynamodb", log) as (_, location, _proxy):
        store, root = open_store(location.uri, location.options)
        assert isinstance(store, ExternalCoordinatedLogStore)
        now = [0.0]
        store.known._clock = lambda: now[0]

        def commit(version: int) -> list[str]:
            log.recording = True
            store.write(store.join(root, "_delta_log", f"{version:020d}.json"), b"{}\n")
            log.recording = False
            return log.take()

        checks = ["HEAD commit", "DynamoDB GetItem", "HEAD commit"]
        protocol = ["PUT temp", "DynamoDB PutItem", "PUT commit", "DynamoDB PutItem"]
        assert commit(0) == ["HEAD commit", "DynamoDB GetItem", *protocol]
        assert commit(1) == protocol  # 0 was its own commit
        now[0] += store.ttl_seconds / 2 - 1
        assert commit(2) == protocol
        now[0] += store.ttl_seconds / 2
        assert commit(3) == [*checks, *protocol]
        assert commit(4) == protocol
        store.known.forget(store.join(root).rstrip("/"))
        assert commit(5) == [*checks, *protocol]
        log.recording = True
        assert [s.name for s in store.list_from(store.join(root, "_delta_log", f"{5:020d}"))]
        log.recording = False
        assert log.take() == ["DynamoDB Query", "LIST log"]
        assert commit(6) == protocol  # the listing showed 5 as the newest complete commit


APPEND_FILES_PROTOCOL = {
    "s3_dynamodb": ["PUT temp", "DynamoDB PutItem", "PUT commit", "DynamoDB PutItem"],
}


@pytest.mark.parametrize("backend", CLOUD_BACKENDS)
def test_append_files_stats_an_uploaded_file_once(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """``append_files`` of a file another program uploaded reads its footer for statistics:
    one HEAD for its size (and time), which the footer reader reuses (it used to send its own),
    and one ranged GET of the file's end (pyarrow's footer read); then the commit."""
    import io

    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(ROWS, buffer)
    log = RequestLog()
    with proxied_location(request, backend, log) as (_, location, _proxy):
        table = DeltaTable.create(location.uri, ROWS.schema, storage_options=location.options)
        store, root = open_store(location.uri, location.options)
        for version in (1, 2, 3):
            name = f"part-{version}.parquet"
            store.write(store.join(root, name), buffer.getvalue(), overwrite=True)
            log.recording = True
            assert table.append_files([name]) == version
            log.recording = False
            commit = APPEND_FILES_PROTOCOL.get(backend, ["PUT commit"])
            got = log.take()
            assert got == ["HEAD data", "GET data", *commit, "PUT checksum"], (version, got)
