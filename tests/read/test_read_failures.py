"""A storage failure while a file is decoded is a ``StorageError``, never a verdict on the file.

Parquet footers (of data files being added) and checkpoints are decoded by pyarrow reading
through the store's file object; pyarrow re-raises that object's exceptions, so a connection
dropped mid-read used to surface from the decoder and be reported as a file that "is not a
readable Parquet file" (``SchemaMismatchError``: the caller's data is wrong). Each object store
is reached through ``servers.fault_proxy`` (the read is failed with a dropped connection or a
5xx); the local store through a file object whose reads fail with ``EIO``. Corrupt bytes still
get the named errors.
"""

from __future__ import annotations

import errno
import io
from collections.abc import Callable
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fault_proxy import DROP_AFTER, ERROR_AFTER, Fault, proxied_location, reads_bytes_of

from deltalog import DeltaTable, SchemaMismatchError, StorageError
from deltalog.logstores import LocalLogStore, LogStoreError, StoreUnavailableError, open_store

SCHEMA = pa.schema([("x", pa.int64())])
OBJECT_STORES = ("s3", "gcs", "azure")
#: Two attempts per request, so that a persistent failure is given up on quickly.
FEW_ATTEMPTS = {"s3": "s3.max_attempts", "gcs": "gcs.max_attempts", "azure": "azure.max_attempts"}


def _parquet() -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), buf)
    return buf.getvalue()


def _causes(exc: BaseException) -> list[BaseException]:
    out = []
    cause = exc.__cause__
    while cause is not None:
        out.append(cause)
        cause = cause.__cause__
    return out


@pytest.mark.parametrize("fault", [DROP_AFTER, ERROR_AFTER], ids=["dropped", "500"])
@pytest.mark.parametrize("backend", OBJECT_STORES)
def test_a_failed_footer_read_is_a_storage_error(
    request: pytest.FixtureRequest, backend: str, fault: Fault
) -> None:
    with proxied_location(request, backend) as (_, location, proxy):
        options = {**location.options, FEW_ATTEMPTS[backend]: "2"}
        DeltaTable.create(location.uri, SCHEMA, storage_options=options)
        store, root = open_store(location.uri, options)
        store.write(store.join(root, "f1.parquet"), _parquet(), overwrite=True)
        table = DeltaTable(location.uri, storage_options=options)
        proxy.rule = lambda r: fault if reads_bytes_of("f1.parquet")(r) else None

        with pytest.raises(StorageError) as caught:
            table.append_files(["f1.parquet"])
        assert not isinstance(caught.value, SchemaMismatchError)
        assert "f1.parquet" in str(caught.value)
        assert any(isinstance(c, StoreUnavailableError) for c in _causes(caught.value))
        assert proxy.injected[fault.name] == 2  # both attempts failed

        proxy.rule = None  # the storage is back: the same call succeeds
        assert table.append_files(["f1.parquet"]) == 1


@pytest.mark.parametrize("backend", OBJECT_STORES)
def test_corrupt_bytes_stay_a_schema_mismatch(request: pytest.FixtureRequest, backend: str) -> None:
    with proxied_location(request, backend) as (_, location, _proxy):
        DeltaTable.create(location.uri, SCHEMA, storage_options=location.options)
        store, root = open_store(location.uri, location.options)
        data = _parquet()
        broken = {
            "garbage.parquet": b"not parquet at all, just some text" * 4,
            "footer.parquet": data[:-12] + b"\xff" * 4 + data[-8:],  # bad thrift footer
        }
        for name, content in broken.items():
            store.write(store.join(root, name), content, overwrite=True)
        table = DeltaTable(location.uri, storage_options=location.options)
        for name in broken:
            with pytest.raises(SchemaMismatchError, match="not a readable Parquet file"):
                table.append_files([name])
        assert DeltaTable(location.uri, storage_options=location.options).version() == 0


@pytest.mark.parametrize("backend", OBJECT_STORES)
def test_a_failed_checkpoint_read_is_a_storage_error(
    request: pytest.FixtureRequest, backend: str
) -> None:
    with proxied_location(request, backend) as (_, location, proxy):
        options = {**location.options, FEW_ATTEMPTS[backend]: "2"}
        table = DeltaTable.create(location.uri, SCHEMA, storage_options=options)
        table.checkpoint()
        proxy.rule = lambda r: DROP_AFTER if reads_bytes_of(".checkpoint.parquet")(r) else None
        with pytest.raises(StorageError) as caught:
            DeltaTable(location.uri, storage_options=options)
        assert any(isinstance(c, StoreUnavailableError) for c in _causes(caught.value))


# ------------------------------------------------------------------------- local files


class _FailingReads(io.RawIOBase):
    """A seekable file of ``size`` bytes whose every read fails like a dying disk."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = offset + (0, self._pos, self._size)[whence]
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, buffer: Any) -> int:
        raise OSError(errno.EIO, "Input/output error")


def _fail_reads_of(monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """Make the local store's reads of files ending in ``suffix`` fail with ``EIO``."""
    open_input: Callable[[LocalLogStore, str], BinaryIO] = LocalLogStore.open_input
    local_path: Callable[[LocalLogStore, str], str | None] = LocalLogStore.local_path

    def failing_open(self: LocalLogStore, path: str) -> BinaryIO:
        if path.endswith(suffix):
            return io.BufferedReader(_FailingReads(self.stat(path).size))
        return open_input(self, path)

    def no_local_path(self: LocalLogStore, path: str) -> str | None:
        return None if path.endswith(suffix) else local_path(self, path)

    monkeypatch.setattr(LocalLogStore, "open_input", failing_open)
    monkeypatch.setattr(LocalLogStore, "local_path", no_local_path)


def test_a_local_io_error_in_a_footer_is_a_storage_error(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, SCHEMA)
    (tmp_path / "t" / "f1.parquet").write_bytes(_parquet())
    _fail_reads_of(monkeypatch, "f1.parquet")
    with pytest.raises(StorageError) as caught:
        table.append_files(["f1.parquet"])
    assert not isinstance(caught.value, SchemaMismatchError)
    cause = caught.value.__cause__
    assert isinstance(cause, OSError) and cause.errno == errno.EIO
    monkeypatch.undo()
    assert table.append_files(["f1.parquet"]) == 1


def test_a_local_io_error_in_a_checkpoint_is_a_storage_error(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, the checkpoint was taken for corrupt and the table silently replayed without it.
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA).checkpoint()
    _fail_reads_of(monkeypatch, ".checkpoint.parquet")
    with pytest.raises(StorageError) as caught:
        DeltaTable(uri)
    cause = caught.value.__cause__
    assert isinstance(cause, OSError) and cause.errno == errno.EIO
    assert not isinstance(cause, LogStoreError)
