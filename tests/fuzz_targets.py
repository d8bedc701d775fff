"""Fuzz targets for deltalog's parsers, shared by ``test_fuzz.py`` (bounded, in CI) and
``scripts/fuzz.py`` (long runs).

A target takes one input, ``(data, suffix)`` (the bytes of a file and its file-name suffix), and
checks a contract: the parser under test returns a value or raises an error from the library's
own tree (``deltalog.errors`` or ``checkpoints.errors``), never a bare ``KeyError``,
``TypeError``, ``ArrowInvalid``, ``RecursionError``..., and never hangs. Where two code paths
must agree (the columnar and the exact commit parser) or a value must survive a round trip,
the target checks that too.

Targets and their seed corpora (``tests/fuzz_corpus/<corpus>/``):

``commit``            ``parse_actions``, ``parse_commits`` and ``Action.to_line`` on one commit
``commit-table``      a table whose version 1 is the fuzzed commit: opened by ``DeltaTable``
                      with both replay paths, then checkpointed and opened again
``last-checkpoint``   ``parse_last_checkpoint``, and a table with a fuzzed ``_last_checkpoint``
``partition``         partition values (``type\\ntext``): parse, serialise, Hive paths
``predicate``         ``parse_predicate`` on SQL text, then validated and evaluated
``checkpoint``        ``read_checkpoint`` over a fuzzed Parquet or JSON checkpoint file
``checkpoint-table``  a table whose version 2 checkpoint is the fuzzed file, opened

An unexpected exception propagates unchanged (so hypothesis tells different bugs apart), with a
note naming the contract it broke.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import datetime as dt
import decimal
import faulthandler
import functools
import hashlib
import io
import itertools
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import assume
from hypothesis import strategies as st

import deltalog.log.replay as replay_module
from deltalog import DeltaTable
from deltalog.checkpoints.checksum import json_checksum
from deltalog.checkpoints.errors import CheckpointError, CheckpointFormatError
from deltalog.checkpoints.last_checkpoint import parse_last_checkpoint
from deltalog.checkpoints.reader import read_checkpoint
from deltalog.checkpoints.schema import ACTION_TYPES as CHECKPOINT_COLUMNS
from deltalog.errors import (
    DeltaLogError,
    InvalidPredicateError,
    InvalidSchemaError,
    MalformedCommitError,
    PartitionValueError,
)
from deltalog.log.commit_parser import ParsedCommits, parse_commits
from deltalog.log.file_actions import (
    ADD_FIELDS,
    FILES_SCHEMA,
    TOMBSTONE_FIELDS,
    TOMBSTONES_SCHEMA,
    adds_to_table,
    file_key,
    removes_to_table,
    scheme_prefix,
)
from deltalog.logstores import LocalLogStore, LogStore, MemoryLogStore
from deltalog.protocol.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    RemoveFile,
    parse_actions,
    serialize_actions,
)
from deltalog.protocol.partitions import (
    HIVE_NULL,
    check_partition_values,
    hive_escape,
    hive_partition_dir,
    hive_unescape,
    parse_hive_path,
    parse_partition_value,
    serialize_partition_value,
)
from deltalog.protocol.schema import (
    DataType,
    DecimalType,
    PrimitiveType,
    StructField,
    StructType,
    _parse_type,
)
from deltalog.stats.predicate_sql import parse_predicate
from deltalog.stats.predicates import matches, partition_table, validate

T = TypeVar("T")
Input = tuple[bytes, str]

CORPUS_DIR = Path(__file__).resolve().parent / "fuzz_corpus"
#: Hard limit on one target call; a hang fails with FuzzHang instead of stalling CI.
CALL_LIMIT_S = float(os.environ.get("DELTALOG_FUZZ_CALL_LIMIT", "30"))


# ============================================================================ infrastructure


class FuzzHang(AssertionError):
    """A target call did not return within its time limit."""


class _Alarm(BaseException):
    """Raised by the SIGALRM handler; a BaseException so that no ``except Exception`` eats it."""


class _Watchdog:
    """A daemon thread that ends the process when a call overstays by far.

    SIGALRM only interrupts the interpreter (and the regex engine, which checks for signals); a
    hang inside native code that released the GIL never returns to it. The watchdog then dumps
    every thread's stack and exits, so CI fails with a traceback instead of stalling.
    """

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.what = ""
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, what: str) -> None:
        self.what = what
        self.deadline = time.monotonic() + seconds
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="fuzz-watchdog", daemon=True)
            self._thread.start()

    def disarm(self) -> None:
        self.deadline = None

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            deadline = self.deadline
            if deadline is not None and time.monotonic() > deadline:
                sys.stderr.write(f"\nfuzz watchdog: {self.what} hangs in native code\n")
                faulthandler.dump_traceback(all_threads=True)
                os._exit(70)


_WATCHDOG = _Watchdog()


@contextlib.contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Fail with :class:`FuzzHang` when the body runs for longer than ``seconds``.

    pytest-timeout's own SIGALRM timer, if any, is saved and restored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise _Alarm

    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    _WATCHDOG.arm(seconds * 2 + 10, what)
    start = time.monotonic()
    try:
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Alarm:
        raise FuzzHang(f"{what} did not return within {seconds:g} s") from None
    finally:
        _WATCHDOG.disarm()
        signal.signal(signal.SIGALRM, previous)
        if outer_delay:
            left = max(outer_delay - (time.monotonic() - start), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)


def attempt(what: str, fn: Callable[[], T], allowed: tuple[type[BaseException], ...]) -> T | None:
    """``fn()``, or ``None`` when it raises one of ``allowed`` (whose message must render).

    Any other exception propagates unchanged, with a note naming the broken contract.
    """
    try:
        return fn()
    except allowed as exc:
        str(exc)  # a message that cannot be built is a bug too
        return None
    except FuzzHang:
        raise
    except Exception as exc:
        names = ", ".join(e.__name__ for e in allowed) or "nothing"
        exc.add_note(f"fuzz contract broken: {what} may raise only {names}")
        raise


def violation(message: str) -> AssertionError:
    """A contract broken without an exception (a disagreement, a lost round trip)."""
    return AssertionError(f"fuzz contract broken: {message}")


@dataclass(frozen=True)
class Target:
    """One fuzz target.

    Attributes:
        name: Its name (``scripts/fuzz.py --target``).
        corpus: Sub-directory of ``fuzz_corpus`` with its seeds and regression inputs.
        check: Runs the contract on one ``(data, suffix)`` input.
        strategy: Hypothesis strategy of inputs: structure-aware generation and mutated seeds.
        examples: Hypothesis examples per CI run.
    """

    name: str
    corpus: str
    check: Callable[[bytes, str], None]
    strategy: Callable[[], st.SearchStrategy[Input]]
    examples: int


def corpus_files(corpus: str) -> list[Path]:
    """Every seed and regression file of a corpus directory (sub-directories included)."""
    root = CORPUS_DIR / corpus
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "README.md")


def suffix_of(path: Path) -> str:
    """The suffix a corpus file is checked with (``.parquet``, ``.json``, ``.txt``...)."""
    return path.suffix


@functools.cache
def seeds(corpus: str) -> tuple[Input, ...]:
    """The corpus files as inputs (read once)."""
    return tuple((p.read_bytes(), suffix_of(p)) for p in corpus_files(corpus))


def save_crasher(target: Target, data: bytes, suffix: str, what: str) -> Path:
    """Write a failing input into the target's corpus, named by what it triggered (an
    exception or signal name)."""
    digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()[:10]
    path = CORPUS_DIR / target.corpus / f"crash-{target.name}-{what}-{digest}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _decode(data: bytes) -> str:
    """Text of an input; invalid UTF-8 becomes lone surrogates (which are worth testing too)."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# ============================================================================ tables


def _line(obj: Any) -> bytes:
    return orjson.dumps(obj)


SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "q", "type": "integer", "nullable": True, "metadata": {}},
        ],
    },
    separators=(",", ":"),
)
PARTITION_COLUMNS = ["p", "q"]


def _add(path: str, p: str | None, q: str | None, **more: Any) -> bytes:
    body = {
        "path": path,
        "partitionValues": {"p": p, "q": q},
        "size": 100,
        "modificationTime": 1700000000000,
        "dataChange": True,
        "stats": '{"numRecords":1}',
        **more,
    }
    return _line({"add": body})


def _info(version: int) -> bytes:
    return _line({"commitInfo": {"timestamp": 1700000000000 + version, "operation": "WRITE"}})


#: A small partitioned table: version 0 creates it with two files, 1 to 3 change it.
BASE_COMMITS: list[bytes] = [
    b"\n".join(
        [
            _info(0),
            _line({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
            _line(
                {
                    "metaData": {
                        "id": "fuzz-table",
                        "format": {"provider": "parquet", "options": {}},
                        "schemaString": SCHEMA_STRING,
                        "partitionColumns": PARTITION_COLUMNS,
                        "configuration": {},
                        "createdTime": 1700000000000,
                    }
                }
            ),
            _add("p=x/q=1/a.parquet", "x", "1"),
            _add("p=y/q=__HIVE_DEFAULT_PARTITION__/b.parquet", "y", None),
        ]
    )
    + b"\n",
    b"\n".join(
        [
            _info(1),
            _line(
                {
                    "remove": {
                        "path": "p=x/q=1/a.parquet",
                        "deletionTimestamp": 1700000000001,
                        "dataChange": True,
                        "partitionValues": {"p": "x", "q": "1"},
                        "size": 100,
                    }
                }
            ),
            _add(
                "p=x/q=2/c.parquet",
                "x",
                "2",
                deletionVector={
                    "storageType": "u",
                    "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
                    "offset": 4,
                    "sizeInBytes": 40,
                    "cardinality": 6,
                },
            ),
        ]
    )
    + b"\n",
    b"\n".join(
        [
            _info(2),
            _add("p=z/q=3/d%20e.parquet", "z", "3"),
            _line({"txn": {"appId": "app", "version": 7, "lastUpdated": 1700000000002}}),
        ]
    )
    + b"\n",
    b"\n".join([_info(3), _add("p=z/q=4/f.parquet", "z", "4")]) + b"\n",
]
FILES_AT = {
    1: ["p=x/q=2/c.parquet", "p=y/q=__HIVE_DEFAULT_PARTITION__/b.parquet"],
    2: ["p=x/q=2/c.parquet", "p=y/q=__HIVE_DEFAULT_PARTITION__/b.parquet", "p=z/q=3/d%20e.parquet"],
    3: [
        "p=x/q=2/c.parquet",
        "p=y/q=__HIVE_DEFAULT_PARTITION__/b.parquet",
        "p=z/q=3/d%20e.parquet",
        "p=z/q=4/f.parquet",
    ],
}
_TABLES = itertools.count()


def _commit_name(version: int) -> str:
    return f"{version:020d}.json"


CHECKPOINT_2 = "00000000000000000002.checkpoint.parquet"
V2_JSON_CHECKPOINT_2 = "00000000000000000002.checkpoint.00000000-0000-4000-8000-000000000000.json"


@contextlib.contextmanager
def memory_table(log_files: dict[str, bytes]) -> Iterator[str]:
    """A fresh ``memory://`` table whose ``_delta_log`` holds ``log_files``; yields its URI."""
    uri = f"memory://deltalog-fuzz-{os.getpid()}-{next(_TABLES)}"
    store, root = MemoryLogStore.from_uri(uri, {})
    try:
        for name, data in log_files.items():
            store.write(f"{root}/_delta_log/{name}", data, overwrite=True)
        yield uri
    finally:
        for status in store.list_tree(root):  # what the test wrote, and checkpoints
            store.delete(status.path)


@functools.cache
def base_checkpoint() -> tuple[bytes, bytes]:
    """deltalog's checkpoint of the base table at version 2, and its ``_last_checkpoint``."""
    files = {_commit_name(v): BASE_COMMITS[v] for v in range(3)}
    with memory_table(files) as uri:
        DeltaTable(uri, background_checkpoints=False).checkpoint()
        store, root = MemoryLogStore.from_uri(uri, {})
        data = store.read(f"{root}/_delta_log/{CHECKPOINT_2}")
        pointer = store.read(f"{root}/_delta_log/_last_checkpoint")
        store.delete(f"{root}/_delta_log/{CHECKPOINT_2}")
        store.delete(f"{root}/_delta_log/_last_checkpoint")
    return data, pointer


@functools.cache
def _sidecars() -> dict[str, bytes]:
    """The pristine V2 sidecar files of the checkpoint corpus, by name."""
    return {
        p.name: p.read_bytes() for p in corpus_files("checkpoint") if p.parent.name == "_sidecars"
    }


def _paths(table: DeltaTable) -> list[str]:
    return sorted(table.snapshot.paths().to_pylist())


def _map_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows with map columns as sorted pairs (key order is not part of a map's value).

    A partition column missing from ``partitionValues`` and one mapped to null both mean a null
    value (the columnar parser reads both as null), so null partition values are left out.
    """
    rows = table.to_pylist()
    for row in rows:
        if row.get("partition_values") is not None:
            row["partition_values"] = [kv for kv in row["partition_values"] if kv[1] is not None]
        for key in ("partition_values", "tags"):
            if row.get(key) is not None:
                row[key] = sorted(row[key], key=repr)
    return rows


# ============================================================================ commit target


def _check_parsed(fast: ParsedCommits, exact: list[Any]) -> None:
    """The columnar result equals the exact one, action for action."""
    file_actions = [a for a in exact if isinstance(a, AddFile | RemoveFile)]
    others = [a for a in exact if not isinstance(a, AddFile | RemoveFile | CommitInfo)]
    infos = [a for a in exact if isinstance(a, CommitInfo)]
    if [a for _, a in fast.other] != others:
        raise violation("the columnar parser's non-file actions differ from the exact parser's")
    if fast.last_commit_info != (infos[-1] if infos else None):
        raise violation("the columnar parser's commitInfo differs from the exact parser's")
    if fast.order != [isinstance(a, AddFile) for a in file_actions]:
        raise violation("the columnar parser's file action order differs from the exact one")
    if fast.adds.schema != FILES_SCHEMA or fast.removes.schema != TOMBSTONES_SCHEMA:
        raise violation("the columnar parser's tables do not have the files/tombstones schema")
    adds = adds_to_table([a for a in file_actions if isinstance(a, AddFile)])
    removes = removes_to_table([a for a in file_actions if isinstance(a, RemoveFile)])
    if _map_rows(fast.adds) != _map_rows(adds):
        raise violation("the columnar parser's add rows differ from the exact parser's")
    if _map_rows(fast.removes) != _map_rows(removes):
        raise violation("the columnar parser's remove rows differ from the exact parser's")


def check_commit(data: bytes, suffix: str = ".json") -> None:
    """Both commit parsers and the action round trip on one commit file."""
    with time_limit(CALL_LIMIT_S, "the commit parsers"):
        exact = attempt(
            "parse_actions",
            lambda: parse_actions(data, version=1, path="fuzz.json"),
            (MalformedCommitError,),
        )
        if exact is not None:
            # Replay turns file actions into Arrow tables: whatever parses must fit them.
            attempt(
                "adds_to_table",
                lambda: adds_to_table([a for a in exact if isinstance(a, AddFile)]),
                (),
            )
            attempt(
                "removes_to_table",
                lambda: removes_to_table([a for a in exact if isinstance(a, RemoveFile)]),
                (),
            )
            lines = attempt("Action.to_line", lambda: serialize_actions(exact), ())
            assert lines is not None
            again = attempt(
                "parse_actions(serialize_actions(...))", lambda: parse_actions(lines), ()
            )
            if again != exact:
                raise violation("actions changed in a serialize/parse round trip")
        for columns in (PARTITION_COLUMNS, None):
            fast = attempt(
                "parse_commits", functools.partial(parse_commits, [(1, data)], columns), ()
            )
            if fast is None:
                continue
            if exact is None:
                raise violation("the columnar parser accepted a commit the exact parser rejects")
            _check_parsed(fast, exact)


def _open_outcome(uri: str, *, exact: bool) -> Any:
    """What opening the table gives: its state, or the type of the DeltaLogError raised."""
    patch = (
        mock.patch.object(replay_module, "parse_commits", lambda commits, columns: None)
        if exact  # the columnar parser otherwise, also on logs small enough for the exact one
        else mock.patch.object(replay_module, "_EXACT_MAX_BYTES", -1)
    )
    with patch:
        table = attempt("DeltaTable()", lambda: DeltaTable(uri), (DeltaLogError,))
        if table is None:
            try:
                DeltaTable(uri)
            except DeltaLogError as exc:
                return type(exc)
        assert table is not None
        snap = table.snapshot
        state = (
            snap.version,
            snap.protocol,
            snap.metadata,
            _map_rows(table.files()),
            _map_rows(snap.tombstones),
            dict(snap.txns),
            dict(snap.domains),
            snap.timestamp,
        )
        if not exact:
            attempt("DeltaTable.schema()", table.schema, (DeltaLogError,))
            attempt("DeltaTable.history()", table.history, (DeltaLogError,))
        return state


def _without_extra(actions: Any) -> Any:
    """Actions (or a dict of them) without unknown fields, which checkpoints do not keep (nor
    do they keep ``metaData.format`` keys other than ``provider`` and ``options``)."""
    if isinstance(actions, dict):
        return {k: _without_extra(v) for k, v in actions.items()}
    if isinstance(actions, Metadata):
        known = {k: actions.format.get(k) for k in ("provider", "options")}
        actions = dataclasses.replace(
            actions, format={k: v for k, v in known.items() if v is not None}
        )
    return dataclasses.replace(actions, extra={})


def _check_checkpoint_round_trip(uri: str, state: Any) -> None:
    """A snapshot that opened can be checkpointed, and replays the same from the checkpoint."""
    table = DeltaTable(uri, background_checkpoints=False)
    written = attempt("DeltaTable.checkpoint()", table.checkpoint, (DeltaLogError, CheckpointError))
    if written is None:
        return
    again = attempt("DeltaTable() from its own checkpoint", lambda: DeltaTable(uri), ())
    assert again is not None
    version, protocol, metadata, files, _, txns, domains, _ = state
    snap = again.snapshot
    if snap.checkpoint_version != version:
        raise violation(f"the table did not open from its checkpoint of version {version}")
    key = repr
    if sorted(_map_rows(again.files()), key=key) != sorted(files, key=key):
        raise violation("the files replayed from deltalog's checkpoint differ")
    if (_without_extra(snap.protocol), _without_extra(snap.metadata)) != (
        _without_extra(protocol),
        _without_extra(metadata),
    ):
        raise violation("the protocol or metadata replayed from deltalog's checkpoint differ")
    if (_without_extra(dict(snap.txns)), _without_extra(dict(snap.domains))) != (
        _without_extra(txns),
        _without_extra(domains),
    ):
        raise violation("the txns or domains replayed from deltalog's checkpoint differ")


def _reference_paths(commits: list[bytes], root: str) -> list[str]:
    """Live file paths by a plain replay of the exact parser's actions, one key at a time."""
    prefix = scheme_prefix(root)
    live: dict[str, str] = {}
    for data in commits:
        for a in parse_actions(data):
            if isinstance(a, AddFile):
                live[file_key(a.path, a.dv_id, prefix)] = a.path
            elif isinstance(a, RemoveFile):
                live.pop(file_key(a.path, a.dv_id, prefix), None)
    return sorted(live.values())


def check_commit_table(data: bytes, suffix: str = ".json") -> None:
    """A table at version 1 = the fuzzed commit opens (or raises a DeltaLogError), the
    columnar replay agrees with the exact one, and the snapshot survives a checkpoint."""
    with time_limit(CALL_LIMIT_S, "DeltaTable over a fuzzed commit"):
        log = {_commit_name(0): BASE_COMMITS[0], _commit_name(1): data}
        with memory_table(log) as uri:
            fast = _open_outcome(uri, exact=False)
            exact = _open_outcome(uri, exact=True)
            if not isinstance(fast, type) and fast[0] != 1:
                raise violation(f"the table opened at version {fast[0]}, not 1")
            if fast != exact:
                raise violation(
                    f"columnar replay gives {_summary(fast)}, exact replay {_summary(exact)}"
                )
            if isinstance(fast, type):
                return
            paths = sorted(row["path"] for row in fast[3])
            if paths != _reference_paths([BASE_COMMITS[0], data], uri):
                raise violation(f"replay keeps {paths}, a plain replay of the actions differs")
            _check_checkpoint_round_trip(uri, fast)


def _summary(outcome: Any) -> str:
    if isinstance(outcome, type):
        return outcome.__name__
    return f"version {outcome[0]} with files {[r['path'] for r in outcome[3]]}"


# ============================================================================ _last_checkpoint


def check_last_checkpoint(data: bytes, suffix: str = "") -> None:
    """``parse_last_checkpoint``, and a table that must open whatever its pointer says."""
    with time_limit(CALL_LIMIT_S, "_last_checkpoint"):
        parsed = attempt(
            "parse_last_checkpoint", lambda: parse_last_checkpoint(data), (CheckpointFormatError,)
        )
        if parsed is not None:
            for name in ("version", "size", "parts", "size_in_bytes", "num_of_add_files"):
                value = getattr(parsed, name)
                ok = value is None and name != "version"
                if not ok and (type(value) is not int or value < 0):
                    raise violation(f"_last_checkpoint parsed with {name}={value!r}")
        checkpoint, _ = base_checkpoint()
        log = {_commit_name(v): BASE_COMMITS[v] for v in range(4)}
        log[CHECKPOINT_2] = checkpoint
        log["_last_checkpoint"] = data
        with memory_table(log) as uri:
            table = attempt(
                "DeltaTable() with a fuzzed _last_checkpoint", lambda: DeltaTable(uri), ()
            )
            assert table is not None
            if table.version() != 3:
                raise violation(f"the table opened at version {table.version()}, not 3")
            if _paths(table) != FILES_AT[3]:
                raise violation(f"the table opened with files {_paths(table)}")


# ============================================================================ partition values

PRIMITIVE_PARTITION_TYPES = [
    "string",
    "long",
    "integer",
    "short",
    "byte",
    "float",
    "double",
    "boolean",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "decimal(10,2)",
    "decimal(38,18)",
    "decimal(1,0)",
    "decimal(5,5)",
]
_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}


def partition_type(text: str) -> DataType:
    """The Delta type a partition input names (JSON for nested types); unknown names are kept
    as primitive types so the parser's own refusal is exercised."""
    try:
        obj = orjson.loads(text) if text.startswith(("{", "[", '"')) else text
    except orjson.JSONDecodeError:
        return PrimitiveType(text)
    parsed = attempt("schema type parser", lambda: _parse_type(obj), (InvalidSchemaError,))
    return parsed if parsed is not None else PrimitiveType(text)


def _value_fits(value: Any, t: DataType) -> bool:
    if isinstance(t, DecimalType):
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            return False
        _, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        integer_digits = len(digits) + exponent if value else 0
        return -exponent <= t.scale and integer_digits <= t.precision - t.scale
    assert isinstance(t, PrimitiveType)
    name = t.name
    if name in _INT_RANGES:
        lo, hi = _INT_RANGES[name]
        return type(value) is int and lo <= value <= hi
    expected: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: type(v) is str and v != "" and _utf8(v),
        "float": lambda v: type(v) is float,
        "double": lambda v: type(v) is float,
        "boolean": lambda v: type(v) is bool,
        "binary": lambda v: type(v) is bytes,
        "date": lambda v: type(v) is dt.date,
        "timestamp": lambda v: type(v) is dt.datetime and v.utcoffset() == dt.timedelta(0),
        "timestamp_ntz": lambda v: type(v) is dt.datetime and v.tzinfo is None,
    }
    return expected[name](value)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b) and type(a) is type(b)


