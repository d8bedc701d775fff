"""Which columns of a data file get a dictionary: where it pays, decided from the first rows.

Two tests, either of which gives a column its dictionary:

* parquet-mr's (what delta-spark writes): dictionary-encode the first page (up to
  :data:`PAGE_ROWS` values) and keep the dictionary only if dictionary plus bit-packed indices
  take fewer bytes than the values written plain (``isCompressionSatisfying``); otherwise the
  whole column chunk is plain.
* over the row group: a column whose first page holds repeats but not enough to pass the first
  test (say 100,000 distinct values among a million rows: 18,000 distinct in 20,000) still
  pays when its dictionary is built once for the row group. The number of distinct values is
  estimated from the repeats in the sample (``d = K (1 - e^(-n/K))`` for ``n`` values drawn
  from ``K``, solved for ``K``, plus three standard errors); the column gets a dictionary when
  that dictionary stays under the page limit (so no fallback is expected) and dictionary plus
  indices for the row group's rows come to at most :data:`_MARGIN` of the plain values
  compressed with the file's codec (measured on the sample). delta-spark writes such a column
  plain, at about twice the bytes.

Booleans never get a dictionary (parquet-mr's v1 writer has none for them); nested columns
always do, as do Arrow dictionary columns and columns with no values in the sample. When a
dictionary outgrows :data:`DICTIONARY_PAGE_BYTES` anyway, pyarrow falls back to plain for the
rest of the column chunk, as parquet-mr does.
"""

from __future__ import annotations

import io
import math

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["DICTIONARY_PAGE_BYTES", "PAGE_ROWS", "dictionary_columns", "estimate_distinct"]

#: parquet-mr's ``parquet.page.row.count.limit``: values per data page at most.
PAGE_ROWS = 20_000
#: parquet-mr's ``parquet.dictionary.page.size``: past it a column falls back to plain.
DICTIONARY_PAGE_BYTES = 1 << 20
#: Repeats a sample needs before the number of distinct values is estimated from them.
_MIN_REPEATS = 50
#: Dictionary plus indices may take at most this share of the compressed plain values.
_MARGIN = 0.8


def dictionary_columns(table: pa.Table | pa.RecordBatch, codec: str = "snappy") -> list[str]:
    """The columns of ``table`` (a file's first row group) worth a dictionary.

    Args:
        table: The rows of the file's first row group.
        codec: pyarrow's name of the file's codec (for the compressed size of plain values).
    """
    sample = table.slice(0, PAGE_ROWS)
    out = []
    for name, column in zip(sample.column_names, sample.columns, strict=True):
        t = column.type
        if pa.types.is_boolean(t):
            continue
        if pa.types.is_nested(t):
            out.extend(_leaf_paths(t, name))
            continue
        if pa.types.is_dictionary(t) or _dictionary_pays(column, table.num_rows, codec):
            out.append(name)
    return out


def estimate_distinct(sample_values: int, sample_distinct: int) -> float:
    """Distinct values of a column whose ``sample_values`` values held ``sample_distinct``.

    Solves ``d = K (1 - exp(-n / K))`` for ``K`` (values drawn uniformly from ``K``);
    infinite when every sampled value is distinct.
    """
    n, d = sample_values, sample_distinct
    if d >= n:
        return math.inf
    low, high = float(d), float(d)
    while high * -math.expm1(-n / high) < d:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        if mid * -math.expm1(-n / mid) < d:
            low = mid
        else:
            high = mid
    return high


def _dictionary_pays(column: pa.Array | pa.ChunkedArray, rows: int, codec: str) -> bool:
    values = column.drop_null()
    count = len(values)
    if count == 0:
        return True
    distinct = pc.unique(values)
    width = _plain_width(values.type)
    if width is None:  # variable length: a 4-byte length before each value
        if pa.types.is_binary_view(values.type) or pa.types.is_string_view(values.type):
            values, distinct = values.cast(pa.large_binary()), distinct.cast(pa.large_binary())
        plain = 4 * count + int(pc.sum(pc.binary_length(values)).as_py() or 0)
        dictionary = 4 * len(distinct) + int(pc.sum(pc.binary_length(distinct)).as_py() or 0)
    else:
        plain, dictionary = width * count, width * len(distinct)
    indices = 1 + (count * (len(distinct) - 1).bit_length() + 7) // 8
    if dictionary + indices < plain:  # parquet-mr's first-page test
        return True
    return _pays_over_row_group(values, len(distinct), plain, rows * count // len(column), codec)


def _pays_over_row_group(
    values: pa.Array | pa.ChunkedArray, distinct: int, plain: int, rows: int, codec: str
) -> bool:
    """Whether one dictionary for ``rows`` values like ``values`` beats plain (module doc)."""
    count = len(values)
    repeats = count - distinct
    if repeats < _MIN_REPEATS or rows <= count:
        return False
    estimate = estimate_distinct(count, distinct) * (1 + 3 / math.sqrt(repeats))
    per_value = plain / count
    in_group = estimate * -math.expm1(-rows / estimate)  # distinct values among ``rows``
    if in_group * per_value > DICTIONARY_PAGE_BYTES:
        return False
    compressed = _compressed_plain(values, codec) / count
    bits = max(1, math.ceil(math.log2(in_group)))
    cost = in_group * compressed + rows * bits / 8
    return cost <= _MARGIN * rows * compressed


def _compressed_plain(values: pa.Array | pa.ChunkedArray, codec: str) -> int:
    """Bytes of ``values`` written plain with ``codec`` (one column chunk)."""
    sink = io.BytesIO()
    table = pa.table({"v": values})
    pq.write_table(table, sink, compression=codec, use_dictionary=False, write_statistics=False)
    meta = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata.row_group(0).column(0)
    return int(meta.total_compressed_size)


def _plain_width(t: pa.DataType) -> int | None:
    """Bytes of one value of ``t`` written plain by pyarrow; ``None`` for variable length."""
    if pa.types.is_decimal(t):  # FIXED_LEN_BYTE_ARRAY of the fewest bytes holding the precision
        return int(math.ceil(t.precision * math.log2(10)) + 1 + 7) // 8
    if pa.types.is_float16(t):
        return 2
    if pa.types.is_fixed_size_binary(t):
        return int(t.byte_width)
    try:
        bits = int(t.bit_width)
    except ValueError:
        return None
    return 4 if bits <= 32 else bits // 8  # INT32 holds the narrower integers


def _leaf_paths(t: pa.DataType, path: str) -> list[str]:
    """The Parquet column paths under a nested column (pyarrow's compliant names)."""
    if pa.types.is_struct(t):
        return [
            p
            for i in range(t.num_fields)
            for p in _leaf_paths(t.field(i).type, f"{path}.{t.field(i).name}")
        ]
    if pa.types.is_map(t):
        return [
            *_leaf_paths(t.key_type, f"{path}.key_value.key"),
            *_leaf_paths(t.item_type, f"{path}.key_value.value"),
        ]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_paths(t.value_type, f"{path}.list.element")
    return [path]
