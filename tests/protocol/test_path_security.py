"""File paths that leave the table (issue 7): refused on write, reported by ``check`` on read.

An ``add.path`` or ``remove.path`` with ``..`` segments (also percent-encoded), or an absolute
URI on another store, bucket or host, could make readers (and VACUUM) touch files that belong
to someone else. Transactions refuse them before anything is written; ``deltalog check``
reports them as ``unsafe-path`` when a log holds them, and never follows them. An absolute path
in the table's own bucket but outside its root (a shallow clone's files) is allowed and
reported as ``external-path`` (info).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import BUCKET, CloudTable, cloud_location
from tableutil import log_names, write_commit, write_parquet

from deltalog import DeltaTable, check_table
from deltalog.cli import main
from deltalog.errors import DeltaLogError, InvalidPathError
from deltalog.logstores import LogStore, open_store
from deltalog.protocol.actions import AddFile, RemoveFile

SCHEMA = pa.schema([("id", pa.int64())])

#: Paths as logged (percent-encoded) that leave a local table or its filesystem.
UNSAFE_LOGGED = [
    "../x.parquet",
    "a/../../x.parquet",
    "..",
    "./../x.parquet",
    "%2E%2E/x.parquet",
    "a/%2e%2e/%2E%2E/x.parquet",
    "..%2Fx.parquet",
    "..\\x.parquet",
    "s3://other-bucket/x.parquet",
    "gs://deltalog-tests/x.parquet",
    "abfss://c@acct.dfs.core.windows.net/x.parquet",
    "file://otherhost/x.parquet",
    "file://otherhost/%2E%2E/x.parquet",
]


def _parquet_bytes() -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), sink)
    return sink.getvalue()


def _add_action(path: str) -> AddFile:
    return AddFile(
        path=path, partition_values={}, size=1, modification_time=0, data_change=True, stats=None
    )


def _unchanged(
    read: Callable[[], list[str]],
    table: DeltaTable,
    attempt: Callable[[], Any],
    options: dict[str, str] | None = None,
) -> None:
    """``attempt`` raises InvalidPathError and leaves the log as it was."""
    before, version = read(), table.version()
    with pytest.raises(InvalidPathError):
        attempt()
    assert read() == before
    assert DeltaTable(table.uri, storage_options=options).version() == version


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


@pytest.fixture
def local(tmp_path: Path) -> DeltaTable:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA)
    table.append_files([write_parquet(root, "a.parquet", pa.table({"id": [1]}))])
    write_parquet(tmp_path, "x.parquet", pa.table({"id": [1]}))  # what '../x.parquet' names
    return table


def _local_log(table: DeltaTable) -> Callable[[], list[str]]:
    return lambda: log_names(table.uri)


# ------------------------------------------------------------------ refused on write


@pytest.mark.parametrize("path", UNSAFE_LOGGED)
def test_transaction_add_refuses_unsafe_paths(local: DeltaTable, path: str) -> None:
    def attempt() -> None:
        with local.transaction() as tx:
            tx.add(_add_action(path))

    _unchanged(_local_log(local), local, attempt)


@pytest.mark.parametrize("path", UNSAFE_LOGGED)
def test_transaction_remove_refuses_unsafe_paths(local: DeltaTable, path: str) -> None:
    for given in (path, RemoveFile(path=path, deletion_timestamp=1, data_change=True)):

        def attempt(given: str | RemoveFile = given) -> None:
            with local.transaction() as tx:
                tx.remove(given)

        _unchanged(_local_log(local), local, attempt)


def test_a_refused_path_spoils_nothing_staged_before_it(local: DeltaTable) -> None:
    """The transaction is abandoned: the safe add staged first is not committed either."""
    root = Path(local.uri)
    write_parquet(root, "b.parquet", pa.table({"id": [2]}))

    def attempt() -> None:
        with local.transaction() as tx:
            tx.add("b.parquet")
            tx.add(_add_action("../x.parquet"))

    _unchanged(_local_log(local), local, attempt)
    assert DeltaTable(local.uri).files().column("path").to_pylist() == ["a.parquet"]


@pytest.mark.parametrize(
    "path", ["../x.parquet", "a/../../x.parquet", "..", "s3://other-bucket/x.parquet", "gs://b/x"]
)
@pytest.mark.parametrize("how", ["append", "overwrite"])
def test_append_and_overwrite_refuse_unsafe_paths(local: DeltaTable, path: str, how: str) -> None:
    def attempt() -> None:
        if how == "append":
            local.append_files([path])
        else:
            local.overwrite_files([path])

    _unchanged(_local_log(local), local, attempt)


def test_append_refuses_a_file_uri_on_another_host(local: DeltaTable) -> None:
    before = log_names(local.uri)
    # Refused before anything is written; the store's own error says a remote host is not
    # supported for file URIs (a StorageConfigurationError, not an InvalidPathError).
    with pytest.raises(DeltaLogError):
        local.append_files(["file://otherhost/x.parquet"])
    assert log_names(local.uri) == before


def test_percent_signs_in_a_real_file_name_are_not_an_escape(local: DeltaTable) -> None:
    """A directory literally named ``%2E%2E`` is inside the table; its path is encoded once."""
    root = Path(local.uri)
    write_parquet(root, "%2E%2E/x.parquet", pa.table({"id": [3]}))
    local.append_files(["%2E%2E/x.parquet"])
    assert "%252E%252E/x.parquet" in local.files().column("path").to_pylist()
    report = check_table(local.uri)
    assert report.clean and report.findings == [], report.findings


def test_local_absolute_paths_outside_the_root_are_external(local: DeltaTable) -> None:
    outside = str(Path(local.uri).parent / "x.parquet")
    for path in (outside, "file:" + outside, "file://" + outside, "file://localhost" + outside):
        with local.transaction() as tx:
            tx.add(
                AddFile(
                    path=path,
                    partition_values={},
                    size=Path(outside).stat().st_size,
                    modification_time=0,
                    data_change=True,
                )
            )
        version = local.version()
        report = check_table(local.uri)
        assert report.codes() == {"external-path"}, report.findings
        (finding,) = [f for f in report.findings if f.version == version]
        assert finding.severity == "info"
        assert finding.path == str(Path(local.uri) / "_delta_log" / f"{version:020d}.json")
        assert _cli("check", local.uri, "--fail-on", "warning")[0] == 0
        with local.transaction() as tx:
            tx.remove(path)


# ------------------------------------------------------------------ S3: buckets


S3Table = tuple[DeltaTable, CloudTable, LogStore, str]


def _s3_table(request: pytest.FixtureRequest) -> S3Table:
    location = cloud_location(request, "s3")
    store, root = open_store(location.uri, location.options)
    table = DeltaTable.create(location.uri, SCHEMA, storage_options=location.options)
    store.write(f"{root}/a.parquet", _parquet_bytes())
    table.append_files(["a.parquet"])
    return table, location, store, root


@pytest.fixture(scope="module")
def s3_shared(request: pytest.FixtureRequest) -> S3Table:
    """One S3 table for the refusals (which must leave it as it is)."""
    return _s3_table(request)


@pytest.fixture
def s3(request: pytest.FixtureRequest) -> S3Table:
    return _s3_table(request)


def _s3_log(store: LogStore, root: str) -> Callable[[], list[str]]:
    return lambda: sorted(s.name for s in store.list_from(f"{root}/_delta_log/"))


S3_UNSAFE = [
    "s3://other-bucket/x.parquet",
    "s3a://other-bucket/x.parquet",
    f"s3://{BUCKET}.evil/x.parquet",
    f"gs://{BUCKET}/x.parquet",
    f"az://{BUCKET}/x.parquet",
    "file:/etc/passwd",
    "/etc/passwd",
    "../x.parquet",
    f"s3://{BUCKET}/t/../../other-bucket/x.parquet",
    f"s3://{BUCKET}/%2E%2E/x.parquet",
]


@pytest.mark.parametrize("path", S3_UNSAFE)
def test_s3_table_refuses_other_buckets_and_stores(s3_shared: S3Table, path: str) -> None:
    table, location, store, root = s3_shared

    def add() -> None:
        with table.transaction() as tx:
            tx.add(_add_action(path))

    def remove() -> None:
        with table.transaction() as tx:
            tx.remove(path)

    _unchanged(_s3_log(store, root), table, add, location.options)
    _unchanged(_s3_log(store, root), table, remove, location.options)


@pytest.mark.parametrize(
    "path", ["s3://other-bucket/x.parquet", f"gs://{BUCKET}/x.parquet", "../x.parquet"]
)
@pytest.mark.parametrize("how", ["append", "overwrite"])
def test_s3_append_and_overwrite_refuse_other_buckets(
    s3_shared: S3Table, path: str, how: str
) -> None:
    table, location, store, root = s3_shared
    write = table.append_files if how == "append" else table.overwrite_files
    _unchanged(_s3_log(store, root), table, lambda: write([path]), location.options)


def test_s3_same_bucket_outside_the_root_is_external(s3: S3Table) -> None:
    table, location, store, root = s3
    elsewhere = f"s3://{BUCKET}/shared-{root.rsplit('/', 1)[-1]}"
    data = _parquet_bytes()
    store.write(f"{elsewhere}/x.parquet", data)
    store.write(f"{elsewhere}/y z.parquet", data)
    with table.transaction() as tx:
        tx.add(
            AddFile(
                path=f"{elsewhere}/x.parquet",
                partition_values={},
                size=len(data),
                modification_time=0,
                data_change=True,
            )
        )
    table.append_files([f"{elsewhere}/y z.parquet"])
    assert f"{elsewhere}/y%20z.parquet" in table.files().column("path").to_pylist()
    with table.transaction() as tx:  # s3a:// names the same bucket
        tx.add(
            AddFile(
                path=f"s3a{elsewhere[2:]}/y%20z.parquet",
                partition_values={},
                size=len(data),
                modification_time=0,
                data_change=True,
            )
        )
    report = check_table(location.uri, location.options)
    assert report.clean, report.findings
    external = [f for f in report.findings if f.code == "external-path"]
    assert [f.version for f in external] == [2, 3, 4]
    assert all(f.severity == "info" for f in external)
    assert external[0].path == f"{root}/_delta_log/{2:020d}.json"
    # The external file is checked too: delete it and it is missing.
    store.delete(f"{elsewhere}/x.parquet")
    report = check_table(location.uri, location.options)
    missing = [f for f in report.findings if f.code == "missing-file"]
    assert [(f.version, f.path) for f in missing] == [(2, f"{elsewhere}/x.parquet")]


# ------------------------------------------------------------------ reported on read


def _commit_lines(*actions: dict[str, Any]) -> list[bytes]:
    return [b'{"commitInfo":{"operation":"MANUAL"}}', *(orjson.dumps(a) for a in actions)]


def _add_json(path: str) -> dict[str, Any]:
    return {
        "add": {
            "path": path,
            "partitionValues": {},
            "size": 1,
            "modificationTime": 0,
            "dataChange": True,
        }
    }


@pytest.mark.parametrize("path", UNSAFE_LOGGED)
def test_check_reports_unsafe_paths_in_a_local_log(local: DeltaTable, path: str) -> None:
    write_commit(local.uri, 2, _commit_lines(_add_json(path)))
    report = check_table(local.uri)
    unsafe = [f for f in report.findings if f.code == "unsafe-path"]
    assert len(unsafe) == 1, report.findings
    (finding,) = unsafe
    assert finding.severity == "error" and finding.version == 2
    assert finding.path == str(Path(local.uri) / "_delta_log" / f"{2:020d}.json")
    assert repr(path) in finding.message
    # Never followed: no missing-file or size-mismatch for the file it names.
    assert report.codes() == {"unsafe-path"}, report.findings
    status, out = _cli("check", local.uri, "--json")
    assert status == 3
    assert finding.to_json() in orjson.loads(out)["findings"]


def test_check_reports_an_unsafe_remove(local: DeltaTable) -> None:
    remove = {"remove": {"path": "../x.parquet", "deletionTimestamp": 1, "dataChange": True}}
    write_commit(local.uri, 2, _commit_lines(remove))
    report = check_table(local.uri)
    assert "unsafe-path" in report.codes()
    assert [f.version for f in report.findings if f.code == "unsafe-path"] == [2]


def test_check_reports_unsafe_paths_in_a_checkpoint(local: DeltaTable) -> None:
    write_commit(local.uri, 2, _commit_lines(_add_json("../x.parquet")))
    DeltaTable(local.uri).checkpoint()  # the checkpoint copies the add
    report = check_table(local.uri)
    checkpoint = str(Path(local.uri) / "_delta_log" / f"{2:020d}.checkpoint.parquet")
    commit = str(Path(local.uri) / "_delta_log" / f"{2:020d}.json")
    unsafe = {(f.version, f.path) for f in report.findings if f.code == "unsafe-path"}
    # A checkpoint equal to the replayed state is not re-checked row by row (check is linear):
    # the path is reported where it entered the log.
    assert unsafe == {(2, commit)}
    # Once the commits are cleaned up, replay starts at the checkpoint, which is checked.
    for version in range(3):
        (Path(local.uri) / "_delta_log" / f"{version:020d}.json").unlink()
    report = check_table(local.uri)
    unsafe = {(f.version, f.path) for f in report.findings if f.code == "unsafe-path"}
    assert unsafe == {(2, checkpoint)}


def test_check_reports_unsafe_paths_in_an_s3_log(s3: S3Table) -> None:
    _, location, store, root = s3
    unsafe = ["../x.parquet", "s3://other-bucket/x.parquet", "s3a://other-bucket/x.parquet"]
    commits = {}
    for version, path in enumerate(unsafe, start=2):
        commits[version] = f"{root}/_delta_log/{version:020d}.json"
        store.write(commits[version], b"\n".join(_commit_lines(_add_json(path))) + b"\n")
    report = check_table(location.uri, location.options)
    assert report.codes() == {"unsafe-path"}, report.findings
    found = [(f.version, f.path, f.severity) for f in report.findings]
    assert found == [(v, commits[v], "error") for v in commits]
    for finding, path in zip(report.findings, unsafe, strict=True):
        assert repr(path) in finding.message
    opts = [arg for k, v in location.options.items() for arg in ("-o", f"{k}={v}")]
    status, out = _cli("check", location.uri, "--json", *opts)
    assert status == 3
    assert orjson.loads(out)["findings"] == [f.to_json() for f in report.findings]