def check_partition(data: bytes, suffix: str = ".txt") -> None:
    """Partition values (input ``type\\ntext``): parse, serialise, validate, Hive paths."""
    head, _, rest = data.partition(b"\n")
    type_text, text = _decode(head), _decode(rest)
    with time_limit(CALL_LIMIT_S, "the partition value parsers"):
        t = partition_type(type_text)
        value = attempt(
            "parse_partition_value", lambda: parse_partition_value(text, t), (PartitionValueError,)
        )
        parsed_ok = value is not None or text == ""
        if value is not None:
            if not _value_fits(value, t):
                raise violation(f"{text!r} parsed as {t.to_json()} gives {value!r}")
            written = attempt(
                "serialize_partition_value(parse_partition_value(text))",
                lambda: serialize_partition_value(value, t),
                (),
            )
            back = attempt(
                "parse_partition_value(serialize_partition_value(value))",
                lambda: parse_partition_value(written, t),
                (),
            )
            if not _same_value(back, value):
                raise violation(f"{value!r} became {back!r} in a serialise/parse round trip")
        kept = attempt(
            "serialize_partition_value(text)",
            lambda: serialize_partition_value(text, t),
            (PartitionValueError,),
        )
        if text and (kept is not None) != parsed_ok:
            raise violation("serialize_partition_value and parse_partition_value disagree")
        schema = StructType((StructField("c", t), StructField("v", PrimitiveType("long"))))
        attempt(
            "check_partition_values",
            lambda: check_partition_values({"c": text}, schema, ["c"]),
            (PartitionValueError,),
        )
        attempt(
            "check_partition_values with a column missing from the schema",
            lambda: check_partition_values({text: text}, schema, [text]),
            (PartitionValueError,),
        )
        attempt("hive_unescape", lambda: hive_unescape(text), (PartitionValueError,))
        attempt("parse_hive_path", lambda: parse_hive_path(text), (PartitionValueError,))
        if hive_unescape(hive_escape(text)) != text:
            raise violation("hive_unescape(hive_escape(text)) != text")
        value = None if text == HIVE_NULL else text
        values = {text: value, "k": value}
        back_values = parse_hive_path(hive_partition_dir(values) + "/part-0.parquet")
        if back_values != values:
            raise violation(f"Hive directory round trip gives {back_values!r} for {values!r}")


