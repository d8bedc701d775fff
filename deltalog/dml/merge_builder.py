"""The clause methods every MERGE builder shares: ``when_matched_update(...)`` and the rest.

:class:`MergeClauses` collects :class:`~deltalog.dml.merge_clauses.Clause` objects under
delta-rs's method names, with delta-spark's keyword spellings (``set=``, ``values=``) beside
delta-rs's ``updates=``. Python's :class:`~deltalog.dml.merge.TableMerger` and Spark's
:class:`~deltalog.spark.merge.SparkMerger` subclass it and differ only in how they run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from deltalog.errors import InvalidExpressionError, InvalidOptionError

from .merge_clauses import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, Clause

__all__ = ["MergeClauses", "merge_aliases"]


def merge_aliases(source_alias: str | None, target_alias: str | None) -> tuple[str, str]:
    """The source's and the target's names in conditions (``source``/``target`` by default).

    Raises:
        InvalidOptionError: An alias is not a name, or both are the same name.
    """
    for name, alias in (("source_alias", source_alias), ("target_alias", target_alias)):
        if alias is not None and (not isinstance(alias, str) or not alias.isidentifier()):
            raise InvalidOptionError(f"{name} must be a name, not {alias!r}", option=name)
    source, target = source_alias or "source", target_alias or "target"
    if source.lower() == target.lower():
        raise InvalidOptionError(
            "the source and the target need different aliases", option="source_alias"
        )
    return source, target


class MergeClauses:
    """A MERGE's ``when_...`` clauses, in the order they were added.

    Clauses of each kind apply in that order; the first whose condition holds for a row takes
    it (delta-spark's rule). Conditions and values are SQL text naming columns as
    ``<alias>.<column>``; a value may also be a Python literal.
    """

    _clauses: list[Clause]

    def when_matched_update(
        self,
        updates: Mapping[str, Any] | None = None,
        predicate: str | None = None,
        *,
        set: Mapping[str, Any] | None = None,
    ) -> Self:
        """``WHEN MATCHED [AND predicate] THEN UPDATE SET column = value, ...``.

        Args:
            updates: Target column -> SQL expression (or a Python literal).
            predicate: Only matched rows for which this is true.
            set: delta-spark's spelling of ``updates``.
        """
        return self._add(MATCHED, "update", predicate, _one(updates, set, "updates", "set"))

    def when_matched_update_all(
        self, predicate: str | None = None, except_cols: Sequence[str] | None = None
    ) -> Self:
        """``WHEN MATCHED [AND predicate] THEN UPDATE SET *``.

        Every target column (but ``except_cols``) from the source column of the same name.
        """
        return self._add(MATCHED, "update", predicate, star=True, except_cols=except_cols)

    def when_matched_delete(self, predicate: str | None = None) -> Self:
        """``WHEN MATCHED [AND predicate] THEN DELETE``."""
        return self._add(MATCHED, "delete", predicate)

    def when_not_matched_insert(
        self,
        updates: Mapping[str, Any] | None = None,
        predicate: str | None = None,
        *,
        values: Mapping[str, Any] | None = None,
    ) -> Self:
        """``WHEN NOT MATCHED [AND predicate] THEN INSERT (columns) VALUES (...)``.

        Columns left out are null. ``values`` is delta-spark's spelling of ``updates``.
        """
        return self._add(
            NOT_MATCHED, "insert", predicate, _one(updates, values, "updates", "values")
        )

    def when_not_matched_insert_all(
        self, predicate: str | None = None, except_cols: Sequence[str] | None = None
    ) -> Self:
        """``WHEN NOT MATCHED [AND predicate] THEN INSERT *`` (but ``except_cols``, left null)."""
        return self._add(NOT_MATCHED, "insert", predicate, star=True, except_cols=except_cols)

    def when_not_matched_by_source_update(
        self,
        updates: Mapping[str, Any] | None = None,
        predicate: str | None = None,
        *,
        set: Mapping[str, Any] | None = None,
    ) -> Self:
        """``WHEN NOT MATCHED BY SOURCE [AND predicate] THEN UPDATE SET ...``.

        For target rows no source row matched; the expressions may name target columns only.
        """
        return self._add(
            NOT_MATCHED_BY_SOURCE, "update", predicate, _one(updates, set, "updates", "set")
        )

    def when_not_matched_by_source_delete(self, predicate: str | None = None) -> Self:
        """``WHEN NOT MATCHED BY SOURCE [AND predicate] THEN DELETE``."""
        return self._add(NOT_MATCHED_BY_SOURCE, "delete", predicate)

    def _add(
        self,
        kind: str,
        action: str,
        predicate: str | None,
        assignments: Mapping[str, Any] | None = None,
        *,
        star: bool = False,
        except_cols: Sequence[str] | None = None,
    ) -> Self:
        if not star and action in ("update", "insert") and assignments is None:
            raise InvalidExpressionError(f"{action} needs the columns to set")
        self._clauses.append(
            Clause.build(kind, action, predicate, assignments, star=star, except_cols=except_cols)
        )
        return self


def _one(first: Any, second: Any, first_name: str, second_name: str) -> Any:
    if first is not None and second is not None:
        raise InvalidExpressionError(f"give {first_name} or {second_name}, not both")
    return first if first is not None else second
