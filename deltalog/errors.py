"""Every error deltalog raises, under one root.

::

    DeltaLogError
    ├── TableNotFoundError            no _delta_log, or it holds no commit
    ├── TableAlreadyExistsError       create() on a location that already has a log
    ├── VersionNotFoundError          the version cannot be rebuilt (too new, or cleaned up)
    ├── TimestampOutOfRangeError      time travel to before the first or after the latest commit
    ├── CorruptLogError               the log on storage breaks the protocol
    │   ├── VersionGapError           commit versions are not contiguous
    │   ├── MalformedCommitError      a line is not UTF-8, not JSON, or not a valid action
    │   ├── EmptyCommitError          a commit file holds no action (0 bytes: a lost write)
    │   ├── MissingProtocolError      no protocol action at the start of the replayed history
    │   ├── MissingMetadataError      no metaData action at the start of the replayed history
    │   ├── CorruptCheckpointError    a checkpoint or _last_checkpoint cannot be used
    │   ├── MissingDataFileError      a data or deletion-vector file the log names is gone
    │   ├── DeletionVectorError       a deletion vector does not decode
    │   └── IncompleteCommitError     an external store's commit entry cannot be finished
    ├── UnsupportedFeatureError       the table needs a protocol feature deltalog lacks
    │   └── RowTrackingRewriteError   a rewrite would lose the row ids of a row-tracking table
    ├── MissingExtraError             an optional dependency is not installed; names the extra
    ├── InvalidInputError             the caller's input is refused; nothing was written
    │   ├── InvalidSchemaError        a schema that cannot be represented or parsed
    │   ├── SchemaMismatchError       a data file's schema does not match the table
    │   │   ├── ColumnMappingError    a data file lacks a column-mapped table's physical names/ids
    │   │   ├── UnsupportedParquetTypeError  a type Delta readers cannot read (ns timestamps,
    │   │   │                                unsigned ints...); says how to write it (also an
    │   │   │                                InvalidSchemaError, when a new schema has one)
    │   │   ├── SchemaEvolutionError  new columns cannot be merged in (a type change, ...)
    │   │   └── LossyConversionError  a value would change when cast to the table's type
    │   │                             (nanoseconds cut to microseconds, an integer overflow)
    │   ├── PartitioningMismatchError partitionBy differs from an existing table's partitioning
    │   ├── InvalidWriteModeError     a write mode that is not append/overwrite/error/ignore
    │   ├── InvalidOptionError        an unknown write option, or a value it cannot take
    │   │   └── ConflictingOptionsError   two spellings of one setting disagree
    │   ├── PartitionValueError       a partition value that does not parse or match the schema
    │   ├── InvalidPathError          a file path that escapes the table or cannot be encoded
    │   ├── DataFileNotFoundError     a data file (or directory) to add does not exist
    │   ├── DuplicateFileError        a file given twice, or added while already live
    │   ├── AppendOnlyError           removing data from a delta.appendOnly table
    │   ├── InvalidPropertyError      an unknown delta.* table property, or an invalid value
    │   ├── ClusteringChangeError     a change that would break a clustered table's clustering
    │   ├── FileNotInTableError       removing a file that is not live
    │   ├── MissingRowCountError      an add without numRecords on a row-tracking table
    │   ├── ConstraintViolationError  rows break NOT NULL or CHAR/VARCHAR (Spark writes)
    │   ├── InvalidRetentionError     a negative vacuum retention
    │   │   └── RetentionTooShortError    shorter than the table's, with the check enabled
    │   ├── InvalidPredicateError     a partition predicate that names other columns or bad values
    │   │   └── ReplaceWhereMismatchError  written data falls outside an overwrite's predicate
    │   ├── InvalidExpressionError    an UPDATE/MERGE SQL expression that does not parse or fit
    │   ├── InvalidMergeClausesError  a MERGE with no clause, or a clause without a condition
    │   │                             before another of its kind
    │   └── MultipleSourceRowMatchError  a MERGE matched one target row with several source rows
    ├── SparkWriteError               the Spark job writing a DataFrame's files failed
    ├── CannotVacuumLiteError         lite vacuum needs commits that log cleanup removed
    ├── VacuumEndError                VACUUM deleted files but could not commit VACUUM END
    ├── TransactionClosedError        a transaction was used after it committed or aborted
    ├── StorageError                  the log store failed (wraps logstores.LogStoreError)
    │   └── StorageConfigurationError the store cannot be set up (scheme, SDK, options)
    │       └── UnsafeStorageError    no real compare-and-swap configured (s3:// without one)
    └── CommitFailedError             a commit did not land (``retryable``, ``conflict``)
        ├── CommitAttemptsExhaustedError   every attempt lost the race; the last winner is named
        ├── CommitStatusUnknownError       the store failed mid-commit: it MAY have landed
        ├── SnapshotExpiredError           log cleanup removed the commits after this snapshot
        └── ConcurrentModificationError    a winning commit conflicts with this transaction
            ├── ProtocolChangedError          the winner changed the protocol
            ├── MetadataChangedError          the winner changed the metadata (schema, ...)
            ├── ConcurrentTransactionError    the winner wrote an app id or domain this one uses
            ├── ConcurrentAppendError         the winner added files this transaction should read
            ├── ConcurrentDeleteReadError     the winner removed a file this transaction read
            ├── ConcurrentDeleteDeleteError   both removed the same file
            └── ConcurrentVacuumError         a running VACUUM may delete files this one adds

The six conflict classes are also importable under delta-spark's names
(``ConcurrentAppendException`` and so on), so code ported from PySpark catches the same thing.

Errors that stand for a problem with one file or version carry it as attributes, so scripts can
act on them without parsing messages.
"""