# ============================================================================ predicates

PREDICATE_SCHEMA = StructType(
    tuple(
        StructField(name, _parse_type(type_name))
        for name, type_name in [
            ("s", "string"),
            ("i", "integer"),
            ("l", "long"),
            ("b", "byte"),
            ("sh", "short"),
            ("f", "float"),
            ("d", "double"),
            ("bo", "boolean"),
            ("dt", "date"),
            ("ts", "timestamp"),
            ("ntz", "timestamp_ntz"),
            ("dec", "decimal(10,2)"),
            ("bin", "binary"),
            ("date", "date"),
            ("v", "long"),
        ]
    )
)
PREDICATE_COLUMNS = [f.name for f in PREDICATE_SCHEMA.fields if f.name != "v"]
_PREDICATE_ROWS = [
    {
        "s": "a'b",
        "i": "1",
        "l": "-5",
        "b": "7",
        "sh": "300",
        "f": "1.5",
        "d": "NaN",
        "bo": "true",
        "dt": "2024-01-01",
        "ts": "2024-01-01T10:00:00.000000Z",
        "ntz": "2024-01-01 10:00:00",
        "dec": "12.34",
        "bin": "xyz",
        "date": "1999-12-31",
    },
    dict.fromkeys(PREDICATE_COLUMNS),
    {c: "" for c in PREDICATE_COLUMNS} | {"s": "zz", "i": "-2147483648", "d": "-Infinity"},
]


@functools.cache
def _predicate_rows() -> pa.Table:
    return partition_table(_PREDICATE_ROWS, PREDICATE_SCHEMA, PREDICATE_COLUMNS)


def check_predicate(data: bytes, suffix: str = ".sql") -> None:
    """``parse_predicate`` on SQL text; what parses is printed, re-parsed and evaluated."""
    text = _decode(data)
    with time_limit(CALL_LIMIT_S, "the SQL predicate parser"):
        predicate = attempt(
            "parse_predicate", lambda: parse_predicate(text), (InvalidPredicateError,)
        )
        if predicate is None:
            return
        sql = attempt("str(predicate)", lambda: str(predicate), ())
        assert sql is not None
        again = attempt("parse_predicate(str(predicate))", lambda: parse_predicate(sql), ())
        if str(again) != sql:
            raise violation(f"{sql!r} parses back as {str(again)!r}")
        valid = attempt(
            "validate",
            lambda: validate(predicate, PREDICATE_SCHEMA, PREDICATE_COLUMNS) or True,
            (InvalidPredicateError, PartitionValueError),
        )
        if valid:
            mask = attempt("matches", lambda: matches(predicate, _predicate_rows()), ())
            assert mask is not None
            if mask.type != pa.bool_() or len(mask) != len(_PREDICATE_ROWS) or mask.null_count:
                raise violation(f"matches() gave {mask!r}")


# ============================================================================ checkpoints

_LOCAL_ROOT: list[str] = []


def _local_root() -> str:
    """A temporary table root (removed at exit) whose log already holds the sidecars."""
    if not _LOCAL_ROOT:
        root = tempfile.mkdtemp(prefix="deltalog-fuzz-")
        atexit.register(shutil.rmtree, root, True)
        sidecars = Path(root, "_delta_log", "_sidecars")
        sidecars.mkdir(parents=True)
        for name, content in _sidecars().items():
            (sidecars / name).write_bytes(content)
        _LOCAL_ROOT.append(root)
    return _LOCAL_ROOT[0]


def _checkpoint_name(suffix: str) -> str:
    return V2_JSON_CHECKPOINT_2 if suffix == ".json" else CHECKPOINT_2


_READS = [
    (tuple(f for f in ADD_FIELDS if f != "stats"), TOMBSTONE_FIELDS),  # replay
    (("stats",), ()),  # the lazy statistics loader
    (("path", "partitionValues", "deletionVector"), ("path",)),
]


def _check_checkpoint_data(
    data: Any, add_fields: Sequence[str], remove_fields: Sequence[str]
) -> None:
    for name, body in data.actions:
        if not isinstance(name, str) or not isinstance(body, dict):
            raise violation(f"read_checkpoint returned the action {(name, body)!r:.200}")
    for tables, fields, full in (
        (data.adds, add_fields, "add"),
        (data.removes, remove_fields, "remove"),
    ):
        expected = pa.schema([CHECKPOINT_COLUMNS[full].field(f) for f in fields])
        for table in tables:
            if not table.schema.equals(expected):
                raise violation(f"read_checkpoint returned {full} rows with schema {table.schema}")


def check_checkpoint(data: bytes, suffix: str = ".parquet") -> None:
    """``read_checkpoint`` over one fuzzed checkpoint file, on a memory and a local store."""
    name = _checkpoint_name(suffix)
    stores: list[tuple[LogStore, str]] = [
        (MemoryLogStore(), "memory://fuzz/_delta_log"),
        (LocalLogStore(), os.path.join(_local_root(), "_delta_log")),
    ]
    with time_limit(CALL_LIMIT_S, "read_checkpoint"):
        for store, log in stores:
            path = LogStore.join(log, name)
            if isinstance(store, LocalLogStore):  # plain writes: no fsync per example
                Path(path).write_bytes(data)
            else:
                for n, content in _sidecars().items():
                    store.write(LogStore.join(log, "_sidecars", n), content)
                store.write(path, data)
            for add_fields, remove_fields in _READS:
                read = functools.partial(
                    read_checkpoint,
                    store,
                    [path],
                    add_fields=add_fields,
                    remove_fields=remove_fields,
                )
                result = attempt("read_checkpoint", read, (CheckpointError,))
                if result is not None:
                    _check_checkpoint_data(result, add_fields, remove_fields)
            store.delete(path)


