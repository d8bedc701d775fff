"""Expected outcomes for the Delta golden tables in /work/shared/delta-golden/.

Keys are table roots relative to that folder. Every entry has `expect` ("ok" or
"error") and `why`. "ok" entries give the latest `version` and `num_files` (live add
files after log replay, with delta-spark path canonicalization) and, when the snapshot
starts from a checkpoint, `checkpoint_version`. "error" entries give `error_kind`.
Optional `layout` flags unusual structure; `delta_rs` records where deltalake 1.6.6
behaves differently.
"""

from __future__ import annotations

GOLDEN: dict[str, dict[str, object]] = {
    "124-decimal-decode-bug": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Written for standalone DeltaDataReaderSuite '#124 decimal decode bug': one "
            "DECIMAL(10,0) value 1000000; delta-kernel-rs runs it as a plain latest-snapshot "
            "read."
        ),
    },
    "125-iterator-bug": {
        "expect": "ok",
        "version": 11,
        "num_files": 12,
        "checkpoint_version": 10,
        "why": (
            "Kernel DeltaTableReadsSuite 'table with empty parquet files': 12 appends, several of"
            " them empty files, read back as rows 1..5; latest state comes from the v10 "
            "checkpoint plus v11."
        ),
    },
    "basic-decimal-table": {
        "expect": "ok",
        "version": 0,
        "num_files": 4,
        "why": (
            "Kernel DeltaTableReadsSuite 'end to end: reading basic-decimal-table' checks 4 "
            "decimal rows; ReadIntegrationTestSuite uses it for decimal partition pruning."
        ),
    },
    "basic-decimal-table-legacy": {
        "expect": "ok",
        "version": 0,
        "num_files": 4,
        "why": (
            "Same data as basic-decimal-table but written with legacy parquet decimal encoding; "
            "same DeltaTableReadsSuite end-to-end check."
        ),
    },
    "basic-with-inserts-deletes-checkpoint": {
        "expect": "ok",
        "version": 13,
        "num_files": 7,
        "checkpoint_version": 10,
        "why": (
            "Kernel LogReplaySuite 'simple end to end with inserts and deletes and checkpoint': "
            "version 13, replay from the v10 checkpoint (which carries remove tombstones) plus "
            "v11-v13."
        ),
    },
    "basic-with-inserts-merge": {
        "expect": "ok",
        "version": 1,
        "num_files": 1,
        "why": (
            "Kernel LogReplaySuite 'simple end to end with inserts and merge': ids 10..149 after "
            "a MERGE."
        ),
    },
    "basic-with-inserts-overwrite-restore": {
        "expect": "ok",
        "version": 3,
        "num_files": 4,
        "checkpoint_version": 3,
        "why": (
            "Kernel LogReplaySuite 'simple end to end with restore': version 3 (RESTORE commit, "
            "also checkpointed) must show ids 0..199."
        ),
    },
    "basic-with-inserts-updates": {
        "expect": "ok",
        "version": 1,
        "num_files": 2,
        "why": (
            "Kernel LogReplaySuite 'simple end to end with inserts and updates': 100 rows after "
            "UPDATE."
        ),
    },
    "basic-with-vacuum-protocol-check-feature": {
        "expect": "ok",
        "version": 1,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite reads 100 rows; protocol 3/7 with reader feature "
            "vacuumProtocolCheck, which a reader must accept (it only constrains vacuum)."
        ),
    },
    "canonicalized-paths-normal-a": {
        "expect": "ok",
        "version": 1,
        "num_files": 0,
        "num_files_uncanonicalized": 1,
        "layout": "metaData has no schemaString (old Metadata() default; treat as empty schema)",
        "delta_rs": "fails: null schemaString",
        "why": (
            "delta-spark DeltaLogSuite 'paths should be canonicalized': v0 adds "
            "'/some/unqualified/absolute/path', v1 removes 'file:' + same path; after "
            "canonicalization both are one file, so version 1 has 0 files (kernel test is "
            "ignored, issue 2213; delta-kernel-rs skips it as a known bug)."
        ),
    },
    "canonicalized-paths-normal-b": {
        "expect": "ok",
        "version": 1,
        "num_files": 0,
        "num_files_uncanonicalized": 1,
        "layout": "metaData has no schemaString (old Metadata() default; treat as empty schema)",
        "delta_rs": "fails: null schemaString",
        "why": (
            "delta-spark DeltaLogSuite 'paths should be canonicalized': v0 adds "
            "'/some/unqualified/absolute/path', v1 removes 'file://' + same path; after "
            "canonicalization both are one file, so version 1 has 0 files (kernel test is "
            "ignored, issue 2213; delta-kernel-rs skips it as a known bug)."
        ),
    },
    "canonicalized-paths-special-a": {
        "expect": "ok",
        "version": 1,
        "num_files": 0,
        "num_files_uncanonicalized": 1,
        "layout": "metaData has no schemaString (old Metadata() default; treat as empty schema)",
        "delta_rs": "fails: null schemaString",
        "why": (
            "delta-spark DeltaLogSuite 'paths should be canonicalized - special characters': add "
            "'/some/unqualified/with%20space/p@%23h', remove 'file:' + same path; canonical forms"
            " match, so version 1 has 0 files."
        ),
    },
    "canonicalized-paths-special-b": {
        "expect": "ok",
        "version": 1,
        "num_files": 0,
        "num_files_uncanonicalized": 1,
        "layout": "metaData has no schemaString (old Metadata() default; treat as empty schema)",
        "delta_rs": "fails: null schemaString",
        "why": (
            "delta-spark DeltaLogSuite 'paths should be canonicalized - special characters': add "
            "'/some/unqualified/with%20space/p@%23h', remove 'file://' + same path; canonical "
            "forms match, so version 1 has 0 files."
        ),
    },
    "checkpoint": {
        "expect": "ok",
        "version": 14,
        "num_files": 1,
        "checkpoint_version": 10,
        "layout": "classic checkpoint at v10; data files absent (log-only table)",
        "why": (
            "Kernel LogReplaySuite \"standalone DeltaLogSuite: 'checkpoint'\": version 14 with "
            "exactly one scan file (each commit adds file i and removes i-1); v10 checkpoint "
            "holds 10 tombstones."
        ),
    },
    "collations-preview-table": {
        "expect": "ok",
        "version": 0,
        "num_files": 0,
        "why": (
            "Kernel DeltaTableWritesSuite copies it and appends rows with collated string "
            "columns; writer feature collations-preview (reader v1), table has no data files yet."
        ),
    },
    "collations-table": {
        "expect": "ok",
        "version": 0,
        "num_files": 0,
        "why": (
            "Kernel DeltaTableWritesSuite collation write test; writer feature collations (reader"
            " v1), created empty."
        ),
    },
    "commit-info-containing-arbitrary-operationParams-types": {
        "expect": "ok",
        "version": 2,
        "num_files": 2,
        "why": (
            "Kernel TableChangesSuite getChanges 0..2 vs Spark: the OPTIMIZE commitInfo has "
            "operationParameters values that are not strings, so commitInfo parsing must be "
            "lenient."
        ),
    },
    "corrupted-last-checkpoint": {
        "expect": "ok",
        "version": 10,
        "num_files": 11,
        "checkpoint_version": 10,
        "layout": (
            "classic checkpoint at v10; metaData has no schemaString (old Metadata() default; "
            "treat as empty schema); data files absent (log-only table)"
        ),
        "delta_rs": "fails: null schemaString in checkpoint metaData",
        "why": (
            "Generated for DeltaLogSuite \"handle corrupted '_last_checkpoint' file\"; the test "
            "blanks the pointer itself at runtime, the stored copy is intact. Snapshot = v10 "
            "checkpoint."
        ),
    },
    "corrupted-last-checkpoint-kernel": {
        "expect": "ok",
        "version": 11,
        "num_files": 2,
        "checkpoint_version": 10,
        "layout": "empty _last_checkpoint; classic checkpoint at v10",
        "why": (
            "Kernel DeltaTableReadsSuite \"handle corrupted '_last_checkpoint' file\": "
            "_last_checkpoint is a 0-byte file; reader must ignore it, list the log, use the v10 "
            "checkpoint + v11 (overwrite) and return ids 0..99."
        ),
    },
    "data-reader-absolute-paths-escaped-chars": {
        "expect": "error",
        "error_kind": "missing_metadata",
        "layout": "no data files; v0 add path is an absolute-looking '..//Users/...' path",
        "why": (
            "No current delta-io test (Spark DSv2 golden test skips it); the log has a protocol "
            "and two adds but no metaData action at all, so a correct reader must refuse it."
        ),
    },
    "data-reader-array-complex-objects": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite 'table with complex array types' (nested arrays, arrays "
            "of maps/structs)."
        ),
    },
    "data-reader-array-primitives": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite 'table with array of primitives'; also "
            "ReadIntegrationTestSuite."
        ),
    },
    "data-reader-date-types-America": {
        "expect": "error",
        "error_kind": "no_log",
        "layout": "container of tables",
        "why": (
            "Container folder, not a table: it holds Los_Angeles one level down; opening it "
            "directly finds no _delta_log."
        ),
    },
    "data-reader-date-types-America/Los_Angeles": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Date/timestamp columns written with session time zone America/Los_Angeles "
            "(standalone DeltaDataReaderSuite date types); kernel ParquetFileReaderSuite reads "
            "them across zones."
        ),
    },
    "data-reader-date-types-Asia": {
        "expect": "error",
        "error_kind": "no_log",
        "layout": "container of tables",
        "why": (
            "Container folder, not a table: it holds Beirut one level down; opening it directly "
            "finds no _delta_log."
        ),
    },
    "data-reader-date-types-Asia/Beirut": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Date/timestamp columns written with session time zone Asia/Beirut (standalone "
            "DeltaDataReaderSuite date types); kernel ParquetFileReaderSuite reads them across "
            "zones."
        ),
    },
    "data-reader-date-types-Etc": {
        "expect": "error",
        "error_kind": "no_log",
        "layout": "container of tables",
        "why": (
            "Container folder, not a table: it holds GMT+9 one level down; opening it directly "
            "finds no _delta_log."
        ),
    },
    "data-reader-date-types-Etc/GMT+9": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Date/timestamp columns written with session time zone Etc/GMT+9 (standalone "
            "DeltaDataReaderSuite date types); kernel ParquetFileReaderSuite reads them across "
            "zones."
        ),
    },
    "data-reader-date-types-Iceland": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Date/timestamp columns written with session time zone Iceland (standalone "
            "DeltaDataReaderSuite date types); kernel ParquetFileReaderSuite reads them across "
            "zones."
        ),
    },
    "data-reader-date-types-JST": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Date/timestamp columns written with session time zone JST (standalone "
            "DeltaDataReaderSuite date types); kernel ParquetFileReaderSuite reads them across "
            "zones."
        ),
    },
    "data-reader-date-types-PST": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Date/timestamp columns written with session time zone PST (standalone "
            "DeltaDataReaderSuite date types); kernel ParquetFileReaderSuite reads them across "
            "zones."
        ),
    },
    "data-reader-date-types-UTC": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Date/timestamp columns written with session time zone UTC (standalone "
            "DeltaDataReaderSuite date types); kernel ParquetFileReaderSuite reads them across "
            "zones."
        ),
    },
    "data-reader-escaped-chars": {
        "expect": "ok",
        "version": 2,
        "num_files": 3,
        "why": (
            "Kernel LogReplaySuite 'escaped chars sequences in path': partition values "
            "'bar+%21..23'; add.path is URI-encoded ('_2=bar+%252521/...') and must be decoded "
            "once to reach the on-disk dir '_2=bar+%2521'."
        ),
    },
    "data-reader-map": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": "Kernel DeltaTableReadsSuite 'table with complex map types'.",
    },
    "data-reader-nested-struct": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite 'table with nested struct': 10 rows of a 2-level struct."
        ),
    },
    "data-reader-nullable-field-invalid-schema-key": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Standalone DeltaDataReaderSuite 'nullable field, invalid schema column key': one row"
            " with an array of nulls; delta-kernel-rs latest-snapshot read."
        ),
    },
    "data-reader-partition-values": {
        "expect": "ok",
        "version": 0,
        "num_files": 3,
        "why": (
            "Kernel DeltaTableReadsSuite 'read partitioned table' and PartitionPruningSuite: "
            "partition columns of every primitive type, including a null partition."
        ),
    },
    "data-reader-primitives": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite 'table primitives': 11 rows of all primitive types incl."
            " nulls."
        ),
    },
    "data-reader-timestamp_ntz": {
        "expect": "ok",
        "version": 1,
        "num_files": 4,
        "why": (
            "Kernel DeltaTableReadsSuite 'read table with timestamp_ntz columns (including "
            "partition)'; reader feature timestampNtz."
        ),
    },
    "data-reader-timestamp_ntz-id-mode": {
        "expect": "ok",
        "version": 1,
        "num_files": 4,
        "why": (
            "Same timestamp_ntz test with column mapping mode id; reader features timestampNtz + "
            "columnMapping."
        ),
    },
    "data-reader-timestamp_ntz-name-mode": {
        "expect": "ok",
        "version": 1,
        "num_files": 4,
        "why": (
            "Same timestamp_ntz test with column mapping mode name; reader features timestampNtz "
            "+ columnMapping."
        ),
    },
    "data-skipping-basic-stats-all-types": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": "Kernel ScanSuite data skipping on min/max/nullCount stats of every type; one file.",
    },
    "data-skipping-basic-stats-all-types-checkpoint": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": (
            "Kernel ScanSuite / ReadIntegrationTestSuite: same stats test, table created with a "
            "checkpointInterval of 1, but with a single commit no checkpoint file was written."
        ),
    },
    "data-skipping-basic-stats-all-types-columnmapping-id": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": (
            "Kernel ScanSuite data skipping with column mapping id (stats keyed by physical "
            "names); protocol 2/5."
        ),
    },
    "data-skipping-basic-stats-all-types-columnmapping-name": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": "Kernel ScanSuite data skipping with column mapping name; protocol 2/5.",
    },
    "data-skipping-change-stats-collected-across-versions": {
        "expect": "ok",
        "version": 4,
        "num_files": 3,
        "why": (
            "Kernel ScanSuite 'stats collected changing across versions': "
            "dataSkippingNumIndexedCols changes between commits; 3 files survive."
        ),
    },
    "data-skipping-partition-and-data-column": {
        "expect": "ok",
        "version": 3,
        "num_files": 4,
        "why": (
            "Four single-row appends partitioned by 'part'; used for partition+data filter "
            "skipping."
        ),
    },
    "decimal-various-scale-precision": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": (
            "Kernel DeltaTableReadsSuite compares a read of many DECIMAL(p,s) columns with Spark."
        ),
    },
    "delete-re-add-same-file-different-transactions": {
        "expect": "ok",
        "version": 3,
        "num_files": 2,
        "layout": "data files absent (log-only table)",
        "why": (
            "Kernel LogReplaySuite 'delete and re-add same file in different transactions': add "
            "foo, remove foo, add foo again, add bar -> 2 files, foo with modificationTime "
            "1700000000000."
        ),
    },
    "deltalog-commit-info": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "layout": (
            "metaData has no schemaString (old Metadata() default; treat as empty schema); data "
            "files absent (log-only table)"
        ),
        "delta_rs": "fails: null schemaString",
        "why": (
            "Standalone DeltaLogSuite 'get commit info': v0 = Metadata(), Protocol(1,2), a full "
            "commitInfo and add 'abc'. Valid for delta-spark (null schema = empty struct)."
        ),
    },
    "deltalog-getChanges": {
        "expect": "ok",
        "version": 2,
        "num_files": 0,
        "why": (
            "Kernel LogReplaySuite: latest txn version for appId 'fakeAppId' is 3; "
            "TableChangesSuite getChanges. v1 removes the only add and writes a cdc action, so 0 "
            "live files."
        ),
    },
    "deltalog-invalid-protocol-version": {
        "expect": "error",
        "error_kind": "unsupported_protocol",
        "why": (
            "Kernel DeltaTableReadsSuite 'table protocol version greater than reader protocol "
            "version': minReaderVersion 99 -> 'Unsupported Delta protocol reader version'."
        ),
    },
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata": {
        "expect": "ok",
        "version": 10,
        "num_files": 11,
        "delta_rs": "fails: 'No table metadata found in delta log' (trusts the checkpoint)",
        "why": (
            "Kernel LogReplaySuite 'missing metadata should fail missing from checkpoint': the "
            "v10 checkpoint was rewritten without metaData and nothing after it has one. Kernel "
            "and delta-rs fail; deltalog (issue 15 item 12) does not use a checkpoint without "
            "its protocol or metaData row while every JSON commit is present, and replays "
            "versions 0-10 from JSON (commits are the log's truth, checkpoints derived)."
        ),
    },
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol": {
        "expect": "ok",
        "version": 10,
        "num_files": 11,
        "delta_rs": "fails, but on the null schemaString before reaching the protocol check",
        "why": (
            "v10 checkpoint rewritten without protocol (kernel test commented out because "
            "generation left a null schemaString; Spark DSv2 test expects "
            "DELTA_STATE_RECOVER_ERROR; delta-kernel-rs negative test). deltalog (issue 15 item "
            "12) falls back to the JSON commits, all present, instead of failing."
        ),
    },
    "deltalog-state-reconstruction-without-metadata": {
        "expect": "error",
        "error_kind": "missing_metadata",
        "why": "Kernel LogReplaySuite 'missing metadata should fail': v0 has protocol + add only.",
    },
    "deltalog-state-reconstruction-without-protocol": {
        "expect": "error",
        "error_kind": "missing_protocol",
        "why": "Kernel LogReplaySuite 'missing protocol should fail': v0 has metaData + add only.",
    },
    "dv-partitioned-with-checkpoint": {
        "expect": "ok",
        "version": 15,
        "num_files": 15,
        "checkpoint_version": 10,
        "why": (
            "Kernel DeletionVectorSuite / ReadIntegrationTestSuite: 15 DELETEs on a partitioned "
            "table with deletion vectors; 2 live files carry a DV; state = v10 checkpoint + "
            "v11-v15."
        ),
    },
    "dv-with-columnmapping": {
        "expect": "ok",
        "version": 15,
        "num_files": 15,
        "checkpoint_version": 10,
        "why": (
            "Same as dv-partitioned-with-checkpoint plus column mapping name "
            "(ReadIntegrationTestSuite expects 35 rows); reader features deletionVectors + "
            "columnMapping."
        ),
    },
    "hive": {
        "expect": "error",
        "error_kind": "no_log",
        "layout": "container of tables",
        "why": (
            "Container folder, not a table: it holds the hive/deltatbl-* tables one level down; "
            "opening it directly finds no _delta_log."
        ),
    },
    "hive/deltatbl-column-names-case-insensitive": {
        "expect": "ok",
        "version": 0,
        "num_files": 4,
        "why": (
            "Hive connector golden table (connector since removed upstream): mixed-case column "
            "names FooBar/BarFoo, partitioned by BarFoo."
        ),
    },
    "hive/deltatbl-deleted-path": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Hive connector golden table (connector since removed upstream): plain table; the "
            "Hive test deletes the path at runtime."
        ),
    },
    "hive/deltatbl-incorrect-format-config": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Hive connector golden table (connector since removed upstream): plain table; the "
            "Hive test uses a wrong input format."
        ),
    },
    "hive/deltatbl-map-types-correctly": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": (
            "Hive connector golden table (connector since removed upstream): one row covering "
            "every Spark type mapped to Hive."
        ),
    },
    "hive/deltatbl-non-partitioned": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Hive connector golden table (connector since removed upstream): 10 rows, not "
            "partitioned."
        ),
    },
    "hive/deltatbl-not-allow-write": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Hive connector golden table (connector since removed upstream): 10 rows; the Hive "
            "test checks that writes are refused."
        ),
    },
    "hive/deltatbl-partition-prune": {
        "expect": "ok",
        "version": 0,
        "num_files": 5,
        "why": (
            "Hive connector golden table (connector since removed upstream): partitioned by date "
            "and city, 5 rows."
        ),
    },
    "hive/deltatbl-partitioned": {
        "expect": "ok",
        "version": 0,
        "num_files": 4,
        "why": (
            "Hive connector golden table (connector since removed upstream): 10 rows partitioned "
            "by c2."
        ),
    },
    "hive/deltatbl-schema-match": {
        "expect": "ok",
        "version": 0,
        "num_files": 4,
        "why": (
            "Hive connector golden table (connector since removed upstream): partitioned by b; "
            "Hive schema must match the Delta schema."
        ),
    },
    "hive/deltatbl-special-chars-in-partition-column": {
        "expect": "ok",
        "version": 0,
        "num_files": 4,
        "why": (
            "Hive connector golden table (connector since removed upstream): partition values '+ "
            "=%0/1' (dirs 'c2=+ %3D%250', add.path encodes them again)."
        ),
    },
    "hive/deltatbl-touch-files-needed-for-partitioned": {
        "expect": "ok",
        "version": 0,
        "num_files": 4,
        "why": (
            "Hive connector golden table (connector since removed upstream): 10 rows partitioned "
            "by c2."
        ),
    },
    "kernel-timestamp-INT96": {
        "expect": "ok",
        "version": 0,
        "num_files": 5,
        "why": (
            "Kernel DeltaTableReadsSuite timestamp tests: parquet INT96 timestamps, partitioned "
            "by a timestamp column, read in several time zones."
        ),
    },
    "kernel-timestamp-PST": {
        "expect": "ok",
        "version": 0,
        "num_files": 5,
        "why": "Kernel DeltaTableReadsSuite 'timestamp written in PST read in <tz>'.",
    },
    "kernel-timestamp-TIMESTAMP_MICROS": {
        "expect": "ok",
        "version": 0,
        "num_files": 5,
        "why": "Kernel DeltaTableReadsSuite timestamp tests with parquet TIMESTAMP_MICROS.",
    },
    "kernel-timestamp-TIMESTAMP_MILLIS": {
        "expect": "ok",
        "version": 0,
        "num_files": 5,
        "why": "Kernel DeltaTableReadsSuite timestamp tests with parquet TIMESTAMP_MILLIS.",
    },
    "kernel-timestamp-partition-col-ISO8601": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite 'table with partition column in ISO8601 timestamp "
            "format'; partition dirs contain '%3A', add.path double-encodes it as '%253A'."
        ),
    },
    "log-replay-dv-key-cases": {
        "expect": "ok",
        "version": 3,
        "num_files": 1,
        "why": (
            "Kernel LogReplaySuite 'DV cases with same path different DV keys': 3 DELETEs re-add "
            "the same path with a new DV and remove the old (path, DV); exactly 1 file, DV "
            "cardinality 3."
        ),
    },
    "log-replay-latest-metadata-protocol": {
        "expect": "ok",
        "version": 2,
        "num_files": 4,
        "why": (
            "Kernel LogReplaySuite 'fetches the latest protocol and metadata': schema col1,col2 "
            "and protocol 3/7 from the newest commits."
        ),
    },
    "log-replay-special-characters": {
        "expect": "ok",
        "version": 1,
        "num_files": 0,
        "why": (
            "Older twin of log-replay-special-characters-a (no delta-io test names it now): add "
            "then remove 'special%20p@%23h' -> 0 files."
        ),
    },
    "log-replay-special-characters-a": {
        "expect": "ok",
        "version": 1,
        "num_files": 0,
        "why": (
            "Kernel LogReplaySuite 'special characters in path': add + remove of "
            "'special%20p@%23h' -> no scan files."
        ),
    },
    "log-replay-special-characters-b": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "layout": "data files absent (log-only table)",
        "why": (
            "Kernel LogReplaySuite 'special characters in path': one add whose decoded file name "
            "is 'special p@#h'."
        ),
    },
    "log-store-listFrom": {
        "expect": "error",
        "error_kind": "no_log",
        "layout": "bare log-store files, not a table",
        "why": (
            "Bare files 1,2,3 for the old ReadOnlyLogStoreSuite 'listFrom'; not a table (its "
            "empty _delta_log dir did not survive git)."
        ),
    },
    "log-store-read": {
        "expect": "error",
        "error_kind": "no_log",
        "layout": "bare log-store files, not a table",
        "why": "Bare files 0,1 for the old ReadOnlyLogStoreSuite 'read'; not a table.",
    },
    "multi-part-checkpoint": {
        "expect": "ok",
        "version": 1,
        "num_files": 10,
        "checkpoint_version": 1,
        "layout": "multi-part checkpoint at v1 (2 parts)",
        "why": (
            "Kernel DeltaTableReadsSuite 'end to end: multi-part checkpoint' (31 rows): v1 "
            "checkpoint in 2 parts (part 1: protocol+metaData+5 adds, part 2: 5 adds)."
        ),
    },
    "no-delta-log-folder": {
        "expect": "error",
        "error_kind": "no_log",
        "why": (
            "Kernel DeltaTableReadsSuite 'non-empty folder not a delta table': plain parquet "
            "files, no _delta_log -> TableNotFoundException."
        ),
    },
    "only-checkpoint-files": {
        "expect": "ok",
        "version": 2,
        "num_files": 7,
        "checkpoint_version": 2,
        "layout": "classic checkpoints at v1 and v2",
        "why": (
            "Kernel LogReplaySuite 'end to end only checkpoint files' (checkpointInterval 1): "
            "checkpoints at v1 and v2, newest (v2) is the starting point."
        ),
    },
    "parquet-all-types": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": (
            "Kernel ParquetFileReaderSuite/ParquetFileWriterSuite: one file with every parquet "
            "type; reader feature timestampNtz."
        ),
    },
    "parquet-all-types-legacy-format": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": (
            "Kernel ParquetFileReaderSuite: same as parquet-all-types, legacy parquet list/map "
            "layout."
        ),
    },
    "parquet-decimal-dictionaries": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": "Kernel ParquetFileReaderSuite: dictionary-encoded decimals.",
    },
    "parquet-decimal-dictionaries-v1": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "layout": "its single data file could not be copied here (log intact)",
        "why": "Kernel ParquetFileReaderSuite: dictionary decimals in a parquet v1 file.",
    },
    "parquet-decimal-dictionaries-v2": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": "Kernel ParquetFileReaderSuite: dictionary decimals in a parquet v2 file.",
    },
    "parquet-decimal-type": {
        "expect": "ok",
        "version": 0,
        "num_files": 1,
        "why": "Kernel ParquetFileReaderSuite/ParquetFileWriterSuite: decimals of many precisions.",
    },
    "snapshot-data0": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Kernel LogReplaySuite \"standalone DeltaLogSuite: 'snapshot'\": first append, version "
            "0."
        ),
    },
    "snapshot-data1": {
        "expect": "ok",
        "version": 1,
        "num_files": 4,
        "why": "Same suite: second append, version 1, all 4 files live.",
    },
    "snapshot-data2": {
        "expect": "ok",
        "version": 2,
        "num_files": 2,
        "why": "Same suite: overwrite at version 2, only the data2 files live.",
    },
    "snapshot-data2-deleted": {
        "expect": "ok",
        "version": 4,
        "num_files": 3,
        "why": "Same suite: DELETE of the data2 rows at version 4, only data3 files live.",
    },
    "snapshot-data3": {
        "expect": "ok",
        "version": 3,
        "num_files": 4,
        "why": "Same suite: append at version 3, data2 + data3 files live.",
    },
    "snapshot-repartitioned": {
        "expect": "ok",
        "version": 5,
        "num_files": 2,
        "why": "Same suite: dataChange=false repartition into 2 files at version 5.",
    },
    "snapshot-vacuumed": {
        "expect": "ok",
        "version": 5,
        "num_files": 2,
        "why": "Same suite: VACUUM leaves version 5 and exactly the 2 live files on disk.",
    },
    "spark-variant-checkpoint": {
        "expect": "ok",
        "version": 2,
        "num_files": 4,
        "checkpoint_version": 2,
        "layout": "classic checkpoint at v2",
        "why": (
            "Kernel ScanSuite (4 scan files at latest, 2 at v0), LastCheckpointHintSuite and "
            "Spark DSv2 variant test; reader feature variantType-preview; state from the classic "
            "checkpoint at v2."
        ),
    },
    "table-with-columnmapping-mode-id": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite column mapping id (6 rows in ReadIntegrationTestSuite); "
            "protocol 2/5."
        ),
    },
    "table-with-columnmapping-mode-name": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": "Kernel DeltaTableReadsSuite column mapping name; protocol 2/5.",
    },
    "table-with-icebegCompatV2Enabled": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Generated with column mapping id + icebergCompatV2 (folder name misspelt upstream); "
            "protocol 2/7, no reader features."
        ),
    },
    "time-travel-partition-changes-a": {
        "expect": "ok",
        "version": 0,
        "num_files": 10,
        "why": (
            "Standalone DeltaTimeTravelSuite 'time travel with partition changes': v0 partitioned"
            " by part5."
        ),
    },
    "time-travel-partition-changes-b": {
        "expect": "ok",
        "version": 1,
        "num_files": 4,
        "why": "Same test: v1 overwrites with a new partition column part2 (overwriteSchema).",
    },
    "time-travel-schema-changes-a": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": "Standalone DeltaTimeTravelSuite 'time travel with schema changes': v0 = range(10).",
    },
    "time-travel-schema-changes-b": {
        "expect": "ok",
        "version": 1,
        "num_files": 4,
        "why": "Same test: v1 appends with an extra column (mergeSchema).",
    },
    "time-travel-start": {
        "expect": "ok",
        "version": 0,
        "num_files": 2,
        "why": (
            "Standalone DeltaTimeTravelSuite timestamp tests; commit mtimes were set by the "
            "generator (file mtimes are not preserved in this copy)."
        ),
    },
    "time-travel-start-start20": {
        "expect": "ok",
        "version": 1,
        "num_files": 4,
        "why": "Same suite: second commit 20 minutes later.",
    },
    "time-travel-start-start20-start40": {
        "expect": "ok",
        "version": 2,
        "num_files": 6,
        "why": "Same suite: third commit 40 minutes later; kernel CreateCheckpointSuite copies it.",
    },
    "type-widening": {
        "expect": "ok",
        "version": 2,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite type widening on basic/decimal types (2 rows); reader "
            "features timestampNtz + typeWidening-preview."
        ),
    },
    "type-widening-nested": {
        "expect": "ok",
        "version": 2,
        "num_files": 2,
        "why": (
            "Kernel DeltaTableReadsSuite type widening inside struct/array/map; reader feature "
            "typeWidening-preview."
        ),
    },
    "update-deleted-directory": {
        "expect": "ok",
        "version": 0,
        "num_files": 10,
        "checkpoint_version": 0,
        "layout": (
            "classic checkpoint at v0; metaData has no schemaString (old Metadata() default; "
            "treat as empty schema); data files absent (log-only table)"
        ),
        "delta_rs": "fails: null schemaString in checkpoint metaData",
        "why": (
            "Generated for DeltaLogSuite 'update deleted directory' (the test deletes the table "
            "at runtime and expects version -1); as stored: 10 adds in v0 plus a v0 checkpoint."
        ),
    },
    "v2-checkpoint-json": {
        "expect": "ok",
        "version": 2,
        "num_files": 4,
        "checkpoint_version": 2,
        "layout": "V2 checkpoint (JSON manifest + 2 sidecars)",
        "why": (
            "Kernel ReadIntegrationTestSuite (10 rows) and LastCheckpointHintSuite: V2 checkpoint"
            " at v2 whose top-level file is JSON and points to 2 parquet sidecars in "
            "_delta_log/_sidecars."
        ),
    },
    "v2-checkpoint-parquet": {
        "expect": "ok",
        "version": 2,
        "num_files": 4,
        "checkpoint_version": 2,
        "layout": "V2 checkpoint (parquet manifest + 2 sidecars)",
        "why": "Same as v2-checkpoint-json with a parquet top-level checkpoint file.",
    },
    "versions-not-contiguous": {
        "expect": "error",
        "error_kind": "version_gap",
        "layout": "metaData has no schemaString (old Metadata() default; treat as empty schema)",
        "why": (
            "Kernel DeltaTableReadsSuite 'error - version not contiguous': 00..01.json deleted, "
            "message 'versions are not contiguous: ([0, 2])'."
        ),
    },
}
