"""A seekable, read-only file over ranged GET requests (for Parquet footers and checkpoints)."""

from __future__ import annotations

import io
from collections.abc import Callable

from .errors import StoreIOError

#: Reads at least this much per request, so small sequential reads do not each cost a request.
DEFAULT_BUFFER = 1 << 20
#: The end of an object that :meth:`~logstores.object_store.ObjectLogStore.open_input` fetches
#: whole on the first read inside it: a Parquet footer's length and the footer itself (below
#: this size) then cost one request, not two.
FOOTER_TAIL = 64 << 10


class RangedReader(io.RawIOBase):
    """Raw file over ``fetch(start, stop) -> bytes`` (``stop`` exclusive) of a known size.

    Wrap it in :class:`io.BufferedReader` (see :func:`open_ranged`) for buffering.

    Args:
        size: Size of the object in bytes.
        fetch: Returns the bytes in ``[start, stop)``; ``start < stop <= size``.
        tail: The first read within the object's last ``tail`` bytes fetches all of them, and
            later reads there are served from memory (0: every read fetches what it needs).
    """

    def __init__(self, size: int, fetch: Callable[[int, int], bytes], tail: int = 0) -> None:
        super().__init__()
        self._size = size
        self._fetch = fetch
        self._pos = 0
        self._tail_start = max(0, size - tail) if tail > 0 else size
        self._tail: bytes | None = None

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
        if self._pos >= self._tail_start:
            if self._tail is None:
                self._tail = self._fetch(self._tail_start, self._size)
            if len(self._tail) != self._size - self._tail_start:
                self._tail = None
                raise StoreIOError(
                    f"ranged read of the last {self._size - self._tail_start} bytes returned "
                    "another length: the server ignored or misread the Range header"
                )
            data = self._tail[self._pos - self._tail_start : stop - self._tail_start]
        else:
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
    size: int,
    fetch: Callable[[int, int], bytes],
    buffer_size: int = DEFAULT_BUFFER,
    *,
    tail: int = 0,
) -> io.BufferedReader:
    """A buffered, seekable reader over ranged requests (``tail``: see :class:`RangedReader`)."""
    return io.BufferedReader(RangedReader(size, fetch, tail), buffer_size=buffer_size)