def check_checkpoint_table(data: bytes, suffix: str = ".parquet") -> None:
    """A table whose version 2 checkpoint is the fuzzed file opens at version 2 (falling back
    to the commits when the checkpoint is unreadable) or raises a DeltaLogError."""
    _, pointer = base_checkpoint()
    log = {_commit_name(v): BASE_COMMITS[v] for v in range(3)}
    log |= {f"_sidecars/{n}": content for n, content in _sidecars().items()}
    log[_checkpoint_name(suffix)] = data
    log["_last_checkpoint"] = pointer
    with time_limit(CALL_LIMIT_S, "DeltaTable over a fuzzed checkpoint"), memory_table(log) as uri:
        table = attempt(
            "DeltaTable() over a damaged checkpoint", lambda: DeltaTable(uri), (DeltaLogError,)
        )
        if table is None:
            return
        if table.version() != 2:
            raise violation(f"the table opened at version {table.version()}, not 2")
        attempt("DeltaTable.files()", table.files, (DeltaLogError,))
        if table.snapshot.checkpoint_version is None and _paths(table) != FILES_AT[2]:
            raise violation(f"replay from the commits gives files {_paths(table)}")


# ============================================================================ generation

_ARABIC_INDIC_DIGITS = str.maketrans("0123456789", "".join(map(chr, range(0x660, 0x66A))))
#: Integers around every boundary a parser may trip on (int32, int64, uint64, beyond).
INT_EDGES = [
    0,
    1,
    -1,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64 - 1,
    2**64,
    10**30,
]
TRICKY_STRINGS = [
    "",
    " ",
    "\x00",
    "\ud800",
    "\udfff\ud800",
    "é",
    "日本",
    "😀",
    "\u2028",
    "%",
    "%FF",
    "%2",
    "%C3%A9",
    "a=b/c",
    HIVE_NULL,
    "null",
    "NaN",
    "a" * 300,
    "\\",
    '"',
    "\n",
    "'",
    "`",
    "12".translate(_ARABIC_INDIC_DIGITS),
]


class Raw(bytes):
    """A JSON token written as is (NaN, a lone surrogate escape, deep nesting...)."""


def _deep(n: int) -> Raw:
    return Raw(b"[" * n + b"]" * n)


RAW_TOKENS = [
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e400",
    b"-0",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\x41"',
    b'"\\u12"',
    b'"unterminated',
    b"tru",
    b"True",
    b'"\xff"',
    b'"\xed\xa0\x80"',
    b'"\xc0\x80"',
    b'{"a":1,"a":2}',
    b"1" * 400,
    b"{}",
    b"[]",
]


def dump(value: Any) -> bytes:
    """JSON bytes of a generated value (``Raw`` tokens verbatim, lone surrogates as raw bytes)."""
    if isinstance(value, Raw):
        return bytes(value)
    if value is None:
        return b"null"
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if isinstance(value, int | float):
        return json.dumps(value).encode()
    if isinstance(value, str):
        return _encode(json.dumps(value, ensure_ascii=False))
    if isinstance(value, list):
        return b"[" + b",".join(dump(v) for v in value) + b"]"
    if isinstance(value, dict):
        return b"{" + b",".join(dump(str(k)) + b":" + dump(v) for k, v in value.items()) + b"}"
    raise TypeError(type(value))


longs = st.one_of(st.integers(0, 10**6), st.sampled_from(INT_EDGES), st.integers())
texts = st.one_of(st.text(max_size=12), st.sampled_from(TRICKY_STRINGS))
#: Values a valid log may hold: Delta longs, text that is valid Unicode.
valid_longs = st.one_of(
    st.integers(0, 10**6),
    st.sampled_from([i for i in INT_EDGES if -(2**63) <= i < 2**63]),
    st.integers(-(2**63), 2**63 - 1),
)
valid_texts = texts.filter(lambda t: "\ud800" not in t and "\udfff" not in t)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    longs,
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
    st.sampled_from(RAW_TOKENS).map(Raw),
    st.sampled_from([250, 254, 255, 256, 600, 1000, 1023, 1100]).map(_deep),
)
json_values = st.recursive(
    scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=8,
)

paths = st.one_of(
    st.sampled_from(
        [
            "p=x/q=1/a.parquet",
            "p=y/q=__HIVE_DEFAULT_PARTITION__/b.parquet",
            "p=x/q=2/c.parquet",
            "new.parquet",
            "/abs/x.parquet",
            "file:/abs/x.parquet",
            "file:///abs/x.parquet",
            "s3://bucket/x.parquet",
            "a%20b.parquet",
            "a b.parquet",
        ]
    ),
    valid_texts,
)
partition_values = st.one_of(
    st.fixed_dictionaries(
        {"p": st.sampled_from(["x", "y", None]), "q": st.sampled_from(["1", "2", None])}
    ),
    st.dictionaries(
        st.sampled_from(["p", "q", "part", "r"]),
        st.one_of(st.none(), st.sampled_from(["x", "1", "", HIVE_NULL]), valid_texts),
        max_size=3,
    ),
)
string_maps = st.dictionaries(valid_texts, st.one_of(st.none(), valid_texts), max_size=3)
deletion_vectors = st.fixed_dictionaries(
    {
        "storageType": st.sampled_from(["u", "i", "p"]),
        "pathOrInlineDv": valid_texts,
        "sizeInBytes": valid_longs,
        "cardinality": valid_longs,
    },
    optional={"offset": valid_longs, "maxRowIndex": valid_longs},
)
stats = st.one_of(
    st.sampled_from(['{"numRecords":1}', "{}", "not json"]),
    json_values.map(lambda v: _decode(dump(v))),
)
schema_strings = st.one_of(
    st.sampled_from([SCHEMA_STRING, "{}", "not json", '{"type":"struct","fields":[]}', "[]"]),
    json_values.map(lambda v: _decode(dump(v))),
)
FEATURES = [
    "deletionVectors",
    "timestampNtz",
    "columnMapping",
    "v2Checkpoint",
    "appendOnly",
    "nope",
]

