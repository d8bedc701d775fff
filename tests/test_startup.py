"""Start-up: what a fresh process loads before it needs it.

Every CLI command and short script is a new process; pyarrow and numpy alone cost more than
delta-rs's whole open. ``import deltalog``, opening a table of JSON commits (its version,
protocol, metadata, schema) and ``deltalog describe`` of it must not import them; its files
still come out right afterwards.
Each check runs in a fresh interpreter and inspects ``sys.modules``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

#: Packages a start-up must not load; importlib.metadata (~20 ms with what it imports) looks up
#: plugin stores only when an installed distribution may declare one.
HEAVY = ("pyarrow", "numpy", "pandas", "importlib.metadata")

_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "part", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def _line(action: str, body: dict[str, object]) -> bytes:
    return orjson.dumps({action: body}) + b"\n"


def _add(path: str, part: str) -> bytes:
    return _line(
        "add",
        {
            "path": path,
            "partitionValues": {"part": part},
            "size": 100,
            "modificationTime": 1,
            "dataChange": True,
            "stats": '{"numRecords":1}',
        },
    )


def _json_table(root: Path) -> str:
    """A table of three JSON commits (no checkpoint): two adds, then one of them removed."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    first = (
        _line("commitInfo", {"timestamp": 1, "operation": "CREATE TABLE"})
        + _line("protocol", {"minReaderVersion": 1, "minWriterVersion": 2})
        + _line(
            "metaData",
            {
                "id": "startup-test",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": orjson.dumps(_SCHEMA).decode(),
                "partitionColumns": ["part"],
                "configuration": {},
                "createdTime": 1,
            },
        )
    )
    (log / f"{0:020d}.json").write_bytes(first)
    (log / f"{1:020d}.json").write_bytes(_add("part=a/1.parquet", "a") + _add("part=b/2", "b"))
    removed = {"path": "part=b/2", "deletionTimestamp": 2, "dataChange": True}
    (log / f"{2:020d}.json").write_bytes(_line("remove", removed))
    return str(root)


def _loaded_after(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; the heavy packages it had imported at the end."""
    names = "{m.split('.')[0] for m in sys.modules} | set(sys.modules)"
    child = f"{code}\nimport json, sys\nprint(json.dumps(sorted(({names}) & {set(HEAVY)!r})))"
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return list(orjson.loads(done.stdout.strip().splitlines()[-1]))


def test_import_deltalog_loads_no_pyarrow() -> None:
    assert _loaded_after("import deltalog\nfrom deltalog import DeltaTable, DeltaLogError") == []


def test_opening_a_json_table_loads_no_pyarrow(tmp_path: Path) -> None:
    uri = _json_table(tmp_path / "t")
    code = (
        "from deltalog import DeltaTable\n"
        f"t = DeltaTable({uri!r})\n"
        "assert t.version() == 2, t.version()\n"
        "assert t.metadata().id == 'startup-test'\n"
        "assert t.protocol().min_reader_version == 1\n"
        "assert t.schema().names == ['id', 'part']\n"
        "assert t.metadata().partition_columns == ['part']\n"
        "old = DeltaTable(" + repr(uri) + ", version=1)\n"
        "assert old.version() == 1\n"
    )
    assert _loaded_after(code) == []


def test_describe_loads_no_pyarrow(tmp_path: Path) -> None:
    uri = _json_table(tmp_path / "t")
    code = (
        "import contextlib, io, json\n"
        "from deltalog.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    assert main(['describe', {uri!r}, '--json']) == 0\n"
        "doc = json.loads(out.getvalue())\n"
        "assert (doc['version'], doc['numFiles'], doc['sizeInBytes']) == (2, 1, 100), doc\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['describe', {uri!r}]) == 0\n"
    )
    assert _loaded_after(code) == []


def test_the_files_of_a_table_opened_without_pyarrow_are_right(tmp_path: Path) -> None:
    """The merge deferred at open gives the live files (and tombstones) when asked for."""
    from deltalog import DeltaTable

    uri = _json_table(tmp_path / "t")
    table = DeltaTable(uri)
    assert (table.snapshot.num_files, table.snapshot.size_in_bytes) == (1, 100)
    assert not table.snapshot.file_state.is_merged  # counted without the Arrow merge
    assert table.files().column("path").to_pylist() == ["part=a/1.parquet"]
    assert table.snapshot.tombstones.column("path").to_pylist() == ["part=b/2"]
    assert table.snapshot.file_state.is_merged
    assert (table.snapshot.num_files, table.snapshot.size_in_bytes) == (1, 100)
    assert DeltaTable(uri, version=1).snapshot.num_files == 2