from __future__ import annotations


class DeltaLogError(Exception):
    """Root of every error raised by deltalog."""


class TableNotFoundError(DeltaLogError):
    """There is no Delta table at the location (no ``_delta_log``, or no commit in it)."""


class TableAlreadyExistsError(DeltaLogError):
    """A table already exists where one was to be created."""


class VersionNotFoundError(DeltaLogError):
    """The requested version does not exist or can no longer be reconstructed."""

    def __init__(self, message: str, *, version: int | None = None) -> None:
        super().__init__(message)
        self.version = version


class TimestampOutOfRangeError(DeltaLogError):
    """Time travel to a timestamp before the first available commit or after the latest one."""


class CorruptLogError(DeltaLogError):
    """The transaction log on storage violates the Delta protocol."""

    def __init__(self, message: str, *, version: int | None = None, path: str | None = None):
        super().__init__(message)
        self.version = version
        self.path = path


class VersionGapError(CorruptLogError):
    """Commit files are not contiguous: a version is missing."""


class MalformedCommitError(CorruptLogError):
    """A commit file has a line that is not UTF-8, not JSON, or not a valid action."""


class EmptyCommitError(CorruptLogError):
    """A commit file holds no action: it is empty (0 bytes) or only blank lines.

    Every writer puts at least a ``commitInfo`` in a commit, so an empty one is a write that
    never reached storage (a crash on a store without atomic writes, a truncated copy); reading
    it as "no change" would silently drop whatever that commit added or removed.
    """


class MissingProtocolError(CorruptLogError):
    """The replayed history has no ``protocol`` action."""


class MissingMetadataError(CorruptLogError):
    """The replayed history has no ``metaData`` action."""


class CorruptCheckpointError(CorruptLogError):
    """A checkpoint or ``_last_checkpoint`` is unreadable or inconsistent."""


class MissingDataFileError(CorruptLogError):
    """A data file or deletion-vector file that the log references does not exist (``path``)."""


class DeletionVectorError(CorruptLogError):
    """A deletion vector cannot be decoded (encoding, magic number, size or checksum)."""


class IncompleteCommitError(CorruptLogError):
    """S3 + DynamoDB: a commit's entry is incomplete and its content is gone; repair by hand.

    The DynamoDB entry of commit ``version`` is marked incomplete, ``N.json`` was never
    written, and the temp file that held the commit (``temp_path``) no longer exists, so the
    commit can be neither finished nor skipped: nothing can be read or committed past version
    ``version - 1``. The message says how to repair it (delete the entry, or write the commit
    file by hand and mark the entry complete), as delta-spark's documentation describes. The
    log store's :class:`~deltalog.logstores.errors.OrphanedCommitEntryError` is the
    ``__cause__``.

    Attributes:
        version: The stuck commit's version.
        path: Its commit file, which does not exist.
        temp_path: The temp file the entry names, which does not exist either.
        entry: Where the entry is: the DynamoDB table and key.
    """

    def __init__(
        self, message: str, *, version: int, path: str, temp_path: str, entry: str
    ) -> None:
        super().__init__(message, version=version, path=path)
        self.temp_path = temp_path
        self.entry = entry


