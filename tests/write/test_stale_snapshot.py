"""A writer whose snapshot is older than the retained log must not commit below a checkpoint.

Found by the soak benchmark: log cleanup had deleted versions 0..19 behind a checkpoint at 20,
and a writer still reading version 0 created ``1.json`` again. That commit was "successful",
yet no reader ever saw it (replay starts at the checkpoint). Now a commit that read the table
is refused; a blind append, which read nothing, lands after the head instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pyarrow as pa
import pytest
from servers.fixtures import cloud_location
from tableutil import commit_one, log_names, one_row_add, put_data_file

from deltalog import DeltaTable, RetryPolicy, SnapshotExpiredError, check_table


@pytest.mark.parametrize("uri_kind", ["local", "memory"])
def test_stale_writer_is_refused_after_cleanup(tmp_path, uri_kind: str) -> None:
    uri = str(tmp_path / "t") if uri_kind == "local" else f"memory://stale-{tmp_path.name}"
    # Cleanup deletes only what is older than the retention: a tiny one stands for time passing.
    DeltaTable.create(
        uri,
        pa.schema([("id", pa.int64())]),
        configuration={"delta.logRetentionDuration": "interval 1 milliseconds"},
    )
    stale = DeltaTable(uri)
    current = DeltaTable(uri, background_checkpoints=False)
    for i in range(20):
        commit_one(current, f"b{i}.parquet")
    current.checkpoint()  # version 20
    # What log cleanup does once the retention has passed: every commit and checkpoint before
    # the newest checkpoint goes.
    store = current._storage.store
    for v in range(20):
        store.delete(current._storage.log_file(f"{v:020d}.json"))
        store.delete(current._storage.log_file(f"{v:020d}.checkpoint.parquet"))
    assert not store.exists(current._storage.log_file(f"{1:020d}.json"))

    tx = stale.transaction()
    tx.read_whole_table()  # not a blind append: it cannot be checked against what is gone
    tx.add(one_row_add("a0.parquet"))
    with pytest.raises(SnapshotExpiredError) as err:
        tx.commit()
    assert err.value.retryable
    assert not store.exists(current._storage.log_file(f"{1:020d}.json"))  # nothing written
    fresh = DeltaTable(uri)
    assert fresh.version() == 20
    assert "a0.parquet" not in fresh.files().column("path").to_pylist()

    stale.update()
    assert commit_one(stale, "a0.parquet") == 21
    assert "a0.parquet" in DeltaTable(uri).files().column("path").to_pylist()
    if uri_kind == "local":
        report = check_table(uri, data_files=False)
        assert report.clean, report.findings
        assert f"{1:020d}.json" not in log_names(uri)
        assert os.path.exists(os.path.join(uri, "_delta_log", f"{21:020d}.json"))


class _CleanupDuringBackoff(RetryPolicy):
    """A retry policy whose first back-off runs ``during`` (the seam for the race)."""

    def __init__(self, during: Callable[[], None]) -> None:
        super().__init__()
        object.__setattr__(self, "_during", [during])

    def delay(self, attempt: int) -> float:
        pending = self._during  # type: ignore[attr-defined]
        if pending:
            pending.pop()()
        return 0.0


@pytest.mark.parametrize("uri_kind", ["local", "memory", "s3_dynamodb"])
def test_loser_does_not_recreate_a_commit_cleaned_up_during_its_backoff(
    request: pytest.FixtureRequest, tmp_path, uri_kind: str
) -> None:
    options: dict[str, str] = {}
    if uri_kind == "local":
        uri = str(tmp_path / "t")
    elif uri_kind == "memory":
        uri = f"memory://backoff-{tmp_path.name}"
    else:
        location = cloud_location(request, uri_kind)
        uri, options = location.uri, dict(location.options)
    DeltaTable.create(
        uri,
        pa.schema([("id", pa.int64())]),
        configuration={"delta.logRetentionDuration": "interval 0 seconds"},
        storage_options=options,
    )
    winner = DeltaTable(uri, storage_options=options, background_checkpoints=False)

    def winner_moves_on_and_cleans_up() -> None:
        for i in range(2, 4):
            commit_one(winner, f"b{i}.parquet")
        winner.checkpoint()  # version 3
        deleted = winner.cleanup_log()
        assert f"{1:020d}.json" in deleted

    loser = DeltaTable(
        uri, storage_options=options, retry=_CleanupDuringBackoff(winner_moves_on_and_cleans_up)
    )
    commit_one(winner, "b1.parquet")  # takes version 1 from the loser
    tx = loser.transaction()
    tx.read_whole_table()  # not a blind append: it cannot be checked against what is gone
    tx.add(one_row_add("a.parquet"))
    with pytest.raises(SnapshotExpiredError) as err:
        tx.commit()
    assert err.value.retryable
    storage = winner._storage
    assert not storage.store.exists(storage.log_file(f"{1:020d}.json"))  # nothing written
    assert DeltaTable(uri, storage_options=options).version() == 3
    report = check_table(uri, data_files=False, storage_options=options)
    assert report.clean, report.findings


@pytest.mark.parametrize("uri_kind", ["local", "memory"])
def test_stale_blind_append_lands_after_the_head(tmp_path, uri_kind: str) -> None:
    """A blind append read nothing: it is committed after the head the cleanup left."""
    uri = str(tmp_path / "t") if uri_kind == "local" else f"memory://stale-blind-{tmp_path.name}"
    DeltaTable.create(
        uri,
        pa.schema([("id", pa.int64())]),
        configuration={"delta.logRetentionDuration": "interval 0 seconds"},
    )
    stale = DeltaTable(uri, background_checkpoints=False)
    current = DeltaTable(uri, background_checkpoints=False)
    for i in range(5):
        commit_one(current, f"b{i}.parquet")
    current.checkpoint()  # version 5
    assert f"{1:020d}.json" in current.cleanup_log()

    assert commit_one(stale, put_data_file(stale, "a0.parquet")) == 6
    fresh = DeltaTable(uri)
    assert fresh.version() == 6
    assert sorted(fresh.files().column("path").to_pylist()) == sorted(
        ["a0.parquet"] + [f"b{i}.parquet" for i in range(5)]
    )
    assert stale.version() == 6
    assert check_table(uri, data_files=False).clean


@pytest.mark.parametrize("uri_kind", ["local", "s3_dynamodb"])
def test_blind_append_cleaned_up_during_its_backoff_lands_after_the_head(
    request: pytest.FixtureRequest, tmp_path, uri_kind: str
) -> None:
    options: dict[str, str] = {}
    if uri_kind == "local":
        uri = str(tmp_path / "t")
    else:
        location = cloud_location(request, uri_kind)
        uri, options = location.uri, dict(location.options)
    DeltaTable.create(
        uri,
        pa.schema([("id", pa.int64())]),
        configuration={"delta.logRetentionDuration": "interval 0 seconds"},
        storage_options=options,
    )
    winner = DeltaTable(uri, storage_options=options, background_checkpoints=False)

    def winner_moves_on_and_cleans_up() -> None:
        for i in range(2, 4):
            commit_one(winner, f"b{i}.parquet")
        winner.checkpoint()  # version 3
        assert f"{1:020d}.json" in winner.cleanup_log()

    loser = DeltaTable(
        uri,
        storage_options=options,
        background_checkpoints=False,
        retry=_CleanupDuringBackoff(winner_moves_on_and_cleans_up),
    )
    commit_one(winner, "b1.parquet")  # takes version 1 from the loser
    assert commit_one(loser, put_data_file(loser, "a.parquet")) == 4
    fresh = DeltaTable(uri, storage_options=options)
    assert sorted(fresh.files().column("path").to_pylist()) == [
        "a.parquet",
        "b1.parquet",
        "b2.parquet",
        "b3.parquet",
    ]
    report = check_table(uri, data_files=False, storage_options=options)
    assert report.clean, report.findings
