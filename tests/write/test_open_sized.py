"""A data file's footer is opened with the size the listing gave, where the store takes one."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import pytest

from deltalog.logstores.local import LocalLogStore
from deltalog.write.data_files import _open_sized


def test_a_store_method_replaced_at_run_time_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    store = LocalLogStore()
    with _open_sized(store, str(tmp_path / "f"), 3) as fh:  # the real method takes size=
        assert fh.read() == b"abc"
    real = LocalLogStore.open_input
    calls: list[str] = []

    def without_size(self: LocalLogStore, path: str) -> BinaryIO:
        calls.append(path)
        return real(self, path)

    monkeypatch.setattr(LocalLogStore, "open_input", without_size)
    with _open_sized(store, str(tmp_path / "f"), 3) as fh:
        assert fh.read() == b"abc"
    assert calls == [str(tmp_path / "f")]
