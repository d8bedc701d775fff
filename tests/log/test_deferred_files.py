"""``PendingFiles.deferred``: files merged on first use, counted from objects before that."""

from __future__ import annotations

import threading

import pytest

import deltalog.log.file_actions as file_actions
from deltalog.log.file_actions import FileActionLog, Keyed, PendingFiles
from deltalog.protocol.actions import AddFile, RemoveFile

PREFIX = "file:"
DV = {"storageType": "u", "pathOrInlineDv": "ab", "offset": 1, "sizeInBytes": 4, "cardinality": 1}


def _add(path: str, size: int, dv: dict[str, object] | None = None) -> AddFile:
    return AddFile(path, {}, size, 1, True, deletion_vector=dv)  # type: ignore[arg-type]


def _remove(path: str, dv: dict[str, object] | None = None) -> RemoveFile:
    return RemoveFile(path, 2, deletion_vector=dv)  # type: ignore[arg-type]


#: Re-adds, removes, a file with a deletion vector beside its version without, absolute paths.
ACTIONS: list[AddFile | RemoveFile] = [
    _add("a", 1),
    _add("b", 2),
    _add("c", 4),
    _remove("a"),
    _add("a", 8),
    _add("b", 16, DV),
    _remove("b"),
    _remove("c"),
    _add("file:///t/d", 32),
    _remove("/t/d"),
    _add("/t/e", 64),
]


def _deferred(actions: list[AddFile | RemoveFile], calls: list[int]) -> PendingFiles:
    log = FileActionLog()
    log.extend_objects(actions)

    def compute() -> tuple[Keyed, Keyed]:
        calls.append(1)
        from deltalog.checkpoints.nulls import empty_table

        empty = Keyed(empty_table(file_actions.FILES_SCHEMA))
        return log.merge(empty, Keyed(empty_table(file_actions.TOMBSTONES_SCHEMA)), PREFIX)

    return PendingFiles.deferred(compute, PREFIX, log.objects())


def test_live_adds_are_what_the_merge_keeps() -> None:
    calls: list[int] = []
    state = _deferred(ACTIONS[:6], calls).then(ACTIONS[6:8]).then(ACTIONS[8:])
    adds = state.live_adds()
    assert adds is not None and not calls and not state.is_merged
    files = state.get()[0].table
    assert calls == [1]
    assert sorted((a.path, a.size, a.dv_id) for a in adds) == sorted(
        (r["path"], r["size"], None if r["deletion_vector"] is None else "uab@1")
        for r in files.to_pylist()
    )
    assert sorted(a.size for a in adds) == [8, 16, 64]
    assert state.live_adds() is None  # merged: the Arrow table answers


def test_the_deferred_merge_runs_once_for_concurrent_readers() -> None:
    calls: list[int] = []
    state = _deferred(ACTIONS, calls)
    child = state.then([_add("z", 1)])
    barrier = threading.Barrier(4)
    results: list[object] = []

    def read(node: PendingFiles) -> None:
        barrier.wait()
        results.append(node.get()[0].table.num_rows)

    threads = [threading.Thread(target=read, args=(n,)) for n in (state, state, child, child)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1]
    assert sorted(results) == [3, 3, 4, 4]  # type: ignore[type-var]


def test_many_actions_are_merged_rather_than_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_actions, "_LIVE_ADDS_MAX", 5)
    state = _deferred(ACTIONS, [])
    assert state.live_adds() is None
    assert _deferred(ACTIONS[:2], []).live_adds() is not None
