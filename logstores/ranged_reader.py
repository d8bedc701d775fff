"""A seekable, read-only file over ranged GET requests (for Parquet footers and checkpoints)."""

from __future__ import annotations

import io
from collections.abc import Callable

from .errors import StoreIOError

#: Reads at least this much per request, so small sequential reads do not each cost a request.
DEFAULT_BUFFER = 1 << 20


class RangedReader(io.RawIOBase):
    """Raw file over ``fetch(start, stop) -> bytes`` (``stop`` exclusive) of a known size.

    Wrap it in :class:`io.BufferedReader` (see :func:`open_ranged`) for buffering.

    Args:
        size: Size of the object in bytes.
        fetch: Returns the bytes in ``[start, stop)``; ``start < stop <= size``.
    """

    def __init__(self, size: int, fetch: Callable[[int, int], bytes]) -> None:
        super().__init__()
        self._size = size
        self._fetch = fetch
        self._pos = 0

    def readable(self) -> bool:  # noqa: D102
        return True

    def seekable(self) -> bool:  # noqa: D102
        return True

    def tell(self) -> int:  # noqa: D102
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:  # noqa: D102
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"invalid whence: {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]  # noqa: D102
        view = memoryview(buffer).cast("B")
        stop = min(self._size, self._pos + len(view))
        if stop <= self._pos:
            return 0
        data = self._fetch(self._pos, stop)
        n = len(data)
        if n != stop - self._pos:
            raise StoreIOError(
                f"ranged read returned {n} bytes for [{self._pos}, {stop}): the server ignored "
                "or misread the Range header"
            )
        view[:n] = data
        self._pos += n
        return n

    def readall(self) -> bytes:  # noqa: D102
        if self._pos >= self._size:
            return b""
        data = self._fetch(self._pos, self._size)
        self._pos += len(data)
        return data

    def size(self) -> int:
        """Size of the object in bytes."""
        return self._size


def open_ranged(
    size: int, fetch: Callable[[int, int], bytes], buffer_size: int = DEFAULT_BUFFER
) -> io.BufferedReader:
    """A buffered, seekable reader over ranged requests."""
    return io.BufferedReader(RangedReader(size, fetch), buffer_size=buffer_size)