#: Per action: its fields, each with a strategy of well-typed values.
ACTION_FIELDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "add": {
        "path": paths,
        "partitionValues": partition_values,
        "size": valid_longs,
        "modificationTime": valid_longs,
        "dataChange": st.booleans(),
        "stats": stats,
        "tags": string_maps,
        "deletionVector": deletion_vectors,
        "baseRowId": valid_longs,
        "defaultRowCommitVersion": valid_longs,
        "clusteringProvider": valid_texts,
    },
    "remove": {
        "path": paths,
        "deletionTimestamp": valid_longs,
        "dataChange": st.booleans(),
        "extendedFileMetadata": st.booleans(),
        "partitionValues": partition_values,
        "size": valid_longs,
        "tags": string_maps,
        "deletionVector": deletion_vectors,
        "baseRowId": valid_longs,
        "defaultRowCommitVersion": valid_longs,
        "stats": stats,
    },
    "cdc": {
        "path": paths,
        "partitionValues": partition_values,
        "size": valid_longs,
        "dataChange": st.booleans(),
        "tags": string_maps,
    },
    "metaData": {
        "id": valid_texts,
        "name": valid_texts,
        "description": valid_texts,
        "format": st.fixed_dictionaries({"provider": valid_texts, "options": string_maps}),
        "schemaString": schema_strings,
        "partitionColumns": st.lists(st.sampled_from(["p", "q", "id", "zz"]), max_size=3),
        "configuration": st.dictionaries(
            st.sampled_from(
                [
                    "delta.enableInCommitTimestamps",
                    "delta.checkpointInterval",
                    "delta.appendOnly",
                    "delta.deletedFileRetentionDuration",
                ]
            )
            | valid_texts,
            st.one_of(
                st.none(), st.sampled_from(["true", "false", "0", "interval 1 day"]), valid_texts
            ),
            max_size=3,
        ),
        "createdTime": valid_longs,
    },
    "protocol": {
        "minReaderVersion": st.one_of(st.sampled_from([1, 2, 3, 4]), valid_longs),
        "minWriterVersion": st.one_of(st.sampled_from([2, 5, 7, 8]), valid_longs),
        "readerFeatures": st.lists(st.sampled_from(FEATURES), max_size=3),
        "writerFeatures": st.lists(st.sampled_from(FEATURES), max_size=3),
    },
    "commitInfo": {
        "timestamp": valid_longs,
        "inCommitTimestamp": valid_longs,
        "operation": valid_texts,
        "operationParameters": json_values,
        "readVersion": valid_longs,
        "isBlindAppend": st.booleans(),
    },
    "txn": {"appId": valid_texts, "version": valid_longs, "lastUpdated": valid_longs},
    "domainMetadata": {
        "domain": valid_texts,
        "configuration": valid_texts,
        "removed": st.booleans(),
    },
    "checkpointMetadata": {"version": valid_longs, "tags": string_maps},
    "sidecar": {
        "path": paths,
        "sizeInBytes": valid_longs,
        "modificationTime": valid_longs,
        "tags": string_maps,
    },
}
ACTION_KEYS = st.one_of(
    st.sampled_from(list(ACTION_FIELDS)),
    st.sampled_from(["add", "remove", "commitInfo"]),
    st.sampled_from(["unknownAction", "", "Add", "add "]),
)


#: Fields an action cannot do without.
REQUIRED = {
    "add": {"path", "partitionValues", "size", "modificationTime", "dataChange"},
    "remove": {"path"},
    "cdc": {"path", "partitionValues", "size"},
    "metaData": {"id"},
    "protocol": {"minReaderVersion", "minWriterVersion"},
    "txn": {"appId", "version"},
    "domainMetadata": {"domain", "configuration"},
    "checkpointMetadata": {"version"},
    "sidecar": {"path", "sizeInBytes", "modificationTime"},
}
#: Per noise level: how a field is written, and the shape of the line.
_FIELD_MODES = {
    0: ["good"] * 5 + ["absent"],
    1: ["good"] * 30 + ["absent", "null", "junk"],
    2: ["good"] * 6 + ["absent", "null", "junk"],
}
_SHAPES = {
    0: ["plain"],
    1: ["plain"] * 30 + ["junk body", "two actions", "null sibling", "junk"],
    2: ["plain"] * 8 + ["junk body", "two actions", "null sibling", "junk"],
}


@st.composite
def action_objects(draw: st.DrawFn, noise: int = 2) -> Any:
    """One decoded log line: a plausible action, with fields wrong or missing as often as
    ``noise`` says (0: a valid action, 1: rarely something wrong, 2: often)."""
    key = draw(ACTION_KEYS if noise else st.sampled_from([*ACTION_FIELDS, "add", "remove"]))
    body: dict[str, Any] = {}
    for name, good in ACTION_FIELDS.get(key, {}).items():
        mode = draw(st.sampled_from(_FIELD_MODES[noise]))
        if mode == "good" or (noise == 0 and name in REQUIRED.get(key, ())):
            body[name] = draw(good)
        elif mode == "null":
            body[name] = None
        elif mode == "junk":
            body[name] = draw(json_values)
    if noise and draw(st.integers(0, 9 * noise)) == 0:
        body.update(draw(st.dictionaries(texts, json_values, min_size=1, max_size=2)))
    if draw(st.integers(0, 4)) == 0:
        body = dict(draw(st.permutations(list(body.items()))))
    shape = draw(st.sampled_from(_SHAPES[noise]))
    if shape == "plain":
        return {key: body}
    if shape == "junk body":
        return {key: draw(json_values)}
    if shape == "two actions":
        return {key: body, draw(ACTION_KEYS): draw(st.one_of(json_values, st.just({})))}
    if shape == "null sibling":
        return {key: body, draw(ACTION_KEYS): None}
    return draw(json_values)


@st.composite
def commit_files(draw: st.DrawFn) -> Input:
    """A commit file of generated lines, with line-level oddities (padding, CRLF, blanks)."""
    noise = draw(st.sampled_from([0, 1, 1, 2, 2]))
    lines = [dump(obj) for obj in draw(st.lists(action_objects(noise), max_size=6))]
    if lines and draw(st.integers(0, 5)) == 0:
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = draw(st.sampled_from([b" ", b"\t", b"\xef\xbb\xbf"])) + lines[i]
    sep = draw(st.sampled_from([b"\n"] * 6 + [b"\r\n", b"\n\n", b"\n \n"]))
    end = draw(st.sampled_from([b"\n", b"", b"\n\n", b"\r\n"]))
    return sep.join(lines) + end, ".json"


MUTATION_TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b",",
    b":",
    b"\n",
    b"\r",
    b" ",
    b"null",
    b"true",
    b"NaN",
    b"Infinity",
    b"-",
    b"0",
    b"18446744073709551615",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"1e999",
    b"\\ud800",
    b"\\",
    b"\xff",
    b"\x00",
    b"\xed\xa0\x80",
    b'{"add":{',
    b'{"remove":{',
    b'{"commitInfo":',
    b'"path":',
    b'"partitionValues":{',
    b'"deletionVector":{',
    b'"tags":',
    b'"size":',
    b'"version":',
    b"PAR1",
    b"\x00\x00\x00\x00",
    b"\xff\xff\xff\x7f",
]


