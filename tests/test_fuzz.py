"""Fuzzing deltalog's parsers (issue 7): every input parses or raises a named error, never hangs.

The targets live in ``fuzz_targets.py`` (shared with ``scripts/fuzz.py``, the long-run driver).
Each target is run here in two ways:

* ``test_corpus``: every file of its corpus (``tests/fuzz_corpus/<corpus>/``: seeds from the
  delta-spark golden tables and from deltalog, plus every minimised crasher found so far) is
  replayed as a regression test;
* ``test_fuzz_<target>``: hypothesis, with structure-aware generation (JSON trees of actions with
  wrong types, missing fields, huge integers, NaN tokens, lone surrogates, deep nesting; Parquet
  files with odd schemas; SQL predicate trees) and byte-level mutation of the corpus seeds.

CI runs are bounded and reproducible: a fixed number of examples per target, ``derandomize``
(the same examples on every run, so a failure is never a coincidence of one CI run and can be
reproduced locally), and no example database. Exploration happens in long runs:

    DELTALOG_FUZZ_EXAMPLES=5000 DELTALOG_FUZZ_RANDOM=1 pytest tests/test_fuzz.py
    python scripts/fuzz.py --target commit --minutes 10     # writes crashers into the corpus

Each target call also runs under a hard time limit (``fuzz_targets.time_limit``), so a hang
fails with a message naming the parser instead of stalling the job.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
from pathlib import Path

import pytest
from fuzz_targets import (
    CORPUS_DIR,
    TARGETS,
    Input,
    corpus_files,
    suffix_of,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog.protocol.partitions import (
    hive_escape,
    hive_partition_dir,
    hive_unescape,
    parse_hive_path,
    parse_partition_value,
    serialize_partition_value,
)
from deltalog.protocol.schema import DecimalType, PrimitiveType
from deltalog.stats.predicate_sql import parse_predicate
from deltalog.stats.predicates import col

_OVERRIDE = os.environ.get("DELTALOG_FUZZ_EXAMPLES")
_RANDOM = os.environ.get("DELTALOG_FUZZ_RANDOM") == "1"


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=int(_OVERRIDE) if _OVERRIDE else examples,
        deadline=None,  # no timing assertions: pytest-timeout bounds a hang
        database=None,
        derandomize=not _RANDOM,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )


# ---------------------------------------------------------------------------- corpus


def _corpus_cases() -> list[tuple[str, Path]]:
    return [(name, path) for name, t in TARGETS.items() for path in corpus_files(t.corpus)]


@pytest.mark.parametrize(
    ("target", "path"),
    _corpus_cases(),
    ids=[f"{n}:{p.relative_to(CORPUS_DIR / TARGETS[n].corpus)}" for n, p in _corpus_cases()],
)
def test_corpus(target: str, path: Path) -> None:
    TARGETS[target].check(path.read_bytes(), suffix_of(path))


def test_corpus_is_kept_small_and_covers_every_target() -> None:
    total = sum(p.stat().st_size for p in CORPUS_DIR.rglob("*") if p.is_file())
    assert total < 1 << 20, f"the fuzz corpus is {total} bytes; keep it under 1 MB"
    for target in TARGETS.values():
        assert corpus_files(target.corpus), f"no seeds for {target.name}"


# ---------------------------------------------------------------------------- fuzzing


def _run(name: str, inp: Input) -> None:
    TARGETS[name].check(*inp)


@fuzz_settings(TARGETS["commit"].examples)
@given(TARGETS["commit"].strategy())
def test_fuzz_commit(inp: Input) -> None:
    _run("commit", inp)


@fuzz_settings(TARGETS["commit-table"].examples)
@given(TARGETS["commit-table"].strategy())
def test_fuzz_commit_table(inp: Input) -> None:
    _run("commit-table", inp)


@fuzz_settings(TARGETS["last-checkpoint"].examples)
@given(TARGETS["last-checkpoint"].strategy())
def test_fuzz_last_checkpoint(inp: Input) -> None:
    _run("last-checkpoint", inp)


@fuzz_settings(TARGETS["partition"].examples)
@given(TARGETS["partition"].strategy())
def test_fuzz_partition(inp: Input) -> None:
    _run("partition", inp)


@fuzz_settings(TARGETS["predicate"].examples)
@given(TARGETS["predicate"].strategy())
def test_fuzz_predicate(inp: Input) -> None:
    _run("predicate", inp)


@fuzz_settings(TARGETS["checkpoint"].examples)
@given(TARGETS["checkpoint"].strategy())
def test_fuzz_checkpoint(inp: Input) -> None:
    _run("checkpoint", inp)


@fuzz_settings(TARGETS["checkpoint-table"].examples)
@given(TARGETS["checkpoint-table"].strategy())
def test_fuzz_checkpoint_table(inp: Input) -> None:
    _run("checkpoint-table", inp)


# ---------------------------------------------------------------------------- round trips

_INT_TYPES = {"byte": 7, "short": 15, "integer": 31, "long": 63}


@st.composite
def _typed_values(draw: st.DrawFn) -> tuple[object, PrimitiveType | DecimalType]:
    """A Python value and a Delta type it belongs to."""
    names = ["string", "float", "double", "boolean", "binary", "date", "timestamp"]
    name = draw(st.sampled_from([*_INT_TYPES, *names, "timestamp_ntz", "decimal"]))
    if name in _INT_TYPES:
        bits = _INT_TYPES[name]
        return draw(st.integers(-(2**bits), 2**bits - 1)), PrimitiveType(name)
    if name == "string":
        return draw(st.text(min_size=1)), PrimitiveType(name)
    if name in ("float", "double"):
        return draw(st.floats(width=32 if name == "float" else 64)), PrimitiveType(name)
    if name == "boolean":
        return draw(st.booleans()), PrimitiveType(name)
    if name == "binary":
        return draw(st.text(min_size=1)).encode("utf-8"), PrimitiveType(name)
    if name == "date":
        return draw(st.dates()), PrimitiveType(name)
    if name == "timestamp":
        zone = draw(st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=-5, minutes=-30))]))
        moment = draw(
            st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30), timezones=st.just(zone))
        )
        return moment, PrimitiveType(name)
    if name == "timestamp_ntz":
        return draw(st.datetimes()), PrimitiveType(name)
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    limit = decimal.Decimal("9" * (precision - scale) + "." + "9" * scale)  # exact: no rounding
    value = draw(st.decimals(min_value=-limit, max_value=limit, places=scale, allow_nan=False))
    return value, DecimalType(precision, scale)


@fuzz_settings(600)
@given(_typed_values())
def test_partition_value_serialize_parse_round_trip(
    case: tuple[object, PrimitiveType | DecimalType],
) -> None:
    value, t = case
    text = serialize_partition_value(value, t)
    assert text is not None
    back = parse_partition_value(text, t)
    if isinstance(value, float) and math.isnan(value):
        assert isinstance(back, float) and math.isnan(back)
    elif isinstance(value, dt.datetime) and value.tzinfo is not None:
        assert back == value and back.utcoffset() == dt.timedelta(0)
    else:
        assert back == value and type(back) is type(value)
    assert serialize_partition_value(text, t) == text  # a serialised value is kept as written


@fuzz_settings(400)
@given(st.dictionaries(st.text(), st.one_of(st.none(), st.text()), min_size=1, max_size=4))
def test_hive_directory_round_trip(values: dict[str, str | None]) -> None:
    values = {k: v for k, v in values.items() if v != "__HIVE_DEFAULT_PARTITION__"}
    for v in values.values():
        if v is not None:
            assert hive_unescape(hive_escape(v)) == v
    assert parse_hive_path(hive_partition_dir(values) + "/part-0.parquet") == values


_names = st.sampled_from(["s", "date", "DATE", "and", "a b", "x`y", "é", "1a"])
_literals = st.one_of(
    st.text(max_size=6), st.integers().map(str), st.sampled_from(["true", "2024-01-01"])
)
_leaves = st.one_of(
    st.builds(
        lambda n, op, v: {"=": col(n) == v, "<": col(n) < v, ">=": col(n) >= v, "!=": col(n) != v}[
            op
        ],
        _names,
        st.sampled_from(["=", "<", ">=", "!="]),
        _literals,
    ),
    st.builds(lambda n, vs: col(n).isin(vs), _names, st.lists(_literals, min_size=1, max_size=3)),
    st.builds(lambda n: col(n).is_null(), _names),
    st.builds(lambda n: col(n).is_not_null(), _names),
    st.builds(lambda n, a, b: col(n).between(a, b), _names, _literals, _literals),
)
_predicates = st.recursive(
    _leaves,
    lambda kids: st.one_of(
        st.builds(lambda a, b: a & b, kids, kids),
        st.builds(lambda a, b: a | b, kids, kids),
        kids.map(lambda a: ~a),
    ),
    max_leaves=6,
)


@fuzz_settings(600)
@given(_predicates)
def test_predicate_text_round_trip(predicate: object) -> None:
    text = str(predicate)
    assert str(parse_predicate(text)) == text
