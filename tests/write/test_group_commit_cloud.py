"""Group commit on object stores: threads of one process share commits, none lost or doubled."""

from __future__ import annotations

import json
import threading

import pyarrow as pa
import pytest
from servers.fixtures import cloud_location

from deltalog import AddFile, DeltaTable
from deltalog.log.storage import TableStorage
from deltalog.protocol.paths import commit_name

THREADS, EACH = 8, 4


@pytest.mark.parametrize("backend", ["s3", "s3_dynamodb", "gcs"])
def test_threads_share_commits_on_an_object_store(
    request: pytest.FixtureRequest, backend: str
) -> None:
    uri, options = cloud_location(request, backend)[1:]
    DeltaTable.create(uri, pa.schema([("x", pa.int64())]), storage_options=options)
    barrier = threading.Barrier(THREADS)
    told: dict[str, int] = {}
    errors: list[BaseException] = []

    def run(n: int) -> None:
        table = DeltaTable(uri, storage_options=options, group_commit=True)
        barrier.wait(60)
        for i in range(EACH):
            path = f"w{n}-{i}.parquet"
            try:
                with table.transaction() as tx:
                    tx.add(AddFile(path, {}, 1, 0, True, stats='{"numRecords":1}'))
            except BaseException as exc:
                errors.append(exc)
                return
            assert tx.version is not None
            told[path] = tx.version

    workers = [threading.Thread(target=run, args=(n,)) for n in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
    assert not errors
    table = DeltaTable(uri, storage_options=options)
    storage = TableStorage.open(uri, options)
    logged: dict[str, int] = {}
    for version in range(1, table.version() + 1):
        for line in storage.read_log_file(commit_name(version)).splitlines():
            action = json.loads(line)
            if "add" in action:
                assert action["add"]["path"] not in logged
                logged[action["add"]["path"]] = version
    assert logged == told and len(told) == THREADS * EACH
    assert table.check(data_files=False).ok
