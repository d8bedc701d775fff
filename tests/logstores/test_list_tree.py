"""``LogStore.list_tree``: the recursive listing behind ``append_files([directory])``.

Runs over every backend of the ``log_store`` fixture (conftest.py): memory, local, S3, S3 with
DynamoDB, GCS and Azure, the object stores against their local test servers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from deltalog.logstores import FileStatus, LocalLogStore, LogFileNotFoundError, LogStoreError

if TYPE_CHECKING:
    from conftest import StoreUnderTest

# Relative path -> content. Deliberately written out of order, with names whose sort order as
# full paths differs from a directory walk's ('-' and '.' sort before '/').
TREE: dict[str, bytes] = {
    "out/p=1/q=b/part-00001.parquet": b"b" * 7,
    "out/part-00000.parquet": b"top level",
    "out/_SUCCESS": b"",
    "out/p=1/part-00000.parquet": b"p1",
    "out/p=1-x/part-00000.parquet": b"dash",
    "out/p=1.5/part-00000.parquet": b"dot",
    "out/p=1/q=a/r=z/deep.parquet": b"four levels down",
    "out/p=2/.part-00000.parquet.crc": b"crc!",
    "out/p=2/part-00000.parquet": b"p" * 1000,
    "out/_temporary/0/task/part.parquet": b"tmp",
}


def _write_tree(log_store: StoreUnderTest, tree: dict[str, bytes]) -> None:
    for relative, data in tree.items():
        log_store.store.write(log_store.path(*relative.split("/")), data)


def _relative(log_store: StoreUnderTest, statuses: list[FileStatus]) -> list[str]:
    base = log_store.path("")
    assert all(s.path.startswith(base) for s in statuses), [s.path for s in statuses]
    return [s.path[len(base) :] for s in statuses]


def test_lists_every_file_at_every_depth_sorted_with_sizes(log_store: StoreUnderTest) -> None:
    store = log_store.store
    before_ms = time.time_ns() // 1_000_000 - 5_000
    _write_tree(log_store, TREE)
    after_ms = time.time_ns() // 1_000_000 + 5_000

    listed = list(store.list_tree(log_store.path("out")))

    # Everything, markers and hidden files included: filtering is the caller's business.
    assert _relative(log_store, listed) == sorted(TREE)
    assert [s.path for s in listed] == sorted(s.path for s in listed)
    assert [s.path for s in listed] == [log_store.path(*r.split("/")) for r in sorted(TREE)]
    for status in listed:
        data = TREE[status.path[len(log_store.path("")) :]]
        assert status.size == len(data), status
        assert isinstance(status.modification_time, int)
        assert before_ms <= status.modification_time <= after_ms, status
        assert status.name == status.path.rsplit("/", 1)[-1]
        # The listing's paths are the store's own notation: stat and read accept them.
        assert store.stat(status.path).size == status.size
        assert store.read(status.path) == data


def test_lists_a_subdirectory(log_store: StoreUnderTest) -> None:
    _write_tree(log_store, TREE)
    listed = list(log_store.store.list_tree(log_store.path("out", "p=1")))
    assert _relative(log_store, listed) == [
        "out/p=1/part-00000.parquet",
        "out/p=1/q=a/r=z/deep.parquet",
        "out/p=1/q=b/part-00001.parquet",
    ]


def test_a_trailing_slash_lists_the_same(log_store: StoreUnderTest) -> None:
    _write_tree(log_store, TREE)
    plain = list(log_store.store.list_tree(log_store.path("out")))
    slashed = list(log_store.store.list_tree(log_store.path("out") + "/"))
    assert [s.path for s in slashed] == [s.path for s in plain]


def test_list_tree_where_asks_about_every_file_and_returns_the_kept_ones(
    log_store: StoreUnderTest,
) -> None:
    _write_tree(log_store, TREE)
    asked: list[str] = []  # list.append is thread-safe: stores may call keep from threads

    def keep(location: str) -> bool:
        asked.append(location)
        return location.endswith(".parquet") and "/p=1" in location

    listed = list(log_store.store.list_tree_where(log_store.path("out"), keep))

    assert sorted(_relative(log_store, [FileStatus(p, 0, 0) for p in asked])) == sorted(TREE)
    assert _relative(log_store, listed) == [
        "out/p=1-x/part-00000.parquet",
        "out/p=1.5/part-00000.parquet",
        "out/p=1/part-00000.parquet",
        "out/p=1/q=a/r=z/deep.parquet",
        "out/p=1/q=b/part-00001.parquet",
    ]
    for status in listed:  # the kept files carry their real size
        assert status.size == len(TREE[_relative(log_store, [status])[0]])
    with pytest.raises(LogFileNotFoundError):  # an empty selection is not a missing directory
        list(log_store.store.list_tree_where(log_store.path("nothing-here"), keep))
    assert list(log_store.store.list_tree_where(log_store.path("out"), lambda _: False)) == []


def test_a_single_file_directory(log_store: StoreUnderTest) -> None:
    path = log_store.path("only", "f.parquet")
    log_store.store.write(path, b"12345")
    (status,) = log_store.store.list_tree(log_store.path("only"))
    assert status.path == path
    assert status.size == 5


def test_sibling_directories_sharing_a_name_prefix_are_not_included(
    log_store: StoreUnderTest,
) -> None:
    store = log_store.store
    _write_tree(
        log_store,
        {
            "dir/a.parquet": b"a",
            "dir/sub/b.parquet": b"b",
            "dir2/c.parquet": b"c",
            "dir-old/d.parquet": b"d",
            "dir.bak/e.parquet": b"e",
            "dirx": b"a file whose name extends the directory's",
            "dir_/f.parquet": b"f",
            "di/g.parquet": b"g",
        },
    )
    assert _relative(log_store, list(store.list_tree(log_store.path("dir")))) == [
        "dir/a.parquet",
        "dir/sub/b.parquet",
    ]
    assert _relative(log_store, list(store.list_tree(log_store.path("dir2")))) == ["dir2/c.parquet"]
    assert _relative(log_store, list(store.list_tree(log_store.path("di")))) == ["di/g.parquet"]


def test_many_files(log_store: StoreUnderTest) -> None:
    # More entries than one directory holds, spread over subdirectories: all, in order.
    names = [f"many/p={i % 7}/part-{i:05d}.parquet" for i in range(60)]
    _write_tree(log_store, {n: n.encode() for n in names})
    listed = list(log_store.store.list_tree(log_store.path("many")))
    assert _relative(log_store, listed) == sorted(names)
    assert [s.size for s in listed] == [len(n) for n in sorted(names)]


@pytest.mark.parametrize(
    "missing",
    [
        pytest.param(("nowhere",), id="nothing-at-all"),
        pytest.param(("out", "p=9"), id="missing-subdirectory"),
        pytest.param(("ou",), id="prefix-of-a-directory"),
        pytest.param(("out", "p="), id="prefix-of-subdirectories"),
        pytest.param(("nowhere", "deeper", "still"), id="missing-parents"),
    ],
)
def test_a_missing_directory_raises_not_found(
    log_store: StoreUnderTest, missing: tuple[str, ...]
) -> None:
    _write_tree(log_store, TREE)
    with pytest.raises(LogFileNotFoundError) as info:
        list(log_store.store.list_tree(log_store.path(*missing)))
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, LogStoreError)


def test_a_missing_directory_in_an_empty_location(log_store: StoreUnderTest) -> None:
    with pytest.raises(LogFileNotFoundError):
        list(log_store.store.list_tree(log_store.path("out")))


@pytest.mark.parametrize(
    "file",
    [
        pytest.param(("out", "part-00000.parquet"), id="top-level-file"),
        pytest.param(("out", "p=1", "q=a", "r=z", "deep.parquet"), id="nested-file"),
        pytest.param(("out", "_SUCCESS"), id="empty-file"),
    ],
)
def test_a_file_is_not_a_directory(log_store: StoreUnderTest, file: tuple[str, ...]) -> None:
    _write_tree(log_store, TREE)
    path = log_store.path(*file)
    assert log_store.store.stat(path).path == path  # it exists, as a file
    with pytest.raises(LogFileNotFoundError) as info:
        list(log_store.store.list_tree(path))
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(LogFileNotFoundError):
        list(log_store.store.list_tree(path + "/"))


def test_a_directory_is_not_a_file(log_store: StoreUnderTest) -> None:
    # stat() is for files: a directory (a key prefix on object stores) is "not found" on every
    # backend; the local store used to return the directory's own stat.
    _write_tree(log_store, TREE)
    for directory in (log_store.path("out"), log_store.path("out", "p=1")):
        with pytest.raises(LogFileNotFoundError) as info:
            log_store.store.stat(directory)
        assert isinstance(info.value, FileNotFoundError)
        assert not log_store.store.exists(directory)


# --------------------------------------------------------------------------- local only


def test_local_stat_of_a_directory_raises_not_found(tmp_path: Path) -> None:
    store = LocalLogStore()
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "f").write_bytes(b"x")
    for directory in (tmp_path / "d", tmp_path / "d" / "sub", tmp_path):
        with pytest.raises(LogFileNotFoundError, match="not found"):
            store.stat(str(directory))
        assert not store.exists(str(directory))
    assert store.stat(str(tmp_path / "d" / "f")).size == 1
    with pytest.raises(LogFileNotFoundError):
        store.stat(str(tmp_path / "d" / "f" / "below-a-file"))


def test_local_list_tree_skips_nothing_and_ignores_empty_directories(tmp_path: Path) -> None:
    store = LocalLogStore()
    (tmp_path / "out" / "empty" / "deeper").mkdir(parents=True)
    (tmp_path / "out" / "x").mkdir()
    (tmp_path / "out" / "x" / ".hidden").write_bytes(b"h")
    (tmp_path / "out" / "y").write_bytes(b"yy")
    listed = list(store.list_tree(str(tmp_path / "out")))
    assert [(s.path, s.size) for s in listed] == [
        (str(tmp_path / "out" / "x" / ".hidden"), 1),
        (str(tmp_path / "out" / "y"), 2),
    ]


def test_local_list_tree_of_a_path_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(LogFileNotFoundError):
        list(LocalLogStore().list_tree(str(tmp_path / "f" / "sub")))


def test_local_list_tree_of_an_empty_directory_raises_like_object_stores(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(LogFileNotFoundError):
        list(LocalLogStore().list_tree(str(tmp_path / "empty")))