@st.composite
def mutated(draw: st.DrawFn, corpus: str) -> Input:
    """A corpus seed with one to four byte-level mutations (footer-biased for Parquet)."""
    pool = seeds(corpus)
    assume(pool)
    data, suffix = draw(st.sampled_from(pool))
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        n = len(buf)
        op = draw(
            st.sampled_from(
                [
                    "flip",
                    "byte",
                    "delete",
                    "truncate",
                    "insert",
                    "duplicate",
                    "splice",
                    "tail",
                    "lines",
                ]
            )
        )
        if op in ("flip", "byte", "tail") and n:
            low = max(0, n - 256) if op == "tail" else 0
            i = draw(st.integers(low, n - 1))
            if op == "byte":
                buf[i] = draw(st.integers(0, 255))
            else:
                buf[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            del buf[i : i + draw(st.integers(1, 64))]
        elif op == "truncate":
            del buf[draw(st.integers(0, n)) :]
        elif op == "insert":
            i = draw(st.integers(0, n))
            buf[i:i] = draw(st.sampled_from(MUTATION_TOKENS))
        elif op == "duplicate" and n:
            i = draw(st.integers(0, n - 1))
            buf[i:i] = buf[i : i + draw(st.integers(1, 256))]
        elif op == "splice":
            other, _ = draw(st.sampled_from(pool))
            j = draw(st.integers(0, len(other)))
            chunk = other[j : j + draw(st.integers(1, 512))]
            i = draw(st.integers(0, n))
            buf[i : i + draw(st.integers(0, 64))] = chunk
        elif op == "lines":
            lines = bytes(buf).split(b"\n")
            buf = bytearray(b"\n".join(draw(st.permutations(lines))))
    return bytes(buf), suffix


# -------------------------------------------------------------------- _last_checkpoint inputs


@st.composite
def last_checkpoint_files(draw: st.DrawFn) -> Input:
    fields = {
        "version": st.one_of(st.integers(0, 5), longs),
        "size": longs,
        "parts": st.one_of(st.integers(1, 3), longs),
        "sizeInBytes": longs,
        "numOfAddFiles": longs,
        "checkpointSchema": json_values,
        "v2Checkpoint": json_values,
        "tags": string_maps,
    }
    obj: dict[str, Any] = {}
    for name, good in fields.items():
        mode = draw(st.sampled_from(["good"] * 3 + ["absent"] * 3 + ["null", "junk"]))
        if mode == "good":
            obj[name] = draw(good)
        elif mode == "null":
            obj[name] = None
        elif mode == "junk":
            obj[name] = draw(json_values)
    checksum = draw(st.sampled_from(["none", "right", "wrong", "junk"]))
    if checksum == "right":
        with contextlib.suppress(Exception):  # values orjson cannot hold (NaN, deep nesting)
            obj["checksum"] = json_checksum(orjson.loads(dump(obj)))
    elif checksum == "wrong":
        obj["checksum"] = "0" * 32
    elif checksum == "junk":
        obj["checksum"] = draw(json_values)
    return dump(obj), ""


# -------------------------------------------------------------------- partition inputs

_TIMESTAMP_FORMATS = [
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S.%fZ",
    "%Y-%m-%dT%H:%M:%S+01:00",
    "%Y-%m-%d %H:%M:%S-0530",
    "%Y-%m-%d %H:%M:%S+24:00",
    "%Y-%m-%d",
]


def _value_texts(type_name: str) -> st.SearchStrategy[str]:
    """Text that is (or is almost) a serialised value of the type."""
    if type_name in _INT_RANGES:
        lo, hi = _INT_RANGES[type_name]
        return st.one_of(
            st.integers(lo - 2, hi + 2).map(str),
            st.sampled_from([str(lo), str(hi), " 1", "1_000", "+1", "0x1", "1.0", "9" * 5000]),
        )
    if type_name in ("float", "double"):
        return st.one_of(
            st.floats().map(repr),
            st.sampled_from(["NaN", "Infinity", "-Infinity", "inf", "1e309", "-0", "1_0", "0x1p3"]),
        )
    if type_name == "boolean":
        return st.sampled_from(["true", "false", "TRUE", "False", "yes", "1", "tru"])
    if type_name == "date":
        return st.one_of(
            st.dates().map(dt.date.isoformat),
            st.sampled_from(["2024-02-30", "2024-W01-1", "20240101", "+12024-01-01", "0000-01-01"]),
        )
    if type_name in ("timestamp", "timestamp_ntz"):
        return st.one_of(
            st.builds(
                lambda d, f: d.strftime(f), st.datetimes(), st.sampled_from(_TIMESTAMP_FORMATS)
            ),
            st.sampled_from(
                [
                    "0001-01-01 00:00:00+01:00",
                    "9999-12-31 23:59:59-01:00",
                    "2024-01-01 24:00:00",
                    "2024-01-01 10:00:00.1234567891",
                    "2024-01-01 10:00:00\n",
                    "2024-01-01 10:00:00".translate(_ARABIC_INDIC_DIGITS),
                    "2024-01-01 10:00:00+99:99",
                ]
            ),
        )
    if type_name.startswith("decimal"):
        return st.one_of(
            st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
            st.decimals().map(str),
            st.sampled_from(
                ["1E+5", "1e-3", "-0.00", "0E+10", "NaN", "sNaN", "1" * 40, "0.1", "12345678.9"]
            ),
        )
    return texts


PARTITION_TYPE_NAMES = st.one_of(
    st.sampled_from(PRIMITIVE_PARTITION_TYPES),
    st.sampled_from(
        [
            "void",
            "variant",
            "decimal(40,2)",
            "decimal(2,5)",
            "nope",
            '{"type":"array","elementType":"string","containsNull":true}',
            '{"type":"struct","fields":[{"name":"a","type":"long"}]}',
            '{"type":"map"}',
            '{"type":"struct","fields":[1]}',
        ]
    ),
)


_ESCAPES = st.integers(0, 255).map(lambda b: f"%{b:02X}")


@st.composite
def partition_inputs(draw: st.DrawFn) -> Input:
    type_name = draw(PARTITION_TYPE_NAMES)
    text = draw(
        st.one_of(
            _value_texts(type_name),
            st.sampled_from(TRICKY_STRINGS),
            st.text(),
            st.lists(st.one_of(_ESCAPES, texts, st.just("/"), st.just("=")), max_size=6).map(
                "".join
            ),
        )
    )
    return _encode(type_name) + b"\n" + _encode(text), ".txt"


# -------------------------------------------------------------------- predicate inputs

_PRED_NAMES = st.sampled_from([*PREDICATE_COLUMNS, "v", "DATE", "`weird``name`", "`a b`", "nope"])
_PRED_LITERALS = st.one_of(
    st.sampled_from(
        [
            "'a''b'",
            "'x'",
            "''",
            "1",
            "-5",
            "1.5",
            "1e3",
            ".5",
            "TRUE",
            "false",
            "NULL",
            "DATE '2024-01-01'",
            "TIMESTAMP '2024-01-01 10:00:00'",
            "'2024-01-01T10:00:00Z'",
            "'NaN'",
            "'9999999999'",
            "99999999999999999999",
            "'\\ud800'",
        ]
    ),
    st.integers().map(str),
    texts.map(lambda s: "'" + s.replace("'", "''") + "'"),
)


def _predicate_tree(depth: int) -> st.SearchStrategy[str]:
    comparison = st.one_of(
        st.builds(
            lambda n, op, lit: f"{n} {op} {lit}",
            _PRED_NAMES,
            st.sampled_from(["=", "==", "!=", "<>", "<", "<=", ">", ">=", "<=>"]),
            _PRED_LITERALS,
        ),
        st.builds(lambda lit, n: f"{lit} < {n}", _PRED_LITERALS, _PRED_NAMES),
        st.builds(
            lambda n, neg, lits: f"{n} {neg}IN ({', '.join(lits)})",
            _PRED_NAMES,
            st.sampled_from(["", "NOT "]),
            st.lists(_PRED_LITERALS, min_size=1, max_size=3),
        ),
        st.builds(lambda n, neg: f"{n} IS {neg}NULL", _PRED_NAMES, st.sampled_from(["", "NOT "])),
        st.builds(
            lambda n, a, b: f"{n} BETWEEN {a} AND {b}", _PRED_NAMES, _PRED_LITERALS, _PRED_LITERALS
        ),
    )
    if depth == 0:
        return comparison
    inner = _predicate_tree(depth - 1)
    return st.one_of(
        comparison,
        inner.map(lambda e: f"NOT {e}"),
        inner.map(lambda e: f"({e})"),
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, st.sampled_from(["AND", "or"]), inner),
    )


_SQL_TOKENS = [
    "(",
    ")",
    "'",
    "`",
    ",",
    "=",
    "<",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "BETWEEN",
    "DATE",
    "s",
    "i",
    "1",
    "'x'",
    "-",
]


@st.composite
def predicate_inputs(draw: st.DrawFn) -> Input:
    kind = draw(st.sampled_from(["tree"] * 4 + ["nested", "soup", "text"]))
    if kind == "tree":
        text = draw(_predicate_tree(2))
    elif kind == "nested":
        n = draw(st.sampled_from([10, 200, 500, 1000, 5000]))
        wrap = draw(st.sampled_from(["paren", "not", "both"]))
        core = "s = 'a'"
        if wrap == "paren":
            text = "(" * n + core + ")" * n
        elif wrap == "not":
            text = "NOT " * n + core
        else:
            text = "(NOT " * n + core + ")" * n
    elif kind == "soup":
        text = " ".join(draw(st.lists(st.sampled_from(_SQL_TOKENS), max_size=12)))
    else:
        text = draw(st.text(max_size=30))
    return _encode(text), ".sql"


# -------------------------------------------------------------------- checkpoint inputs