class UnsupportedFeatureError(DeltaLogError):
    """The table's protocol requires a feature deltalog does not implement.

    Attributes:
        feature: The feature name (or ``readerVersion=N`` / ``writerVersion=N``).
        operation: ``"read"`` or ``"write"``.
    """

    def __init__(self, message: str, *, feature: str, operation: str) -> None:
        super().__init__(message)
        self.feature = feature
        self.operation = operation


class RowTrackingRewriteError(UnsupportedFeatureError):
    """A rewrite (compaction) of a row-tracking table, which would lose its rows' row ids.

    The protocol keeps row ids stable across rewrites only through materialised row-id
    columns in the rewritten files, which deltalog does not write; it refuses instead.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, feature="rowTracking", operation="write")


class MissingExtraError(DeltaLogError, ImportError):
    """A feature needs an optional dependency that is not installed.

    The message names the pip extra that brings it (``pip install 'deltalog[spark]'``).

    Attributes:
        extra: The extra to install.
        package: The missing top-level package.
    """

    def __init__(self, message: str, *, extra: str, package: str) -> None:
        super().__init__(message)
        self.extra = extra
        self.package = package


class InvalidInputError(DeltaLogError, ValueError):
    """Input from the caller was refused; nothing was written."""


class InvalidSchemaError(InvalidInputError):
    """A schema cannot be parsed or has no Delta equivalent."""


class SchemaMismatchError(InvalidInputError):
    """A data file's schema does not match the table's schema.

    Attributes:
        path: The offending data file.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class ColumnMappingError(SchemaMismatchError):
    """A data file's columns are not the physical names (or ids) of a column-mapped table.

    Attributes:
        path: The offending data file.
    """


class UnsupportedParquetTypeError(SchemaMismatchError, InvalidSchemaError):
    """A data file (or a new table's Arrow schema) has a type Delta readers cannot read.

    delta-spark, delta-rs and deltalog must all be able to read every file of a table, so a
    file is refused when one of them cannot read a column's physical type as the table's
    Delta type: nanosecond timestamps (``INT64 TIMESTAMP(NANOS)``, pandas' default; INT96
    timestamps as Spark writes them are fine), unsigned integers, ``float16``, time of day,
    durations and intervals. The message names the column and says how to write it instead.
    When the type comes from an Arrow schema given to create or change a table, this is also
    an :class:`InvalidSchemaError`.

    Attributes:
        path: The offending data file (``None`` for a schema).
        column: The dotted path of the offending column.
    """

    def __init__(self, message: str, *, path: str | None = None, column: str = "") -> None:
        super().__init__(message, path=path)
        self.column = column


