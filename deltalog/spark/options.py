"""Write modes and options of ``deltalog.spark.write``, named and checked as delta-spark does.

``df.write.format("delta").mode(m).option(k, v)`` takes Spark's save modes (``append``,
``overwrite``, ``error``/``errorifexists``/``default``, ``ignore``; any case) and option names
matched without regard to case. :func:`resolve` turns the mode, the ``options`` mapping and the
keyword arguments that spell the same settings (``predicate`` for ``replaceWhere``, ...)
into one :class:`WriteSettings`, refusing unknown names, bad values and two spellings of one
setting that disagree. Nothing here imports Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from deltalog.errors import ConflictingOptionsError, InvalidOptionError, InvalidWriteModeError
from deltalog.stats.predicate_input import PredicateLike
from deltalog.write.parquet_options import CODECS

#: A write mode as given (any case); see :data:`MODES`.
Mode = Literal["append", "overwrite", "error", "errorifexists", "default", "ignore"]
#: A mode as resolved.
ResolvedMode = Literal["append", "overwrite", "error", "ignore"]
#: Spark's mode names -> the resolved mode.
MODES: dict[str, ResolvedMode] = {
    "append": "append",
    "overwrite": "overwrite",
    "error": "error",
    "errorifexists": "error",
    "default": "error",
    "ignore": "ignore",
}
#: Spark's ``SaveMode`` names, as delta-spark records ``operationParameters.mode``.
SAVE_MODE_NAMES: dict[ResolvedMode, str] = {
    "append": "Append",
    "overwrite": "Overwrite",
    "error": "ErrorIfExists",
    "ignore": "Ignore",
}
#: Option value types accepted (PySpark's ``.option()`` turns bools and numbers into text).
OptionValue = str | bool | int
#: The options deltalog honours, by lower-case name -> delta-spark's spelling.
OPTIONS = {
    name.lower(): name
    for name in (
        "mergeSchema",
        "overwriteSchema",
        "replaceWhere",
        "txnAppId",
        "txnVersion",
        "userMetadata",
        "partitionOverwriteMode",
        "maxRecordsPerFile",
        "compression",
    )
}
#: Session configurations delta-spark falls back to when the option is not given.
AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class WriteSettings:
    """One write's mode and options, resolved.

    Attributes:
        mode: ``append``, ``overwrite``, ``error`` or ``ignore``.
        merge_schema: ``mergeSchema`` (``None``: not given; the session's
            ``spark.databricks.delta.schema.autoMerge.enabled`` decides).
        overwrite_schema: ``overwriteSchema``.
        replace_where: ``replaceWhere`` (text or a predicate).
        app_id: ``txnAppId``.
        app_version: ``txnVersion``.
        user_metadata: ``userMetadata`` (``None``: the session's
            ``spark.databricks.delta.commitInfo.userMetadata`` decides).
        partition_overwrite_mode: ``static`` or ``dynamic`` (``None``: the session's).
        max_records_per_file: ``maxRecordsPerFile`` (``None``: the session's
            ``spark.sql.files.maxRecordsPerFile``; 0 or less: no limit).
        compression: ``compression``, the Parquet codec in Spark's names, lower case (``None``:
            the session's ``spark.sql.parquet.compression.codec``).
    """

    mode: ResolvedMode
    merge_schema: bool | None = None
    overwrite_schema: bool = False
    replace_where: PredicateLike | None = None
    app_id: str | None = None
    app_version: int | None = None
    user_metadata: str | None = None
    partition_overwrite_mode: Literal["static", "dynamic"] | None = None
    max_records_per_file: int | None = None
    compression: str | None = None


def resolve(
    mode: str,
    options: Mapping[str, OptionValue] | None,
    *,
    replace_where: PredicateLike | None = None,
    partition_overwrite_mode: str | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    schema_mode: str | None = None,
    user_metadata: str | None = None,
) -> WriteSettings:
    """Resolve a write's mode, options and keyword arguments into one :class:`WriteSettings`.

    Args:
        mode: A Spark save mode, in any case.
        options: delta-spark option names (any case) to values.
        replace_where: Alias of ``replaceWhere`` (``deltalog.spark.write``'s ``predicate``).
        partition_overwrite_mode: Alias of ``partitionOverwriteMode``.
        app_id: Alias of ``txnAppId``.
        app_version: Alias of ``txnVersion``.
        schema_mode: ``"merge"`` (``mergeSchema=true``) or ``"overwrite"``
            (``overwriteSchema=true``).
        user_metadata: Alias of ``userMetadata``.

    Raises:
        InvalidWriteModeError: An unknown mode.
        InvalidOptionError: An unknown option name or a value the option cannot take.
        ConflictingOptionsError: Two spellings of one setting with different values.
    """
    resolved = MODES.get(mode.lower()) if isinstance(mode, str) else None
    if resolved is None:
        raise InvalidWriteModeError(
            f"unknown write mode {mode!r}: use 'append', 'overwrite', 'error' (or "
            "'errorifexists', the default) or 'ignore'"
        )
    given = _by_name(options)
    if schema_mode not in (None, "merge", "overwrite"):
        raise InvalidOptionError(
            f"schema_mode must be 'merge', 'overwrite' or None, not {schema_mode!r}",
            option="schema_mode",
        )
    merge = _flag(given, "mergeSchema")
    overwrite = _flag(given, "overwriteSchema")
    if schema_mode == "merge":
        merge = _agree("mergeSchema", merge, True, "schema_mode='merge'")
    if schema_mode == "overwrite":
        overwrite = _agree("overwriteSchema", overwrite, True, "schema_mode='overwrite'")
    where_text = given.get("replaceWhere")
    if where_text is not None and replace_where is not None and where_text != replace_where:
        raise ConflictingOptionsError(
            f"option 'replaceWhere'={where_text!r} and predicate={replace_where!r} disagree; "
            "give the setting once",
            option="replaceWhere",
        )
    where: PredicateLike | None = where_text if where_text is not None else replace_where
    if isinstance(where, str) and not where.strip():
        raise InvalidOptionError("replaceWhere is empty", option="replaceWhere")
    overwrite_mode = _agree(
        "partitionOverwriteMode",
        _lower(given.get("partitionOverwriteMode")),
        _lower(partition_overwrite_mode),
        "partition_overwrite_mode",
    )
    if overwrite_mode not in (None, "static", "dynamic"):
        raise InvalidOptionError(
            f"partitionOverwriteMode must be 'static' or 'dynamic', not {overwrite_mode!r}",
            option="partitionOverwriteMode",
        )
    version = _agree("txnVersion", _long(given, "txnVersion"), app_version, "app_version")
    return WriteSettings(
        mode=resolved,
        merge_schema=merge,
        overwrite_schema=bool(overwrite),
        replace_where=where,
        app_id=_agree("txnAppId", given.get("txnAppId"), app_id, "app_id"),
        app_version=version,
        user_metadata=_agree(
            "userMetadata", given.get("userMetadata"), user_metadata, "user_metadata"
        ),
        partition_overwrite_mode="dynamic"
        if overwrite_mode == "dynamic"
        else ("static" if overwrite_mode == "static" else None),
        max_records_per_file=_long(given, "maxRecordsPerFile", negative=True),
        compression=_codec(given.get("compression")),
    )


def _codec(text: str | None) -> str | None:
    """The ``compression`` option's codec, lower case, if it is one deltalog writes."""
    if text is None:
        return None
    codec = text.strip().lower()
    if codec not in CODECS:
        raise InvalidOptionError(
            f"option 'compression' must be a Parquet codec deltalog writes ({sorted(CODECS)}), "
            f"not {text!r}; nothing was written",
            option="compression",
        )
    return codec


def gather(
    options: Mapping[str, OptionValue] | None,
    keywords: Mapping[str, object],
    partition_by: Sequence[str] | str,
) -> tuple[dict[str, OptionValue], list[str]]:
    """The options and partition columns of a write, from every spelling a Spark user may use.

    ``DataFrameWriter.save(path, format, mode, partitionBy, **options)`` takes delta-spark's
    options as keyword arguments and the partition columns as ``partitionBy`` (a name or a
    list); ``deltalog.spark.write`` also takes ``options={...}`` and ``partition_by``. Option
    names are checked later (:func:`resolve`), in any case.

    Args:
        options: The ``options`` mapping (or ``None``).
        keywords: The other keyword arguments: option names, and ``partitionBy``.
        partition_by: The ``partition_by`` argument: a column name or a sequence of them.

    Returns:
        All options in one mapping, and the partition columns.

    Raises:
        InvalidOptionError: ``options`` is not a mapping, or the partition columns are not
            names.
        ConflictingOptionsError: A setting given in two places with different values.
    """
    if options is not None and not isinstance(options, Mapping):
        raise InvalidOptionError(
            f"options must be a mapping of option names to values, not {type(options).__name__}"
        )
    merged: dict[str, OptionValue] = dict(options or {})
    columns = _columns("partition_by", partition_by)
    for key, value in keywords.items():
        if key == "partitionBy":
            spark_columns = _columns("partitionBy", value)
            if columns and spark_columns != columns:
                raise ConflictingOptionsError(
                    f"partition_by={columns} and partitionBy={spark_columns} disagree; "
                    "give the partition columns once",
                    option="partitionBy",
                )
            columns = spark_columns
            continue
        if key in merged and _text(merged[key]) != _text(value):
            raise ConflictingOptionsError(
                f"option {key!r} is given in options= and as a keyword argument with different "
                "values; give it once",
                option=key,
            )
        merged[key] = value  # type: ignore[assignment]  # checked by resolve()
    return merged, columns


def _columns(name: str, value: object) -> list[str]:
    columns = [value] if isinstance(value, str) else value
    if not isinstance(columns, Sequence) or not all(isinstance(c, str) for c in columns):
        raise InvalidOptionError(
            f"{name} must be a column name or a list of them, not {value!r}", option=name
        )
    return list(columns)


def _text(value: object) -> str:
    """An option value as PySpark passes it to the JVM (``True`` -> ``"true"``)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _by_name(options: Mapping[str, OptionValue] | None) -> dict[str, str]:
    """The options by delta-spark's spelling, values as text (as PySpark passes them)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidOptionError(
            f"options must be a mapping of option names to values, not {type(options).__name__}"
        )
    out: dict[str, str] = {}
    for key, value in options.items():
        name = OPTIONS.get(key.lower()) if isinstance(key, str) else None
        if name is None:
            raise InvalidOptionError(
                f"unknown write option {key!r}; deltalog takes {sorted(OPTIONS.values())} "
                "(names in any case); nothing was written",
                option=str(key),
            )
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str | int):
            text = str(value)
        else:
            raise InvalidOptionError(
                f"option {key!r} must be a str, bool or int, not {type(value).__name__}",
                option=str(key),
            )
        if name in out and out[name] != text:
            raise ConflictingOptionsError(
                f"option {name!r} is given twice (names ignore case) with different values",
                option=str(key),
            )
        out[name] = text
    return out


def _flag(given: Mapping[str, str], name: str) -> bool | None:
    text = given.get(name)
    if text is None:
        return None
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidOptionError(f"option {name!r} must be 'true' or 'false', not {text!r}",
                                 option=name)  # fmt: skip
    return lowered == "true"


def _long(given: Mapping[str, str], name: str, *, negative: bool = False) -> int | None:
    text = given.get(name)
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or (value < 0 and not negative) or not -(2**63) <= value < 2**63:
        kind = "an integer" if negative else "a non-negative integer"
        raise InvalidOptionError(f"option {name!r} must be {kind}, not {text!r}", option=name)
    return value


def _lower(value: object) -> str | None:
    return value.lower() if isinstance(value, str) else None if value is None else str(value)


def _agree(name: str, option: _T | None, keyword: _T | None, alias: str) -> _T | None:
    """The one value of a setting given as an option and/or a keyword argument."""
    if option is not None and keyword is not None and option != keyword:
        raise ConflictingOptionsError(
            f"option {name!r}={option!r} and {alias}={keyword!r} disagree; give the setting once",
            option=name,
        )
    return option if option is not None else keyword