_OTHER_TYPES = [
    pa.string(),
    pa.int64(),
    pa.int32(),
    pa.int8(),
    pa.uint64(),
    pa.bool_(),
    pa.float64(),
    pa.binary(),
    pa.large_string(),
    pa.date32(),
    pa.timestamp("us"),
    pa.decimal128(10, 2),
    pa.list_(pa.string()),
    pa.map_(pa.string(), pa.string()),
    pa.struct([("x", pa.int64())]),
    pa.null(),
]


@st.composite
def _arrow_type(draw: st.DrawFn, correct: pa.DataType, depth: int) -> pa.DataType:
    choice = draw(st.sampled_from(["correct"] * 4 + ["other", "mutated"]))
    if choice == "other":
        return draw(st.sampled_from(_OTHER_TYPES))
    if choice == "mutated" and pa.types.is_struct(correct) and depth > 0:
        fields = []
        for f in correct:
            fate = draw(st.sampled_from(["keep"] * 4 + ["drop", "retype"]))
            if fate == "keep":
                fields.append(f)
            elif fate == "retype":
                fields.append(pa.field(f.name, draw(_arrow_type(f.type, depth - 1))))
        if draw(st.booleans()):  # a new field, or a second one of the same name
            fields.append(pa.field(draw(st.sampled_from(["extra", "path", "x"])), pa.string()))
        assume(fields)
        return pa.struct(fields)
    return correct


def _python_value(t: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_null(t):
        return st.none()
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: _python_value(f.type) for f in t}) | st.none()
    if pa.types.is_map(t):
        entries = st.lists(st.tuples(st.text(max_size=4), _python_value(t.item_type)), max_size=2)
        return entries | st.none()
    if pa.types.is_list(t):
        return st.lists(_python_value(t.value_type), max_size=2) | st.none()
    if pa.types.is_boolean(t):
        return st.booleans() | st.none()
    if pa.types.is_integer(t):
        info = (t.bit_width, pa.types.is_signed_integer(t))
        lo, hi = (
            (-(2 ** (info[0] - 1)), 2 ** (info[0] - 1) - 1) if info[1] else (0, 2 ** info[0] - 1)
        )
        return st.integers(lo, hi) | st.sampled_from([lo, hi]) | st.none()
    if pa.types.is_floating(t):
        return st.floats() | st.none()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return paths | texts.filter(lambda s: "\ud800" not in s and "\udfff" not in s) | st.none()
    if pa.types.is_binary(t):
        return st.binary(max_size=8) | st.none()
    if pa.types.is_date(t):
        return st.dates() | st.none()
    if pa.types.is_timestamp(t):
        return st.datetimes() | st.none()
    if pa.types.is_decimal(t):
        return st.decimals(min_value=-(10**7), max_value=10**7, places=2) | st.none()
    raise AssertionError(f"no values for {t}")


@st.composite
def checkpoint_parquet(draw: st.DrawFn) -> Input:
    """A valid Parquet file with checkpoint-like columns of odd shapes and types."""
    names = draw(
        st.lists(
            st.sampled_from([*CHECKPOINT_COLUMNS, "add", "remove", "commitInfo", "junk"]),
            unique=True,
            max_size=5,
        )
    )
    fields = [
        pa.field(n, draw(_arrow_type(CHECKPOINT_COLUMNS.get(n, pa.string()), 2))) for n in names
    ]
    assume(fields)
    rows = draw(st.integers(0, 4))
    columns = []
    for f in fields:
        values = draw(st.lists(_python_value(f.type), min_size=rows, max_size=rows))
        try:
            columns.append(pa.array(values, type=f.type))
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            assume(False)
    sink = io.BytesIO()
    try:
        pq.write_table(
            pa.Table.from_arrays(columns, schema=pa.schema(fields)),
            sink,
            row_group_size=draw(st.integers(1, 4)),
            write_statistics=draw(st.booleans()),
        )
    except (pa.ArrowException, ValueError):
        assume(False)
    return sink.getvalue(), ".parquet"


# ============================================================================ registry


def _commit_inputs() -> st.SearchStrategy[Input]:
    return st.one_of(commit_files(), mutated("commit"))


@functools.cache
def _base_checkpoint_table() -> pa.Table:
    return pq.read_table(io.BytesIO(base_checkpoint()[0]))


def _replace_child(column: pa.StructArray, index: int, child: pa.Field | None, values: Any) -> Any:
    """``column`` with child ``index`` replaced by ``child`` (``values``), or dropped."""
    fields = [column.type.field(i) for i in range(column.type.num_fields)]
    children = [column.field(i) for i in range(column.type.num_fields)]
    if child is None:
        del fields[index], children[index]
    else:
        fields[index], children[index] = child, values
    mask = column.is_null() if column.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


@st.composite
def reshaped_checkpoint(draw: st.DrawFn) -> Input:
    """deltalog's checkpoint of the base table with one or two columns dropped, retyped or
    added: a valid Parquet file that opens as a table and then surprises the reader."""
    table = _base_checkpoint_table()
    for _ in range(draw(st.integers(1, 2))):
        structs = [f.name for f in table.schema if pa.types.is_struct(f.type)]
        name = draw(st.sampled_from(structs))
        column = table.column(name).combine_chunks()
        n = len(column)
        index = draw(st.integers(0, column.type.num_fields - 1))
        op = draw(st.sampled_from(["drop", "retype", "add", "not a struct"]))
        new_type = draw(st.sampled_from(_OTHER_TYPES))
        values = draw(st.lists(_python_value(new_type), min_size=n, max_size=n))
        try:
            new_values = pa.array(values, type=new_type)
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            assume(False)
        if op == "not a struct":
            column = new_values
        elif op == "drop" and column.type.num_fields > 1:
            column = _replace_child(column, index, None, None)
        elif op == "retype":
            field = pa.field(column.type.field(index).name, new_type)
            column = _replace_child(column, index, field, new_values)
        else:
            fields = [column.type.field(i) for i in range(column.type.num_fields)]
            children = [column.field(i) for i in range(column.type.num_fields)]
            names = ["extra", *(f.name for f in fields)]  # new, or a second of the same name
            fields.append(pa.field(draw(st.sampled_from(names)), new_type))
            children.append(new_values)
            mask = column.is_null() if column.null_count else None
            column = pa.StructArray.from_arrays(children, fields=fields, mask=mask)
        table = table.set_column(table.column_names.index(name), name, column)
    sink = io.BytesIO()
    try:
        pq.write_table(table, sink, row_group_size=draw(st.sampled_from([2, 3, 64])))
    except (pa.ArrowException, ValueError):
        assume(False)
    return sink.getvalue(), ".parquet"


def _checkpoint_inputs() -> st.SearchStrategy[Input]:
    return st.one_of(
        checkpoint_parquet(),
        reshaped_checkpoint(),
        commit_files().map(lambda inp: (inp[0], ".json")),
        mutated("checkpoint"),
        mutated("checkpoint"),
    )


def _last_checkpoint_inputs() -> st.SearchStrategy[Input]:
    return st.one_of(last_checkpoint_files(), mutated("last-checkpoint"))


TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        Target("commit", "commit", check_commit, _commit_inputs, 2000),
        Target("commit-table", "commit", check_commit_table, _commit_inputs, 600),
        Target(
            "last-checkpoint",
            "last-checkpoint",
            check_last_checkpoint,
            _last_checkpoint_inputs,
            600,
        ),
        Target(
            "partition",
            "partition",
            check_partition,
            lambda: st.one_of(partition_inputs(), mutated("partition")),
            3000,
        ),
        Target(
            "predicate",
            "predicate",
            check_predicate,
            lambda: st.one_of(predicate_inputs(), mutated("predicate")),
            1600,
        ),
        Target("checkpoint", "checkpoint", check_checkpoint, _checkpoint_inputs, 800),
        Target("checkpoint-table", "checkpoint", check_checkpoint_table, _checkpoint_inputs, 600),
    ]
}
