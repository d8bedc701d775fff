"""The LogStore contract, run over every backend of the ``log_store`` fixture (conftest.py).

Add a backend to ``conftest.STORE_BACKENDS`` and every test here runs against it too. Also
tests ``logstores.open_store``, the scheme registry.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from deltalog.logstores import (
    FileAlreadyExistsError,
    FileStatus,
    LocalLogStore,
    LogFileNotFoundError,
    LogStoreError,
    MemoryLogStore,
    MissingDependencyError,
    StoreConfigurationError,
    UnknownSchemeError,
    open_store,
)

if TYPE_CHECKING:
    from conftest import StoreUnderTest

COMMIT_0 = "00000000000000000000.json"


def _names(statuses: list[FileStatus]) -> list[str]:
    return [s.name for s in statuses]


# --------------------------------------------------------------------------- read / write


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"commitInfo":{}}\n{"add":{}}\n', id="json-lines"),
        pytest.param(b"", id="empty"),
        pytest.param(bytes(range(256)) * 4, id="binary"),
        pytest.param(os.urandom(3 << 20), id="3MiB"),
    ],
)
def test_write_then_read_round_trips(log_store: StoreUnderTest, data: bytes) -> None:
    store = log_store.store
    path = log_store.path("_delta_log", COMMIT_0)
    store.write(path, data)
    assert store.read(path) == data
    assert store.read_view(path)[:] == data  # a map for big local files
    with store.open_input(path) as fh:
        assert fh.read() == data


def test_write_into_a_directory_that_does_not_exist_yet(log_store: StoreUnderTest) -> None:
    # The first commit of a new table goes into a _delta_log that does not exist yet.
    path = log_store.path("new", "deeper", "_delta_log", COMMIT_0)
    log_store.store.write(path, b"x")
    assert log_store.store.read(path) == b"x"


def test_create_if_absent_refuses_an_existing_file(log_store: StoreUnderTest) -> None:
    store = log_store.store
    path = log_store.path("_delta_log", COMMIT_0)
    store.write(path, b"first")
    with pytest.raises(FileAlreadyExistsError) as info:
        store.write(path, b"second")
    assert isinstance(info.value, FileExistsError)
    assert isinstance(info.value, LogStoreError)
    with pytest.raises(FileAlreadyExistsError):
        store.write(path, b"third", overwrite=False)
    assert store.read(path) == b"first"


def test_create_hint_creates_once_and_never_replaces(log_store: StoreUnderTest) -> None:
    store = log_store.store
    path = log_store.path("_delta_log", "00000000000000000000.crc")
    store.create_hint(path, b'{"numFiles":1}')
    assert store.read(path) == b'{"numFiles":1}'
    with pytest.raises(FileAlreadyExistsError):
        store.create_hint(path, b'{"numFiles":2}')
    with pytest.raises(FileAlreadyExistsError):
        store.write(path, b"other")
    assert store.read(path) == b'{"numFiles":1}'
    assert [s.name for s in store.list_from(log_store.path("_delta_log", ""))] == [
        "00000000000000000000.crc"
    ]  # no temp file left behind


def test_overwrite_replaces_and_creates(log_store: StoreUnderTest) -> None:
    store = log_store.store
    path = log_store.path("_delta_log", "_last_checkpoint")
    store.write(path, b"created by overwrite", overwrite=True)
    assert store.read(path) == b"created by overwrite"
    store.write(path, b"replaced", overwrite=True)
    assert store.read(path) == b"replaced"
    assert store.stat(path).size == len(b"replaced")


def test_read_of_a_missing_file(log_store: StoreUnderTest) -> None:
    store = log_store.store
    store.write(log_store.path("_delta_log", COMMIT_0), b"x")
    for missing in (
        log_store.path("_delta_log", "00000000000000000001.json"),  # directory exists
        log_store.path("nowhere", COMMIT_0),  # directory does not
    ):
        with pytest.raises(LogFileNotFoundError) as info:
            store.read(missing)
        assert isinstance(info.value, FileNotFoundError)
        assert isinstance(info.value, LogStoreError)
        with pytest.raises(LogFileNotFoundError):
            store.open_input(missing)
        with pytest.raises(LogFileNotFoundError):
            store.read_view(missing)


def test_reading_a_directory_raises_a_store_error(log_store: StoreUnderTest) -> None:
    # Whatever the backend's own error is, only LogStoreError subclasses may escape.
    store = log_store.store
    store.write(log_store.path("_delta_log", COMMIT_0), b"x")
    with pytest.raises(LogStoreError):
        store.read(log_store.path("_delta_log"))


# --------------------------------------------------------------------------- listing


def test_list_from_returns_names_at_or_after_start_in_lexicographic_order(
    log_store: StoreUnderTest,
) -> None:
    store = log_store.store
    names = [
        "00000000000000000010.json",
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000009.json",
        "_last_checkpoint",
        "00000000000000000002.json",
        "00000000000000000001.json",
        "00000000000000000011.crc",
    ]
    # Deliberately not in sorted order, so not a _delta_log (the S3+DynamoDB store refuses a
    # commit whose predecessor is missing, as delta-spark's does).
    for name in names:
        store.write(log_store.path("listing", name), name.encode())

    everything = list(store.list_from(log_store.path("listing", "")))
    assert _names(everything) == sorted(names)

    start = "00000000000000000002.json"
    listed = list(store.list_from(log_store.path("listing", start)))
    assert _names(listed) == sorted(n for n in names if n >= start)
    assert _names(listed)[0] == start

    # The start name need not exist.
    between = "00000000000000000005.json"
    assert _names(store.list_from(log_store.path("listing", between))) == sorted(
        n for n in names if n >= between
    )
    # Past every name: nothing (the directory exists, so no error).
    assert list(store.list_from(log_store.path("listing", "~"))) == []


def test_list_from_gives_full_paths_sizes_and_times(log_store: StoreUnderTest) -> None:
    store = log_store.store
    before_ms = time.time_ns() // 1_000_000 - 5_000
    store.write(log_store.path("_delta_log", COMMIT_0), b"12345")
    after_ms = time.time_ns() // 1_000_000 + 5_000
    (status,) = store.list_from(log_store.path("_delta_log", COMMIT_0))
    assert status.path == log_store.path("_delta_log", COMMIT_0)
    assert status.name == COMMIT_0
    assert status.size == 5
    assert isinstance(status.modification_time, int)
    assert before_ms <= status.modification_time <= after_ms
    assert store.stat(status.path) == status


def test_list_from_covers_only_that_directory(log_store: StoreUnderTest) -> None:
    store = log_store.store
    store.write(log_store.path("_delta_log", COMMIT_0), b"x")
    # Subdirectories (V2 checkpoint sidecars) and a sibling whose name extends the directory's.
    store.write(log_store.path("_delta_log", "_sidecars", "a.parquet"), b"x")
    store.write(log_store.path("_delta_log", "zzz", "00000000000000000001.json"), b"x")
    store.write(log_store.path("_delta_log_backup", "00000000000000000001.json"), b"x")
    store.write(log_store.path("part-00000.parquet"), b"x")

    listed = list(store.list_from(log_store.path("_delta_log", "")))
    assert _names(listed) == [COMMIT_0]
    assert [s.path for s in listed] == [log_store.path("_delta_log", COMMIT_0)]


def test_list_from_sees_a_write_immediately(log_store: StoreUnderTest) -> None:
    store = log_store.store
    start = log_store.path("_delta_log", COMMIT_0)
    store.write(start, b"0")
    for version in range(1, 20):
        name = f"{version:020d}.json"
        store.write(log_store.path("_delta_log", name), b"x")
        assert _names(store.list_from(start))[-1] == name
        assert len(list(store.list_from(start))) == version + 1


def test_list_from_a_missing_directory(log_store: StoreUnderTest) -> None:
    with pytest.raises(LogFileNotFoundError) as info:
        list(log_store.store.list_from(log_store.path("_delta_log", COMMIT_0)))
    assert isinstance(info.value, FileNotFoundError)


# --------------------------------------------------------------------------- stat / delete / exists


def test_stat(log_store: StoreUnderTest) -> None:
    store = log_store.store
    path = log_store.path("_delta_log", COMMIT_0)
    store.write(path, b"x" * 1234)
    status = store.stat(path)
    assert status.size == 1234
    assert status.path == path
    assert status.name == COMMIT_0
    with pytest.raises(LogFileNotFoundError):
        store.stat(log_store.path("_delta_log", "00000000000000000001.json"))


def test_delete_is_idempotent(log_store: StoreUnderTest) -> None:
    store = log_store.store
    # Not a commit name: re-creating a deleted *commit* is refused by the S3+DynamoDB store
    # while its DynamoDB entry lives (delta-spark's rule), which test_s3_dynamodb.py covers.
    path = log_store.path("_delta_log", "00000000000000000000.checkpoint.parquet")
    keep = log_store.path("_delta_log", COMMIT_0)
    store.write(path, b"x")
    store.write(keep, b"y")
    store.delete(path)
    assert not store.exists(path)
    with pytest.raises(LogFileNotFoundError):
        store.read(path)
    store.delete(path)  # again: not an error
    store.delete(log_store.path("_delta_log", "never-written"))
    store.delete(log_store.path("no-such-dir", "never-written"))
    assert store.read(keep) == b"y"
    assert _names(store.list_from(log_store.path("_delta_log", ""))) == [COMMIT_0]
    # A deleted name can be created again.
    store.write(path, b"again")
    assert store.read(path) == b"again"


def test_exists(log_store: StoreUnderTest) -> None:
    store = log_store.store
    path = log_store.path("_delta_log", COMMIT_0)
    assert not store.exists(path)
    assert not store.exists(log_store.path("no-such-dir", "x"))
    store.write(path, b"x")
    assert store.exists(path)


# --------------------------------------------------------------------------- concurrency


def test_threads_racing_create_if_absent_have_exactly_one_winner(
    log_store: StoreUnderTest,
) -> None:
    store = log_store.store
    writers, rounds = 8, 25
    barrier = threading.Barrier(writers)
    won: dict[int, list[int]] = {r: [] for r in range(rounds)}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(writer: int) -> None:
        for r in range(rounds):
            path = log_store.path("_delta_log", f"{r:020d}.json")
            try:
                barrier.wait(timeout=30)
                store.write(path, f"writer {writer}".encode())
            except FileAlreadyExistsError:
                continue
            except BaseException as exc:
                with lock:
                    errors.append(exc)
                barrier.abort()
                return
            with lock:
                won[r].append(writer)

    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    assert not errors, errors
    for r, winners in won.items():
        assert len(winners) == 1, f"round {r}: winners {winners}"
        path = log_store.path("_delta_log", f"{r:020d}.json")
        assert store.read(path) == f"writer {winners[0]}".encode()
    # Losers leave nothing visible behind (no temp files in the listing).
    listed = _names(store.list_from(log_store.path("_delta_log", "")))
    assert listed == [f"{r:020d}.json" for r in range(rounds)]


def test_a_reader_never_sees_a_partial_file(log_store: StoreUnderTest) -> None:
    # Only the published names count: a local store's in-flight temp files (".<name>.<id>.tmp")
    # may show up in a listing, but a commit or _last_checkpoint must never be seen half-written.
    store = log_store.store
    if store.is_partial_write_visible:
        pytest.skip("the store declares partial writes visible")
    size, count = 1 << 20, 20
    published = {f"{i:020d}.json" for i in range(count)} | {"_last_checkpoint"}
    done = threading.Event()
    bad: list[tuple[str, int]] = []
    failures: list[BaseException] = []
    reads = 0
    hint = log_store.path("_delta_log", "_last_checkpoint")
    store.write(hint, b"a" * size, overwrite=True)

    def reader() -> None:
        nonlocal reads
        try:
            while not done.is_set():
                for status in store.list_from(log_store.path("_delta_log", "")):
                    if status.name not in published:
                        continue
                    try:
                        data = store.read(status.path)
                    except LogFileNotFoundError:
                        continue
                    reads += 1
                    if len(data) != size or len(set(data)) != 1:  # short, or old+new mixed
                        bad.append((status.name, len(data)))
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        for i in range(count):
            fill = b"bc"[i % 2 : i % 2 + 1] * size
            store.write(log_store.path("_delta_log", f"{i:020d}.json"), fill)
            store.write(hint, fill, overwrite=True)
    finally:
        done.set()
        thread.join(timeout=30)
    assert not failures, failures
    assert reads > 0
    assert not bad, f"reader saw partial or torn files: {bad[:5]}"


# --------------------------------------------------------------------------- open_store


def test_open_store_bare_relative_path_is_local_and_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store, root = open_store("some/table")
    assert isinstance(store, LocalLogStore)
    assert os.path.isabs(root)
    assert root == str(tmp_path / "some" / "table")


def test_open_store_bare_absolute_path(tmp_path: Path) -> None:
    store, root = open_store(str(tmp_path / "table"))
    assert isinstance(store, LocalLogStore)
    assert root == str(tmp_path / "table")


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        pytest.param("file://{p}/table", "{p}/table", id="file-triple-slash"),
        pytest.param("file:{p}/table", "{p}/table", id="file-single-slash"),
        pytest.param("file://localhost{p}/table", "{p}/table", id="file-localhost"),
        pytest.param("file://{p}/table/", "{p}/table", id="file-trailing-slash"),
        pytest.param("file://{p}/with%20space", "{p}/with space", id="file-percent-encoded"),
    ],
)
def test_open_store_file_uri(tmp_path: Path, template: str, expected: str) -> None:
    p = str(tmp_path)
    assert p.startswith("/")
    store, root = open_store(template.format(p=p))
    assert isinstance(store, LocalLogStore)
    assert os.path.isabs(root)
    assert root == expected.format(p=p)


def test_open_store_file_uri_with_remote_host_is_refused() -> None:
    with pytest.raises(StoreConfigurationError):
        open_store("file://otherhost/data/table")


def test_open_store_local_fsync_option() -> None:
    store, _ = open_store("/tmp/table", {"local.fsync": "false"})
    assert isinstance(store, LocalLogStore)


def test_open_store_memory() -> None:
    store, root = open_store("memory://bucket/table")
    assert isinstance(store, MemoryLogStore)
    assert root == "memory://bucket/table"
    # memory:// is one process-wide store: a second open sees the first one's files.
    again, _ = open_store("memory://bucket/table/")
    assert again is store


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("foo://bucket/table", id="foo"),
        pytest.param("hdfs://namenode/table", id="hdfs"),
        pytest.param("https://example.com/table", id="https"),
        pytest.param("my-store://bucket/table", id="hyphenated"),
    ],
)
def test_open_store_unknown_scheme(uri: str) -> None:
    with pytest.raises(UnknownSchemeError) as info:
        open_store(uri)
    assert isinstance(info.value, StoreConfigurationError)
    assert isinstance(info.value, LogStoreError)


@pytest.mark.parametrize(
    ("uri", "sdk", "extra"),
    [
        ("s3://bucket/table", "boto3", "s3"),
        ("gs://bucket/table", "google.cloud.storage", "gcs"),
        ("az://container/table", "azure.storage.blob", "azure"),
        ("abfss://c@acct.dfs.core.windows.net/t", "azure.storage.blob", "azure"),
    ],
)
def test_open_store_without_the_sdk_names_the_extra(
    uri: str, sdk: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulate an environment without the SDK: the import fails as it would when not installed.
    monkeypatch.setitem(sys.modules, sdk, None)
    parent, _, leaf = sdk.rpartition(".")
    if parent in sys.modules:  # "from google.cloud import storage" would find the attribute
        monkeypatch.delattr(sys.modules[parent], leaf, raising=False)
    prefix = "deltalog.logstores."
    for name in [m for m in sys.modules if m.startswith(prefix)]:
        if name.removeprefix(prefix) in ("s3", "s3_open", "gcs", "azure", "dynamodb"):
            monkeypatch.delitem(sys.modules, name)
    with pytest.raises(MissingDependencyError) as info:
        open_store(uri, {"s3.commit_protocol": "conditional-put"})
    assert isinstance(info.value, ImportError)
    assert f"deltalog[{extra}]" in str(info.value)


def test_local_store_maps_big_files_and_reads_small_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmap

    from deltalog.logstores import local

    monkeypatch.setattr(local, "_filesystem_of", lambda dev: "ext4")
    monkeypatch.setattr(local, "_device_types", {})
    store = local.LocalLogStore()
    size = local._MAP_MIN_BYTES
    big, small = str(tmp_path / "big"), str(tmp_path / "small")
    store.write(big, b"x" * size)
    store.write(small, b"y" * (size - 1))
    view = store.read_view(big)
    assert isinstance(view, mmap.mmap) and view[:] == b"x" * size
    store.write(big, b"z", overwrite=True)  # replaced by a rename: the map keeps the old file
    assert view[:3] == b"xxx" and store.read(big) == b"z"
    assert isinstance(store.read_view(small), bytes)
    for remote in ("nfs4", "fuse.gcsfuse", None):  # a signal on an I/O error: read instead
        monkeypatch.setattr(local, "_filesystem_of", lambda dev, fs=remote: fs)
        monkeypatch.setattr(local, "_device_types", {})
        store.write(big, b"w" * size, overwrite=True)
        assert store.read_view(big) == b"w" * size
        assert isinstance(store.read_view(big), bytes)


def test_local_store_names_the_filesystem_of_its_files(tmp_path: Path) -> None:
    """``/proc/self/mountinfo`` names the filesystem of a file's device on Linux."""
    from deltalog.logstores import local

    if not os.path.exists("/proc/self/mountinfo"):
        pytest.skip("no /proc/self/mountinfo on this system")
    fs = local._filesystem_of(os.stat(tmp_path).st_dev)
    assert isinstance(fs, str) and fs
    assert local._filesystem_of(os.makedev(4095, 4095)) is None
