"""``num_records``: a file's row count from its ``stats`` JSON, or ``None``."""

from __future__ import annotations

import pytest

from deltalog.stats.num_records import num_records


@pytest.mark.parametrize(
    ("stats", "expected"),
    [
        ('{"numRecords": 12, "minValues": {}}', 12),
        (b'{"numRecords": 0}', 0),
        (None, None),
        ("", None),
        ('{"minValues": {"id": 1}}', None),
        ('{"numRecords": -1}', None),
        ('{"numRecords": true}', None),
        ('{"numRecords": 2.5}', None),
        ('{"numRecords": "7"}', None),
        ("[1, 2]", None),
        ("{not json", None),
    ],
)
def test_num_records(stats: str | bytes | None, expected: int | None) -> None:
    assert num_records(stats) == expected
