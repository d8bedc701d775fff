"""The Parquet codec of ``deltalog.spark.write``: the ``compression`` option, then the session.

delta-spark 4.4 takes the ``compression`` write option over the session's
``spark.sql.parquet.compression.codec`` (snappy when unset); it refuses a
``delta.parquet.compression.codec`` table property as an unknown configuration, so the codec is
not a table setting. deltalog follows: same files, same codecs, same names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from deltalog import InvalidOptionError
from deltalog.spark import write
from deltalog.spark.options import resolve

CODEC_CONF = "spark.sql.parquet.compression.codec"


def _codecs(root: Path) -> set[tuple[str, str]]:
    """``(codec in the footer, the name's infix)`` of every data file under ``root``."""
    out = set()
    for directory, _, names in os.walk(root):
        for name in names:
            if name.endswith(".parquet") and "_delta_log" not in directory:
                meta = pq.ParquetFile(os.path.join(directory, name)).metadata
                out.add((meta.row_group(0).column(0).compression, name.split(".")[-2]))
    return out


def test_the_compression_option_resolves_in_any_case() -> None:
    assert resolve("append", {"Compression": "ZSTD"}).compression == "zstd"
    assert resolve("append", None).compression is None
    with pytest.raises(InvalidOptionError) as info:
        resolve("append", {"compression": "lzo"})
    assert info.value.option == "compression"


@pytest.fixture
def gzip_session(delta_spark: Any) -> Iterator[Any]:
    delta_spark.conf.set(CODEC_CONF, "gzip")
    try:
        yield delta_spark
    finally:
        delta_spark.conf.unset(CODEC_CONF)


def test_option_over_session_over_snappy_as_delta_spark(gzip_session: Any, tmp_path: Path) -> None:
    spark = gzip_session
    df = spark.range(100).coalesce(1)
    cases = {"session": {}, "option": {"compression": "zstd"}}
    for case, options in cases.items():
        df.write.format("delta").options(**options).save(str(tmp_path / f"spark-{case}"))
        write(df, str(tmp_path / f"ours-{case}"), options=options)
    assert _codecs(tmp_path / "spark-session") == {("GZIP", "gz")}
    assert _codecs(tmp_path / "ours-session") == {("GZIP", "gz")}
    assert _codecs(tmp_path / "spark-option") == {("ZSTD", "zstd")}
    assert _codecs(tmp_path / "ours-option") == {("ZSTD", "zstd")}
    spark.conf.unset(CODEC_CONF)
    write(df, str(tmp_path / "ours-default"))
    assert _codecs(tmp_path / "ours-default") == {("SNAPPY", "snappy")}
