"""Local filesystem log store: create-if-absent through a durable temp file and ``os.link``."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import unquote, urlsplit

from .base import FileStatus, LogStore
from .errors import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    StoreAccessDeniedError,
    StoreConfigurationError,
    StoreIOError,
)
from .options import StoreOptions
from .thread_pool import shared_pool

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

#: Threads for listing a tree and deleting many files (filesystem calls release the GIL).
_IO_THREADS = 4
#: Files at least this big are mapped by ``read_view`` rather than read.
_MAP_MIN_BYTES = 1 << 20


def local_path_from_uri(uri: str) -> str:
    """Turn ``file:///x``, ``file:/x`` or a plain path into an absolute filesystem path.

    Raises:
        StoreConfigurationError: The URI names a remote host.
    """
    if uri.startswith("file:"):
        parts = urlsplit(uri)
        if parts.netloc not in ("", "localhost"):
            raise StoreConfigurationError(f"file URI with a remote host is not supported: {uri}")
        return os.path.abspath(unquote(parts.path))
    return os.path.abspath(uri)


class LocalLogStore(LogStore):
    """Log store for a POSIX filesystem.

    A create-if-absent write goes to a temp file in the same directory, is flushed and fsynced,
    and is then published with ``os.link``, which fails with ``EEXIST`` if the name is taken: the
    kernel decides the race, across processes. ``os.rename`` is never used for commits because it
    silently replaces an existing file. After publishing, the directory is fsynced so that the new
    name survives a power loss.

    Args:
        fsync: Flush files and directories to stable storage (default). Turning it off trades
            durability for speed; atomicity is unaffected.
    """

    is_partial_write_visible = False

    def __init__(self, *, fsync: bool = True) -> None:
        self._fsync = fsync

    @classmethod
    def from_uri(cls, uri: str, options: Mapping[str, str]) -> tuple[LocalLogStore, str]:
        """Build a store for ``uri`` and return it with the root in the store's notation."""
        opts = StoreOptions(options, "local.", ("local.fsync",))
        fsync = (opts.get("local.fsync") or "true").lower() != "false"
        return cls(fsync=fsync), local_path_from_uri(uri)

    def read(self, path: str) -> bytes:  # noqa: D102
        with _mapped(path), open(path, "rb") as fh:
            return fh.read()

    def read_view(self, path: str) -> bytes | mmap.mmap:  # noqa: D102
        with _mapped(path), open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_size >= max(1, _MAP_MIN_BYTES) and _mappable_device(st.st_dev):
                try:
                    return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                except (OSError, ValueError):  # cannot be mapped (or shrank): read it
                    pass
            return fh.read()

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:  # noqa: D102
        self._write(path, data, overwrite=overwrite, fsync=self._fsync)

    def create_hint(self, path: str, data: bytes) -> None:  # noqa: D102
        self._write(path, data, overwrite=False, fsync=False)

    def _write(self, path: str, data: bytes, *, overwrite: bool, fsync: bool) -> None:
        import uuid  # a few ms to import: only when a file is written

        directory = os.path.dirname(path)
        with _mapped(path):
            tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
            try:
                try:
                    self._write_temp(tmp, data, fsync=fsync)
                except (FileNotFoundError, NotADirectoryError):  # made on the first write only
                    os.makedirs(directory, exist_ok=True)
                    self._write_temp(tmp, data, fsync=fsync)
                if overwrite:
                    os.replace(tmp, path)
                else:
                    try:
                        os.link(tmp, path)
                    except FileExistsError as exc:
                        raise FileAlreadyExistsError(f"already exists: {path}") from exc
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            if fsync:
                _fsync_dir(directory)

    def _write_temp(self, tmp: str, data: bytes, *, fsync: bool) -> None:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def list_from(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        directory, start = os.path.split(path)
        with _mapped(directory):
            entries = [e for e in os.scandir(directory) if e.name >= start and e.is_file()]
        entries.sort(key=lambda e: e.name)
        for entry in entries:
            try:
                st = entry.stat()
            except FileNotFoundError:  # deleted after the scan
                continue
            yield FileStatus(entry.path, st.st_size, st.st_mtime_ns // 1_000_000)

    def list_tree(self, path: str) -> Iterator[FileStatus]:  # noqa: D102
        return self.list_tree_where(path, _keep_all)

    def list_tree_where(  # noqa: D102
        self, path: str, keep: Callable[[str], bool]
    ) -> Iterator[FileStatus]:
        names: list[str] = []
        with _mapped(path):
            if not os.path.isdir(path):
                raise FileNotFoundError(errno.ENOENT, "no such directory", path)
            level = [path]
            pool = _io_pool()
            while level:  # one directory level at a time, its directories in parallel
                scanned = list(pool.map(_scan_dir, level))
                level = [d for _, dirs in scanned for d in dirs]
                for files, _ in scanned:
                    names += files
            if not names:
                raise LogFileNotFoundError(f"not found: no files under {path}")
            # One thread stats fastest here: parallel stat calls only contend for the GIL.
            found = _stat_all(sorted(name for name in names if keep(name)))
        yield from found

    def delete_many(self, paths: Sequence[str]) -> None:
        """Unlink on a few threads (the calls release the GIL); missing files are fine."""
        size = -(-len(paths) // _IO_THREADS) or 1  # contiguous: threads mostly in different dirs
        chunks = [list(paths[i : i + size]) for i in range(0, len(paths), size)]
        failures = [e for e in _io_pool().map(self._unlink_all, chunks) if e is not None]
        if failures:
            raise failures[0]

    def _unlink_all(self, paths: list[str]) -> LogStoreError | None:
        first: LogStoreError | None = None
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError:
                try:
                    self.delete(path)  # maps the error to the store's tree
                except LogStoreError as exc:
                    first = first or exc
        return first

    def delete(self, path: str) -> None:  # noqa: D102
        with _mapped(path), contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def stat(self, path: str) -> FileStatus:  # noqa: D102
        with _mapped(path):
            st = os.stat(path)
            if stat.S_ISDIR(st.st_mode):  # a directory is not a file, as on object stores
                raise FileNotFoundError(errno.EISDIR, "is a directory", path)
        return FileStatus(path, st.st_size, st.st_mtime_ns // 1_000_000)

    def local_path(self, path: str) -> str | None:  # noqa: D102
        return path

    def open_input(self, path: str, *, size: int | None = None) -> BinaryIO:  # noqa: D102
        with _mapped(path):
            return open(path, "rb")


#: Filesystems on local block devices or memory, where a mapped file fails only as the disk
#: does. Network and FUSE filesystems (NFS, SMB, gcsfuse, s3fs, dbfs...) are read instead: an
#: I/O error on a mapped page is a signal that kills the process, not an exception.
_LOCAL_FILESYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "overlay", "f2fs", "bcachefs", "ramfs"}
)
_device_types: dict[int, bool] = {}


def _mappable_device(dev: int) -> bool:
    """Whether files on device ``dev`` may be memory-mapped (its filesystem is local).

    Known from ``/proc/self/mountinfo``, once per device; ``False`` wherever that cannot tell
    (another OS, a device no mount line names).
    """
    known = _device_types.get(dev)
    if known is None:
        known = _device_types[dev] = _filesystem_of(dev) in _LOCAL_FILESYSTEMS
    return known


def _filesystem_of(dev: int) -> str | None:
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 2 and fields[2] == wanted and " - " in line:
                    return line.split(" - ", 1)[1].split()[0]
    except OSError:
        return None
    return None


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _io_pool() -> ThreadPoolExecutor:
    """The threads for listing and deleting, shared by every local store of the process."""
    return shared_pool("local-io", _IO_THREADS)


def _keep_all(path: str) -> bool:
    return True


def _scan_dir(directory: str) -> tuple[list[str], list[str]]:
    """The files and the subdirectories of one directory (symlinked ones are not entered)."""
    files: list[str] = []
    dirs: list[str] = []
    try:
        entries = os.scandir(directory)
    except FileNotFoundError:  # deleted during the walk
        return files, dirs
    with entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except FileNotFoundError:  # deleted during the walk
                continue
            if not is_dir:
                files.append(entry.path)
            elif not entry.is_symlink():
                dirs.append(entry.path)
    return files, dirs


def _stat_all(paths: list[str]) -> list[FileStatus]:
    """Size and modification time of each file; files deleted meanwhile are left out."""
    found: list[FileStatus] = []
    add, status_of = found.append, os.stat
    for path in paths:
        try:
            st = status_of(path)
        except FileNotFoundError:
            continue
        add(FileStatus(path, st.st_size, st.st_mtime_ns // 1_000_000))
    return found


@contextlib.contextmanager
def _mapped(path: str) -> Iterator[None]:
    """Map OS errors to the store's error tree."""
    try:
        yield
    except FileAlreadyExistsError:
        raise
    except FileNotFoundError as exc:
        raise LogFileNotFoundError(f"not found: {path}") from exc
    except NotADirectoryError as exc:
        raise LogFileNotFoundError(f"not found: {path}") from exc
    except PermissionError as exc:
        raise StoreAccessDeniedError(f"permission denied: {path}") from exc
    except OSError as exc:
        raise StoreIOError(f"I/O error on {path}: {exc}") from exc
