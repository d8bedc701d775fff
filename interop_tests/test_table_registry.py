"""The registry of the interop tests' tables copies a table without Hadoop's checksum files.

No Spark: the table is files made here, in a directory outside the session's temporary one (so
the registry of this very session does not collect it), removed afterwards.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from table_registry import TableRegistry, hadoop_checksums

#: A Spark-written table's files: data, log, Delta's version checksum and Hadoop's checksums.
FILES = {
    "part-00000-a.snappy.parquet": b"PAR1 data",
    ".part-00000-a.snappy.parquet.crc": b"stale hadoop checksum",
    "day=1/part-00001-b.snappy.parquet": b"PAR1 more",
    "day=1/.part-00001-b.snappy.parquet.crc": b"stale hadoop checksum",
    "_delta_log/00000000000000000000.json": b"{}\n",
    "_delta_log/.00000000000000000000.json.crc": b"stale hadoop checksum",
    "_delta_log/00000000000000000000.crc": b'{"tableSizeBytes": 9}',
    "_delta_log/.00000000000000000000.crc.crc": b"stale hadoop checksum",
    "_delta_log/_last_checkpoint": b"{}",
    "_delta_log/._last_checkpoint.crc": b"stale hadoop checksum",
}


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_copies_leave_out_hidden_hadoop_checksums_only() -> None:
    with tempfile.TemporaryDirectory(prefix="registry-test-") as scratch:
        root = Path(scratch, "made")
        root.mkdir()
        registry = TableRegistry.under(root, Path(scratch, "keep"))
        registry.keep.mkdir()
        table = root / "test0" / "t"  # made after the registry, as a test makes it
        for name, data in FILES.items():
            (table / name).parent.mkdir(parents=True, exist_ok=True)
            (table / name).write_bytes(data)
        (table / ".hidden.crc").mkdir()  # a directory, not a checksum: copied
        (table / ".hidden.crc" / "x").write_bytes(b"x")
        registry.collect_after("test_a")
        (made,) = registry.tables.values()
        assert made.made_by == ["test_a"]
        expected = {n for n in FILES if not Path(n).name.startswith(".")} | {".hidden.crc/x"}
        assert _files(made.copy) == expected
        assert (made.copy / "_delta_log/00000000000000000000.crc").read_bytes() == FILES[
            "_delta_log/00000000000000000000.crc"
        ]


def test_the_copy_filter_names_hidden_crc_files() -> None:
    with tempfile.TemporaryDirectory(prefix="registry-test-") as scratch:
        names = [".a.parquet.crc", "00000000000000000001.crc", ".b.json", "c.crc.json", ".d.crc"]
        for name in names:
            Path(scratch, name).write_bytes(b"")
        assert hadoop_checksums(scratch, names) == {".a.parquet.crc", ".d.crc"}
