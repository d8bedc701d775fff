"""What a row-level operation did: :class:`DmlResult`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DmlResult"]


@dataclass(frozen=True, slots=True)
class DmlResult:
    """What a DELETE, UPDATE or MERGE did.

    Attributes:
        version: The version committed; when nothing changed (no commit), the version read.
        operation: ``DELETE``, ``UPDATE`` or ``MERGE``.
        committed: Whether a commit was written (``False`` when no row changed).
        metrics: The commit's ``operationMetrics`` as numbers (delta-spark's names:
            ``numDeletedRows``, ``numUpdatedRows``, ``numTargetRowsInserted``, ...). Also
            readable as ``result["numDeletedRows"]`` or ``result["num_deleted_rows"]``.
    """

    version: int
    operation: str
    committed: bool
    metrics: Mapping[str, int] = field(default_factory=dict)

    def __getitem__(self, name: str) -> int:
        """A metric by delta-spark's name, or its snake_case spelling (delta-rs's style)."""
        if name in self.metrics:
            return self.metrics[name]
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
        return self.metrics[camel]
