"""The table's view of its log store: locations inside ``_delta_log``, errors mapped."""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterator, Mapping

from deltalog.errors import (
    IncompleteCommitError,
    StorageConfigurationError,
    StorageError,
    TableNotFoundError,
    UnsafeStorageError,
)
from deltalog.logstores import (
    FileStatus,
    LogFileNotFoundError,
    LogStore,
    LogStoreError,
    StoreConfigurationError,
    UnsafeStoreConfigurationError,
    open_store,
)
from deltalog.logstores.errors import OrphanedCommitEntryError, is_store_failure
from deltalog.logstores.local import local_path_from_uri
from deltalog.logstores.options import redact_uri
from deltalog.protocol.paths import (
    LAST_CHECKPOINT,
    LOG_DIR,
    decode_path,
    has_scheme,
    normalize_path,
    scheme_family,
)
from deltalog.protocol.user_input import check_options, check_uri


@contextlib.contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Re-raise any storage failure (other than not-found) as :class:`StorageError`.

    A storage failure is a log store error, or an ``OSError`` with an ``errno`` that a local
    file raised while a decoder read it (see :func:`~deltalog.logstores.errors.is_store_failure`).
    An external commit store's entry that cannot be finished is :class:`IncompleteCommitError`.
    """
    try:
        yield
    except (FileNotFoundError, FileExistsError):
        raise
    except OrphanedCommitEntryError as exc:
        raise IncompleteCommitError(
            f"{what}: {exc}",
            version=exc.version,
            path=exc.commit_path,
            temp_path=exc.temp_path,
            entry=exc.entry,
        ) from exc
    except UnsafeStoreConfigurationError as exc:
        raise UnsafeStorageError(f"{what}: {exc}") from exc
    except StoreConfigurationError as exc:
        raise StorageConfigurationError(f"{what}: {exc}") from exc
    except LogStoreError as exc:
        raise StorageError(f"{what}: {exc}") from exc
    except OSError as exc:
        if not is_store_failure(exc):
            raise
        raise StorageError(f"{what}: {exc}") from exc


class TableStorage:
    """A table root on a log store.

    Args:
        store: The log store.
        root: The table root in the store's notation (as returned by ``open_store``).
        uri: The table URI as the user gave it.
    """

    def __init__(self, store: LogStore, root: str, uri: str) -> None:
        self.store = store
        self.root = root.rstrip("/") if root != "/" else root
        self.uri = uri
        self.log_path = LogStore.join(self.root, LOG_DIR)

    @classmethod
    def open(cls, uri: str, options: Mapping[str, str] | None = None) -> TableStorage:
        """Resolve ``uri`` through the log store registry.

        Raises:
            InvalidInputError: ``uri`` is not a non-empty string, or ``options`` not a mapping of
                strings.
            StorageError: No store can serve the URI (unknown scheme, missing SDK, bad options).
        """
        uri, options = check_uri(uri), check_options(options)
        with storage_errors(f"cannot open {redact_uri(uri)}"):
            store, root = open_store(uri, options)
        return cls(store, root, uri)

    def log_file(self, name: str) -> str:
        """Location of ``_delta_log/<name>``."""
        return f"{self.log_path}/{name}"

    def data_file(self, relative: str) -> str:
        """Location of a data file given relative to the table root (already decoded)."""
        return f"{self.root}/{relative}"

    def locate(self, action_path: str) -> str:
        """Where the file an ``add``/``remove`` path names is, in the store's notation.

        The path is percent-decoded (once); a relative one is joined to the root, ``file:`` URIs
        (any case) become filesystem paths, and an absolute URI spelled with another scheme for
        the same store (``s3a://`` on an ``s3://`` table) takes the root's scheme, the one the
        store serves. Empty and ``.`` segments are dropped (:func:`normalize_path`), as Hadoop's
        ``Path`` drops them: every spelling of a file has one location.
        """
        decoded = decode_path(action_path)
        if not (action_path.startswith("/") or has_scheme(action_path)):  # as logged
            return self.data_file(normalize_path(decoded))
        if action_path[:5].lower() == "file:":  # the URI as logged: decoded once, by the parser
            return local_path_from_uri("file:" + action_path[5:])
        if "://" in decoded and "://" in self.root:
            scheme, _, rest = decoded.partition("://")
            root_scheme = self.root.partition("://")[0]
            if scheme_family(scheme) == scheme_family(root_scheme):
                authority, _, key = rest.partition("/")
                return f"{root_scheme}://{authority}{normalize_path('/' + key)}"
        if has_scheme(decoded):
            return decoded
        if decoded.startswith("/"):
            return normalize_path(decoded)
        return self.data_file(normalize_path(decoded))

    def list_log(self, start_name: str = "") -> list[FileStatus]:
        """The ``_delta_log`` listing from ``start_name`` on.

        Raises:
            TableNotFoundError: There is no ``_delta_log`` directory.
        """
        try:
            with storage_errors(f"cannot list {self.log_path}"):
                return list(self.store.list_from(self.log_file(start_name)))
        except LogFileNotFoundError as exc:
            raise TableNotFoundError(f"no Delta table at {self.uri}: no {LOG_DIR}") from exc

    def read_log_file(self, name: str) -> bytes:
        """Read a file of ``_delta_log``; not-found errors pass through as FileNotFoundError."""
        with storage_errors(f"cannot read {name}"):
            return self.store.read(self.log_file(name))

    def view_log_file(self, name: str) -> bytes | mmap.mmap:
        """A file of ``_delta_log``, memory-mapped on a local store (see ``LogStore.read_view``).

        Only for files never rewritten in place, such as commits.
        """
        with storage_errors(f"cannot read {name}"):
            return self.store.read_view(self.log_file(name))

    def read_last_checkpoint(self) -> bytes | None:
        """Content of ``_last_checkpoint``, or ``None`` when absent."""
        try:
            return self.read_log_file(LAST_CHECKPOINT)
        except LogFileNotFoundError:
            return None
