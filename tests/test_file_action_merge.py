"""The vectorised "last action per key wins" merge of file actions, against a plain loop."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from deltalog.file_actions import _last_per_key


def _reference(
    order: list[bool], adds: list[str], removes: list[str]
) -> tuple[list[int], list[int], set[str]]:
    winner: dict[str, int] = {}
    ia = ir = 0
    for is_add in order:
        if is_add:
            winner[adds[ia]] = ia
            ia += 1
        else:
            winner[removes[ir]] = -1 - ir
            ir += 1
    return (
        sorted(i for i in winner.values() if i >= 0),
        sorted(-1 - i for i in winner.values() if i < 0),
        set(winner),
    )


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 6)), max_size=40))
def test_last_action_per_key_wins_in_log_order(actions: list[tuple[bool, int]]) -> None:
    order = [is_add for is_add, _ in actions]
    adds = [f"k{k}" for is_add, k in actions if is_add]
    removes = [f"k{k}" for is_add, k in actions if not is_add]

    keep_adds, keep_removes, touched = _last_per_key(
        order, pa.array(adds, pa.string()), pa.array(removes, pa.string())
    )

    expected_adds, expected_removes, expected_touched = _reference(order, adds, removes)
    assert keep_adds.to_pylist() == expected_adds
    assert keep_removes.to_pylist() == expected_removes
    assert set(touched.to_pylist()) == expected_touched
    assert len(touched) == len(expected_touched)


def test_chunked_keys_and_unique_appends() -> None:
    adds = pa.chunked_array([["a", "b"], ["c"]], pa.string())
    keep_adds, keep_removes, touched = _last_per_key([True] * 3, adds, pa.array([], pa.string()))
    assert keep_adds.to_pylist() == [0, 1, 2]
    assert keep_removes.to_pylist() == []
    assert touched.to_pylist() == ["a", "b", "c"]
