"""The diff, the canonical forms and the renderers, on fake observations (no engine runs)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, date, datetime
from decimal import Decimal

import pyarrow as pa

from deltalog.compat.canon import canon, column_checksums, partition_values
from deltalog.compat.diff import compare_observations
from deltalog.compat.limits import KNOWN, Limitation, explain
from deltalog.compat.model import EngineStatus, TableResult
from deltalog.compat.observe import relative_path
from deltalog.compat.report import CompatReport

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "p", "type": "date", "nullable": True, "metadata": {}},
        {
            "name": "q",
            "type": "decimal(5,2)",
            "nullable": True,
            "metadata": {"delta.columnMapping.physicalName": "col-q"},
        },
        {"name": "x", "type": "long", "nullable": True, "metadata": {}},
    ],
}


def observation(**changes: object) -> dict[str, object]:
    obs: dict[str, object] = {
        "version": 3,
        "protocol": {
            "minReaderVersion": 1,
            "minWriterVersion": 2,
            "readerFeatures": [],
            "writerFeatures": [],
        },
        "schema": SCHEMA,
        "partitionColumns": ["p", "q"],
        "configuration": {},
        "files": [{"path": "p=2024-01-01/a.parquet", "size": 10, "partitionValues": {}}],
        "rows": 2,
        "columns": {"x": {"count": 2, "nulls": 0, "crc": 5}},
        "history": [{"version": 0, "operation": "WRITE", "inCommitTimestamp": None}],
    }
    obs.update(changes)
    return obs


def test_canonical_texts_do_not_depend_on_the_arrow_type_an_engine_chose() -> None:
    ts = datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert canon(ts, pa.timestamp("us", "UTC")) == canon(
        ts.replace(tzinfo=None), pa.timestamp("us")
    )
    assert canon("a", pa.string()) == canon("a", pa.large_string()) == canon("a", pa.string_view())
    assert canon(b"\x01", pa.binary()) == canon(b"\x01", pa.large_binary()) == "01"
    assert canon(Decimal("1.50"), pa.decimal128(5, 2)) == "150"
    assert canon(date(1970, 1, 2), pa.date32()) == "1"
    assert canon(-0.0, pa.float64()) != canon(0.0, pa.float64())
    assert canon(1.5, pa.float32()) == canon(1.5, pa.float64())
    t = pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))])
    assert canon({"a": None, "b": ["x", None]}, t) == "{null,[x,null]}"


def test_checksums_ignore_row_order_and_chunking_and_count_nulls() -> None:
    one = pa.table({"x": [1, 2, None]})
    other = pa.concat_tables(
        [pa.table({"x": pa.array([None], pa.int64())}), pa.table({"x": [2, 1]})]
    )
    assert column_checksums(one) == column_checksums(other)
    assert column_checksums(one)["x"]["nulls"] == 1
    assert column_checksums(one) != column_checksums(pa.table({"x": [1, 3, None]}))


def test_partition_values_are_normalised_protocol_strings_by_logical_name() -> None:
    typed = partition_values({"p": date(2024, 1, 1), "q": Decimal("1.50")}, SCHEMA)
    text = partition_values({"p": "2024-01-01", "col-q": "1.5"}, SCHEMA)
    assert typed == text == {"p": "2024-01-01", "q": "1.50"}
    assert partition_values({"p": "not a date"}, SCHEMA) == {"p": "not a date"}


def test_paths_as_the_log_holds_them_are_decoded_once() -> None:
    assert relative_path("file:///t/a%20b/x.parquet", "/t") == "a b/x.parquet"
    assert relative_path("/t/a%20b/x.parquet", "file:///t") == "a b/x.parquet"
    # a directory named d=1%3A2 (Hive-escaped ':') is d=1%253A2 in the log
    assert relative_path("d=1%253A2/x.parquet", "/t") == "d=1%3A2/x.parquet"


def test_a_relative_and_an_absolute_path_of_one_file_agree() -> None:
    relative = observation(files=[{"path": "d=1%253A2/x", "size": 1, "partitionValues": {}}])
    absolute = observation(
        files=[{"path": "file:///t/d=1%253A2/x", "size": 1, "partitionValues": {}}]
    )
    result = compare_observations(TableResult("/t", None), {"a": relative, "b": absolute}, {})
    assert result.agree and not result.differences


def test_kernel_schema_spelling_is_a_known_difference_only_where_listed() -> None:
    field = {"name": "c", "type": "string", "nullable": True, "metadata": {}}
    spark = {**field, "metadata": {"__COLLATIONS": {"c": "spark.UTF8_LCASE"}}}
    kernel = {**field, "metadata": {"__COLLATIONS": {"c": "SPARK.UTF8_LCASE"}}}
    features = {"readerFeatures": [], "writerFeatures": ["collations"]}
    raw = {
        "a": observation(protocol=features, schema={"type": "struct", "fields": [spark]}),
        "kernel": observation(protocol=features, schema={"type": "struct", "fields": [kernel]}),
    }
    result = compare_observations(TableResult("/t", None), raw, {})
    assert result.agree and result.differences[0].known is not None
    other = {**field, "metadata": {"__COLLATIONS": {"c": "ICU.UNICODE"}}}
    raw["kernel"] = observation(protocol=features, schema={"type": "struct", "fields": [other]})
    assert not compare_observations(TableResult("/t", None), raw, {}).agree


def test_equal_observations_agree_after_normalising() -> None:
    spelled = observation(
        files=[{"path": "file:///t/p=2024-01-01/a.parquet", "size": 10, "partitionValues": {}}]
    )
    result = compare_observations(TableResult("/t", None), {"a": observation(), "b": spelled}, {})
    assert result.agree and not result.differences


def test_a_difference_names_the_engine_and_what_it_saw() -> None:
    other = observation(
        rows=3,
        files=[
            {"path": "p=2024-01-01/a.parquet", "size": 11, "partitionValues": {}},
            {"path": "b.parquet", "size": 1, "partitionValues": {}},
        ],
    )
    raw = {"a": observation(), "b": observation(), "odd": other}
    result = compare_observations(TableResult("/t", None), raw, {})
    assert not result.agree
    fields = {d.field: d for d in result.differences}
    assert set(fields) == {"files", "rows"}
    assert fields["rows"].groups == [(["a", "b"], "2"), (["odd"], "3")]
    assert "has b.parquet" in fields["files"].groups[1][1]
    assert "other sizes for p=2024-01-01/a.parquet" in fields["files"].groups[1][1]


def test_refusals_are_disagreements_unless_listed_or_unanimous() -> None:
    result = compare_observations(TableResult("/t", 1), {"a": observation()}, {"b": "Boom: no"})
    assert not result.agree and result.outcomes["b"].state == "refused"
    both = compare_observations(TableResult("/t", None), {}, {"a": "X: no", "b": "Y: no"})
    assert both.agree
    limits = [Limitation("b", "deletionVectors", "Boom", "b cannot read deletion vectors")]
    dv = observation(protocol={"readerFeatures": ["deletionVectors"], "writerFeatures": []})
    known = compare_observations(TableResult("/t", None), {"a": dv}, {"b": "Boom: no"}, (), limits)
    assert known.agree and known.outcomes["b"].state == "known"
    assert "b cannot read deletion vectors" in known.outcomes["b"].detail


def test_the_known_list_explains_delta_rs_refusing_vacuum_protocol_check() -> None:
    message = "DeltaError: Unsupported table features required: [VacuumProtocolCheck]"
    assert explain("delta-rs", ["vacuumProtocolCheck"], message) is not None
    assert explain("delta-rs", ["appendOnly"], message) is None
    assert explain("deltalog", ["vacuumProtocolCheck"], message) is None
    assert all(limit.reason for limit in KNOWN)


def _report() -> CompatReport:
    good = compare_observations(TableResult("/t/good", None), {"a": observation()}, {})
    bad = compare_observations(
        TableResult("/t/bad", 2), {"a": observation(), "b": observation(rows=9)}, {}
    )
    engines = [
        EngineStatus("a", "ran", "a 1.0"),
        EngineStatus("b", "ran", "b 2.0"),
        EngineStatus("c", "skipped", "pip install c"),
    ]
    return CompatReport(engines, [good, bad])


def test_the_text_names_skipped_engines_and_disagreements() -> None:
    text = _report().render()
    assert "c  SKIPPED  pip install c" in text
    assert "/t/good: AGREE" in text
    assert "/t/bad@v2: DISAGREE" in text
    assert "rows differs:" in text and "b: 9" in text
    assert text.endswith("1 of 2 table versions agree; engines DISAGREE")


def test_json_and_exit_code() -> None:
    report = _report()
    doc = report.to_json()
    assert doc["agree"] is False and doc["exit_code"] == report.exit_code == 3
    bad = doc["tables"][1]
    assert bad["differences"][0]["field"] == "rows"
    assert bad["differences"][0]["groups"][1] == {"engines": ["b"], "saw": "9"}


def test_a_required_engine_that_is_missing_fails_the_report() -> None:
    report = CompatReport([EngineStatus("c", "skipped", "pip install c", required=True)], [])
    assert not report.agree and report.exit_code == 3
    assert CompatReport([EngineStatus("c", "skipped", "pip install c")], []).agree


def test_junit_has_a_case_per_engine_and_table_version() -> None:
    root = ET.fromstring(_report().to_junit_xml())
    assert root.get("tests") == "5" and root.get("failures") == "1" and root.get("skipped") == "1"
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed == ["/t/bad@v2"]


def test_deltalog_reading_an_empty_partition_string_as_null_is_known_only_there() -> None:
    # A table an interop test wrote with partition value "": deltalog reads null, the
    # others an empty string (whose checksum is 0); on any other table it is a disagreement.
    schema = {"type": "struct", "fields": [{"name": "s", "type": "string", "nullable": True}]}
    empty = [{"path": "s=/a.parquet", "size": 10, "partitionValues": {"s": ""}}]
    values = {"s": {"count": 2, "nulls": 0, "crc": 0}}
    nulls = {"s": {"count": 0, "nulls": 2, "crc": 0}}
    common = {"schema": schema, "partitionColumns": ["s"]}
    raw = {
        "deltalog": observation(**common, files=empty, columns=nulls),
        "delta-rs": observation(**common, files=empty, columns=values),
        "kernel": observation(**common, files=empty, columns=values),
    }
    result = compare_observations(TableResult("/t", None), raw, {})
    assert result.agree, result.differences
    assert "empty string partition value" in str(result.differences[0].known)
    plain = [{"path": "s=x/a.parquet", "size": 10, "partitionValues": {"s": "x"}}]
    for engine in raw:
        raw[engine] = {**raw[engine], "files": plain}
    assert not compare_observations(TableResult("/t", None), raw, {}).agree
    raw["kernel"] = {**raw["kernel"], "files": empty, "columns": nulls}
    raw["deltalog"] = {**raw["deltalog"], "files": empty, "columns": values}
    assert not compare_observations(TableResult("/t", None), raw, {}).agree  # kernel alone


def test_delta_rs_wrapping_int96_timestamps_is_known_only_for_timestamp_checksums() -> None:
    # delta-spark writes INT96; delta-rs reads 9999-12-31 wrapped around (a Spark-made table).
    schema = {
        "type": "struct",
        "fields": [
            {"name": "ts", "type": "timestamp", "nullable": True},
            {"name": "x", "type": "long", "nullable": True},
        ],
    }
    right = {"ts": {"count": 1, "nulls": 1, "crc": 7}, "x": {"count": 2, "nulls": 0, "crc": 5}}
    wrapped = {**right, "ts": {"count": 1, "nulls": 1, "crc": 8}}
    common = {"schema": schema}
    raw = {
        "deltalog": observation(**common, columns=right),
        "delta-spark": observation(**common, columns=right),
        "delta-rs": observation(**common, columns=wrapped),
    }
    result = compare_observations(TableResult("/t", None), raw, {})
    assert result.agree and "INT96" in str(result.differences[0].known)
    raw["delta-rs"] = observation(
        **common, columns={**right, "x": {"count": 2, "nulls": 0, "crc": 6}}
    )
    assert not compare_observations(TableResult("/t", None), raw, {}).agree
    raw["delta-rs"] = observation(
        **common, columns={**right, "ts": {"count": 0, "nulls": 2, "crc": 0}}
    )
    assert not compare_observations(TableResult("/t", None), raw, {}).agree
