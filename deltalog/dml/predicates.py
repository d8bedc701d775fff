"""The predicate of a DELETE or UPDATE, from any form callers pass."""

from __future__ import annotations

from deltalog.stats.predicate_input import PredicateLike, as_predicate
from deltalog.stats.predicates import Predicate

__all__ = ["row_predicate"]


def row_predicate(given: PredicateLike) -> Predicate:
    """``given`` as a predicate on the table's rows.

    Raises:
        InvalidPredicateError: It does not parse.
    """
    return as_predicate(given)
