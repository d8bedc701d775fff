"""The live path index behind the duplicate-path check: exact, and advanced per commit."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest
from tableutil import dv_json, write_parquet

from deltalog import AddFile, DeltaTable, RemoveFile
from deltalog.errors import DuplicateFileError
from deltalog.log.file_actions import (
    Keyed,
    PendingFiles,
    adds_to_table,
    arrow_keys,
    canonical_paths,
    removes_to_table,
    scheme_prefix,
)

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def _add(path: str) -> AddFile:
    return AddFile(
        path=path,
        partition_values={"part": path.split("/")[0].split("=")[1]},
        size=10,
        modification_time=1,
        data_change=True,
    )


def _file(root: Path, rel: str) -> str:
    """A real data file at ``rel`` (a path the transaction describes and checks)."""
    return write_parquet(root, rel, pa.table({"id": pa.array([1, 2], pa.int64())}))


def _table(root: Path) -> DeltaTable:
    return DeltaTable.create(
        str(root),
        SCHEMA,
        partition_by=["part"],
        configuration={"delta.checkpointInterval": "1000"},
    )


def _exact_live(table: DeltaTable) -> set[str]:
    prefix = scheme_prefix(table.uri)
    return set(canonical_paths(table.snapshot.paths(), prefix).to_pylist())


def test_index_follows_random_adds_and_removes(tmp_path: Path) -> None:
    table = _table(tmp_path)
    rng = random.Random(7)
    live: list[str] = []
    for i in range(60):
        tx = table.transaction()
        if live and rng.random() < 0.4:
            gone = rng.sample(live, k=min(len(live), rng.randint(1, 3)))
            tx.remove(gone)
            live = [p for p in live if p not in gone]
        new = [f"part={i % 3}/f{i}-{j}.parquet" for j in range(rng.randint(0, 3))]
        if new:
            tx.add([_add(p) for p in new])
            live += new
        tx.commit()
        index = table.snapshot.file_state.live_paths()
        assert set(index) == _exact_live(table) == set(live)
    # a live path may not be added again (described from the file), a new one may
    with pytest.raises(DuplicateFileError):
        table.append_files([_file(tmp_path, live[0])])
    table.append_files([_file(tmp_path, "part=0/new.parquet")])
    assert "part=0/new.parquet" in table.snapshot.file_state.live_paths()


def test_commits_do_not_merge_the_file_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)
    tx = table.transaction()
    tx.add([_add(f"part=a/seed{i}.parquet") for i in range(100)])
    tx.commit()
    table.append_files([_file(tmp_path, "part=a/first.parquet")])  # builds the index once
    merges = []
    original = PendingFiles.get

    def counting(self: PendingFiles) -> object:
        merges.append(self)
        return original(self)

    monkeypatch.setattr(PendingFiles, "get", counting)
    for i in range(20):
        rel = _file(tmp_path, f"part=b/n{i}.parquet")
        table.append_files([rel])
        with pytest.raises(DuplicateFileError):
            table.append_files([rel])
    assert merges == []
    monkeypatch.undo()
    assert table.files().num_rows == 121


def test_remove_and_readd_in_one_commit_stays_live(tmp_path: Path) -> None:
    table = _table(tmp_path)
    rel = _file(tmp_path, "part=a/x.parquet")
    table.append_files([rel])
    assert rel in table.snapshot.file_state.live_paths()
    tx = table.transaction()
    tx.remove(["part=a/x.parquet"])
    tx.commit()
    assert "part=a/x.parquet" not in table.snapshot.file_state.live_paths()
    table.append_files([rel])  # removed: may be added again
    assert rel in table.snapshot.file_state.live_paths()
    with pytest.raises(DuplicateFileError):
        table.append_files([rel])


def test_first_lookup_after_open_scans_instead_of_building_the_index(tmp_path: Path) -> None:
    table = _table(tmp_path)
    seeds = [_file(tmp_path, f"part=a/seed{i}.parquet") for i in range(50)]
    table.append_files(seeds)
    # A job that opens the table to commit once: its duplicate check finds a live file
    # without building the index.
    fresh = DeltaTable(str(tmp_path))
    with pytest.raises(DuplicateFileError, match="seed7"):
        fresh.append_files([seeds[7]])
    assert fresh.snapshot.file_state._live is None
    fresh = DeltaTable(str(tmp_path))
    first = _file(tmp_path, "part=b/first.parquet")
    fresh.append_files([first])
    assert fresh.snapshot.file_state._live is None

    # Its next lookups use the index, built once and advanced per commit.
    again = DeltaTable(str(tmp_path))
    again.append_files([_file(tmp_path, "part=b/second.parquet")])
    with pytest.raises(DuplicateFileError, match="first"):
        again.append_files([first])
    assert again.snapshot.file_state._live is not None
    assert set(again.snapshot.file_state.live_paths()) == _exact_live(again)
    with pytest.raises(DuplicateFileError, match="seed0"):
        fresh.append_files([seeds[0]])
    assert fresh.snapshot.file_state._live is not None
    assert DeltaTable(str(tmp_path)).files().num_rows == again.files().num_rows == 52


def test_index_built_from_the_merged_base_and_a_chain_of_commits() -> None:
    """A state that is not merged builds its index from the nearest merged one plus the
    commits after it; the result is the merged file list's, DV keys included."""
    prefix = "file:"
    base = [_add(f"part=a/b{i}.parquet") for i in range(40)]
    rng = random.Random(11)

    def chain() -> PendingFiles:
        state = PendingFiles.merged(Keyed(adds_to_table(base)), Keyed(removes_to_table([])), prefix)
        live = {a.path: a for a in base}
        steps = random.Random(rng.random())
        for i in range(30):
            actions: list[AddFile | RemoveFile] = []
            for path in steps.sample(sorted(live), k=min(len(live), steps.randint(0, 2))):
                old = live.pop(path)
                actions.append(RemoveFile(path=path, deletion_vector=old.deletion_vector))
                if steps.random() < 0.5:  # the same file again, now with a deletion vector
                    dv = AddFile(
                        path=path,
                        partition_values={"part": "a"},
                        size=10,
                        modification_time=1,
                        data_change=True,
                        deletion_vector=dv_json(i),  # type: ignore[arg-type]
                    )
                    actions.append(dv)
                    live[path] = dv
            new = _add(f"part=a/n{i}.parquet")
            actions.append(new)
            live[new.path] = new
            state = state.then(actions)
        return state

    seed = rng.random()
    rng.seed(seed)
    indexed = chain()
    assert not indexed.is_merged
    index = dict(indexed.live_paths())
    rng.seed(seed)
    merged = chain()
    files = merged.get()[0].table
    expected = dict(
        zip(
            canonical_paths(files.column("path"), prefix).to_pylist(),
            arrow_keys(files, prefix).to_pylist(),
            strict=True,
        )
    )
    assert index == expected
    assert any("\x00" in key for key in index.values())  # deletion vectors were exercised
    assert not indexed.is_merged  # built without merging