class SchemaEvolutionError(SchemaMismatchError):
    """New data cannot be merged into the table schema (``mergeSchema``); nothing was written.

    A column changes type (allowed only as a supported widening on a table with
    ``delta.enableTypeWidening=true``), a partition column would change, or a name clashes.

    Attributes:
        column: The dotted path of the offending column, when there is one.
    """

    def __init__(self, message: str, *, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


class LossyConversionError(SchemaMismatchError):
    """A value of the data would change when cast to its column's type; nothing was written.

    Delta timestamps hold microseconds: nanosecond timestamps (pandas' default) are converted
    when no value has sub-microsecond digits, and refused otherwise. An integer too large for
    the table's narrower column is refused the same way.

    Attributes:
        column: The column (dotted for nested fields).
    """

    def __init__(self, message: str, *, column: str = "") -> None:
        super().__init__(message)
        self.column = column


class PartitioningMismatchError(InvalidInputError):
    """A write's ``partitionBy`` differs from the partitioning of the existing table.

    Only ``mode="overwrite"`` with ``overwriteSchema`` may change the partitioning.
    """


class InvalidWriteModeError(InvalidInputError):
    """An unknown write mode (not append, overwrite, error/errorifexists or ignore).

    Nothing was written.
    """


class InvalidOptionError(InvalidInputError):
    """A write option deltalog does not know, or a value it cannot take; nothing was written.

    Attributes:
        option: The option name as given.
    """

    def __init__(self, message: str, *, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


class ConflictingOptionsError(InvalidOptionError):
    """Two spellings of one setting were given different values; nothing was written.

    An option and the keyword argument that aliases it (``replaceWhere`` and ``predicate``), a
    keyword and its deprecated spelling (``predicate`` and ``where``), or two option names that
    differ only in case.
    """


class PartitionValueError(InvalidInputError):
    """A partition value does not parse as its column's type, or names an unknown column."""


class InvalidPathError(InvalidInputError):
    """A file path escapes the table root or is otherwise unusable."""


class DataFileNotFoundError(InvalidInputError):
    """A data file or directory given to add does not exist (or holds no data files).

    Attributes:
        path: The path as given.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class DuplicateFileError(InvalidInputError):
    """A file is given twice, or is already live in the table."""


class AppendOnlyError(InvalidInputError):
    """The table is append-only (``delta.appendOnly``) and the operation would remove data."""


class ClusteringChangeError(InvalidInputError):
    """A change to a clustered table that its clustering metadata cannot follow.

    Partitioning a clustered table, or dropping or retyping a clustering column, would leave
    the ``delta.clustering`` domain naming columns the table no longer has.
    """


class InvalidPropertyError(InvalidInputError):
    """A ``delta.*`` table property delta-spark would refuse: unknown, or an invalid value."""


class FileNotInTableError(InvalidInputError):
    """A file to remove is not live in the snapshot the transaction reads.

    Attributes:
        path: The file.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class MissingRowCountError(InvalidInputError):
    """An ``add`` for a row-tracking table has no ``numRecords`` in its statistics.

    Fresh row ids are assigned from each file's row count, so (as in delta-spark) a file
    without one cannot be committed to a table that supports ``rowTracking``.

    Attributes:
        path: The file.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class InvalidPredicateError(InvalidInputError):
    """A partition predicate names a column that is not a partition column, or a bad value."""


class ReplaceWhereMismatchError(InvalidPredicateError):
    """Data written by an overwrite with a predicate (``predicate=``) falls outside it."""


class InvalidExpressionError(InvalidInputError):
    """An SQL expression of an UPDATE or MERGE (an assignment or a condition) is refused.

    It does not parse, names a column or function that does not exist, gives a value whose
    type does not fit where it goes (a string column assigned to an int column, ...), or fails
    on a row (an overflow, a division by zero, a string that is not a number).
    """


class InvalidMergeClausesError(InvalidInputError):
    """A MERGE's ``when_...`` clauses are refused; nothing was written.

    The merge has no clause (delta-spark's ``DELTA_MERGE_MISSING_WHEN``), or a clause without a
    condition is followed by another clause of its kind, which it would leave no row to take:
    only the last ``MATCHED``, ``NOT MATCHED`` or ``NOT MATCHED BY SOURCE`` clause may omit its
    condition (delta-spark's ``DELTA_NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION``,
    ``DELTA_NON_LAST_NOT_MATCHED_CLAUSE_OMIT_CONDITION`` and
    ``DELTA_NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION``).
    """


class MultipleSourceRowMatchError(InvalidInputError):
    """A MERGE matched one target row with more than one source row.

    delta-spark's ``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``: which source row
    should update the target row is ambiguous (only a MERGE whose one matched clause is an
    unconditional delete allows it). Attributes name the first such target row and how many
    source rows matched it.
    """

    def __init__(
        self, message: str, *, target_row: dict[str, object] | None = None, matches: int = 0
    ) -> None:
        super().__init__(message)
        self.target_row = target_row
        self.matches = matches


class ConstraintViolationError(InvalidInputError):
    """Rows break a constraint of the table (NOT NULL, CHECK, CHAR/VARCHAR length)."""


class InvalidRetentionError(InvalidInputError):
    """A vacuum retention that cannot be used (negative); nothing was deleted."""


class RetentionTooShortError(InvalidRetentionError):
    """A vacuum retention shorter than the table's ``delta.deletedFileRetentionDuration``.

    delta-spark's ``DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT``: a concurrent writer's files that
    are not committed yet, or files old snapshots still read, could be deleted. Pass
    ``enforce_retention_duration=False`` (CLI: ``--no-retention-check``) only when no other
    writer or reader uses the table. Nothing was deleted.

    Attributes:
        configured_hours: The table's retention in hours (rounded up).
    """

    def __init__(self, message: str, *, configured_hours: int) -> None:
        super().__init__(message)
        self.configured_hours = configured_hours


class CannotVacuumLiteError(DeltaLogError):
    """Lite vacuum needs commits that log cleanup already deleted; run a full vacuum.

    delta-spark's ``DELTA_CANNOT_VACUUM_LITE``. Nothing was deleted.
    """


class VacuumEndError(DeltaLogError):
    """VACUUM deleted files, but could not commit ``VACUUM END``; the cause is chained.

    The deletes are done (``files``). Unless the ``VACUUM END`` landed after all (a
    :class:`CommitStatusUnknownError` cause), the log still shows this vacuum running: until
    its lease runs out (``lease_until_ms``), writers that add files last modified before its
    cutoff fail with :class:`ConcurrentVacuumError` and other vacuums refuse to start. After
    that both go ahead on their own; nothing needs repairing.

    Attributes:
        files: Locations of the files deleted.
        start_version: The ``VACUUM START`` commit.
        lease_until_ms: When the fence stops holding others back (ms since the epoch).
    """

    def __init__(
        self, message: str, *, files: list[str], start_version: int, lease_until_ms: int
    ) -> None:
        super().__init__(message)
        self.files = files
        self.start_version = start_version
        self.lease_until_ms = lease_until_ms


class SparkWriteError(DeltaLogError):
    """The Spark job writing a DataFrame's files failed; nothing was committed.

    The Spark exception is the ``__cause__``. Files that finished before the failure are not
    referenced by the log (readers never see them); they are left for cleanup.
    """


class TransactionClosedError(DeltaLogError):
    """A transaction was used after it committed, failed or was abandoned."""


class StorageError(DeltaLogError):
    """The log store failed; the store's own error is the ``__cause__``."""


class StorageConfigurationError(StorageError, ValueError):
    """The table's log store cannot be set up: unknown scheme, missing SDK, bad options."""


class UnsafeStorageError(StorageConfigurationError):
    """The store has no real compare-and-swap configured, so two writers could both commit.

    The message explains the options (for ``s3://``: ``s3.commit_protocol=conditional-put`` or
    ``dynamodb``).
    """


class CommitFailedError(DeltaLogError):
    """A commit did not land; nothing was written (except :class:`CommitStatusUnknownError`).

    Attributes:
        retryable: Whether re-running the whole operation (new transaction, fresh reads) may
            succeed. deltalog never re-runs an operation itself: only the caller can redo the
            reads a transaction made.
        conflict: Whether another writer's commit caused the failure.
    """

    def __init__(self, message: str, *, retryable: bool = False, conflict: bool = False):
        super().__init__(message)
        self.retryable = retryable
        self.conflict = conflict


class CommitAttemptsExhaustedError(CommitFailedError):
    """Every allowed attempt lost the race for the next version to another writer.

    No winner conflicted with the transaction; the table is just busy. Retrying later, or with a
    larger ``max_attempts``, can succeed.

    Attributes:
        attempts: How many versions were tried.
        last_version: The last version tried.
    """

    def __init__(self, message: str, *, attempts: int, last_version: int) -> None:
        super().__init__(message, retryable=True, conflict=True)
        self.attempts = attempts
        self.last_version = last_version


class CommitStatusUnknownError(CommitFailedError):
    """The store failed while the commit was written, and whether it landed cannot be known.

    Unlike every other :class:`CommitFailedError`, this one does not say that nothing was
    written: the commit may be in the table's history. Look for ``txn_id`` in the
    ``commitInfo.txnId`` of the table's history (``DeltaTable.history()``) from ``version`` on
    before running the operation again, or make the write idempotent with
    ``Transaction.set_transaction``. Not ``retryable``: re-running it blindly can commit the
    same rows twice.

    Attributes:
        version: The version the commit was written at.
        txn_id: The commit's ``commitInfo.txnId`` (``None`` if it has none).
    """

    def __init__(self, message: str, *, version: int, txn_id: str | None) -> None:
        super().__init__(message, retryable=False, conflict=False)
        self.version = version
        self.txn_id = txn_id


class SnapshotExpiredError(CommitFailedError):
    """The log was cleaned up past the snapshot a transaction read; nothing was written.

    The commits after that snapshot are gone, so the transaction can neither be checked
    against them nor placed after them. Re-running the operation on the latest version can
    succeed (``retryable``).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True, conflict=True)


class ConcurrentModificationError(CommitFailedError):
    """A commit that landed first conflicts with this transaction; nothing was written.

    Attributes:
        winning_version: The version of the conflicting commit.
        winning_operation: Its ``commitInfo.operation`` (``None`` if it has no commitInfo).
        winning_commit_info: Its whole ``commitInfo``.
        path: The data file at the heart of the conflict, when there is one.
        partition: That file's partition values, when there is a file.
    """

    def __init__(
        self,
        message: str,
        *,
        winning_version: int,
        winning_commit_info: dict[str, object] | None = None,
        path: str | None = None,
        partition: dict[str, str | None] | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message, retryable=retryable, conflict=True)
        self.winning_version = winning_version
        self.winning_commit_info = dict(winning_commit_info or {})
        operation = self.winning_commit_info.get("operation")
        self.winning_operation = operation if isinstance(operation, str) else None
        self.path = path
        self.partition = partition


class ProtocolChangedError(ConcurrentModificationError):
    """The winner changed the protocol in a way this transaction cannot follow.

    It changed the protocol while this transaction changes it too, downgraded it, or moved it
    to one deltalog cannot write (then ``retryable`` is false).
    """


class MetadataChangedError(ConcurrentModificationError):
    """The winner changed the table metadata (schema, partitioning or properties)."""


class ConcurrentTransactionError(ConcurrentModificationError):
    """The winner wrote an application's ``txn`` or a metadata domain this transaction uses.

    Either a ``txn`` for an app id this transaction read or sets, or the same metadata domain
    this transaction writes.

    Attributes:
        app_id: The application id, for a ``txn`` conflict.
        domain: The domain name, for a domain-metadata conflict.
    """

    def __init__(
        self,
        message: str,
        *,
        winning_version: int,
        winning_commit_info: dict[str, object] | None = None,
        app_id: str | None = None,
        domain: str | None = None,
    ) -> None:
        super().__init__(
            message, winning_version=winning_version, winning_commit_info=winning_commit_info
        )
        self.app_id = app_id
        self.domain = domain


class ConcurrentAppendError(ConcurrentModificationError):
    """The winner added a file that matches what this transaction read.

    Attributes:
        predicate: The read predicate the file matches, as text (``"TRUE"`` for a whole-table
            read).
    """

    def __init__(
        self,
        message: str,
        *,
        winning_version: int,
        winning_commit_info: dict[str, object] | None = None,
        path: str | None = None,
        partition: dict[str, str | None] | None = None,
        predicate: str = "TRUE",
    ) -> None:
        super().__init__(
            message,
            winning_version=winning_version,
            winning_commit_info=winning_commit_info,
            path=path,
            partition=partition,
        )
        self.predicate = predicate


class ConcurrentDeleteReadError(ConcurrentModificationError):
    """The winner removed a file this transaction read."""


class ConcurrentDeleteDeleteError(ConcurrentModificationError):
    """The winner removed a file this transaction removes too."""


class ConcurrentVacuumError(ConcurrentModificationError):
    """A VACUUM runs (or ran) while this commit was in flight; nothing was written.

    Raised to a writer whose commit adds a file old enough for that vacuum to delete (last
    modified before its cutoff, as registering existing Parquet files does): the vacuum may
    already have deleted it, or may delete it after its last look at the log. Raised to a vacuum
    when another vacuum holds the table's vacuum lease. Re-run the operation once the vacuum has
    ended (``retryable``); see :mod:`deltalog.maintenance.vacuum`.

    Attributes:
        cutoff_ms: The vacuum's cutoff: files last modified before it are its candidates.
        winning_version: The vacuum's commit, or the version of the snapshot in which it was
            seen running.
    """

    def __init__(
        self,
        message: str,
        *,
        winning_version: int,
        winning_commit_info: dict[str, object] | None = None,
        path: str | None = None,
        cutoff_ms: int | None = None,
    ) -> None:
        super().__init__(
            message,
            winning_version=winning_version,
            winning_commit_info=winning_commit_info,
            path=path,
        )
        self.cutoff_ms = cutoff_ms


# delta-spark's names for the same conditions.
ConcurrentModificationException = ConcurrentModificationError
ProtocolChangedException = ProtocolChangedError
MetadataChangedException = MetadataChangedError
ConcurrentTransactionException = ConcurrentTransactionError
ConcurrentAppendException = ConcurrentAppendError
ConcurrentDeleteReadException = ConcurrentDeleteReadError
ConcurrentDeleteDeleteException = ConcurrentDeleteDeleteError
