"""Google Cloud Storage log store: create-if-absent through ``ifGenerationMatch=0``.

GCS decides the race itself: an upload with ``ifGenerationMatch=0`` succeeds only if no live
object has the name, and the losers get HTTP 412.

Options (``storage_options``):

``gcs.endpoint``
    API endpoint, for emulators and test servers (``STORAGE_EMULATOR_HOST`` works too);
``gcs.project``
    project id (optional for object access);
``gcs.credentials_file`` (``google_service_account``, ``google_service_account_path``,
``service_account_path``, ``google_application_credentials``)
    a service-account JSON key; otherwise Application Default Credentials;
``gcs.anonymous``
    ``true`` to send no credentials (emulators, public buckets);
``gcs.max_attempts``
    attempts per request for throttled or transient failures (default 8).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import google.auth.exceptions as auth_exceptions
import requests
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from google.cloud.storage import exceptions as storage_exceptions

from .base import FileStatus, LogStore
from .errors import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    StoreAccessDeniedError,
    StoreConfigurationError,
    StoreIOError,
    StoreThrottledError,
    StoreUnavailableError,
)
from .object_store import ObjectLogStore
from .options import StoreOptions, split_bucket_url
from .retry import StoreRetryPolicy

KNOWN_OPTIONS = (
    "gcs.endpoint",
    "gcs.project",
    "gcs.credentials_file",
    "gcs.anonymous",
    "gcs.max_attempts",
)


def map_gcs_error(exc: Exception, what: str) -> LogStoreError:
    """Translate a google-cloud-storage / google-auth / requests exception."""
    if isinstance(exc, storage_exceptions.DataCorruption):
        return StoreUnavailableError(f"{what}: checksum mismatch in transfer")
    if isinstance(exc, api_exceptions.NotFound):
        return LogFileNotFoundError(f"not found: {what}")
    if isinstance(exc, api_exceptions.Forbidden | api_exceptions.Unauthorized):
        return StoreAccessDeniedError(f"access denied: {what} ({exc.code})")
    if isinstance(exc, api_exceptions.TooManyRequests | api_exceptions.ServiceUnavailable):
        return StoreThrottledError(f"throttled: {what} ({exc.code})")
    if isinstance(exc, api_exceptions.ServerError):
        return StoreUnavailableError(f"service error: {what} ({exc.code})")
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        return StoreIOError(f"{what} failed: {exc.code} {exc.message}")
    if isinstance(exc, auth_exceptions.DefaultCredentialsError):
        return StoreAccessDeniedError(
            f"{what}: no Google credentials found (set gcs.credentials_file, "
            "GOOGLE_APPLICATION_CREDENTIALS, or gcs.anonymous=true for an emulator)"
        )
    if isinstance(exc, auth_exceptions.RefreshError):
        return StoreAccessDeniedError(f"{what}: credentials were refused")
    if isinstance(
        exc,
        auth_exceptions.TransportError
        | requests.ConnectionError
        | requests.Timeout
        | requests.exceptions.ChunkedEncodingError,
    ):
        return StoreUnavailableError(f"{what}: {type(exc).__name__}")
    return StoreIOError(f"{what}: {type(exc).__name__}")


_SDK_ERRORS = (
    api_exceptions.GoogleAPIError,
    auth_exceptions.GoogleAuthError,
    requests.RequestException,
    storage_exceptions.DataCorruption,
    storage_exceptions.InvalidResponse,
)


@contextlib.contextmanager
def gcs_errors(what: str) -> Iterator[None]:
    """Re-raise SDK exceptions as log store errors (``raise ... from``)."""
    try:
        yield
    except LogStoreError:
        raise
    except _SDK_ERRORS as exc:
        raise map_gcs_error(exc, what) from exc


class GCSLogStore(ObjectLogStore):
    """Log store over one GCS bucket.

    Args:
        client: A ``google.cloud.storage.Client``.
        prefix: ``gs://bucket/``, the notation of every path.
        bucket: The bucket name.
        retry: Backoff for throttled and transient requests (the SDK's own retries are off).
    """

    def __init__(
        self, client: Any, prefix: str, bucket: str, retry: StoreRetryPolicy | None = None
    ) -> None:
        super().__init__(prefix, retry)
        self.client = client
        self.bucket = client.bucket(bucket)

    @classmethod
    def from_uri(cls, uri: str, options: Mapping[str, str]) -> tuple[LogStore, str]:
        """Build the store for ``gs://bucket/path`` from ``storage_options``.

        Raises:
            StoreConfigurationError: Bad options or credentials that cannot be loaded.
        """
        prefix, bucket, key = split_bucket_url(uri)
        opts = StoreOptions(options, "gcs.", KNOWN_OPTIONS)
        endpoint = opts.get("gcs.endpoint", "google_endpoint")
        project = opts.get("gcs.project", "google_project_id", "project_id") or "deltalog"
        key_file = opts.get(
            "gcs.credentials_file",
            "google_service_account",
            "service_account",
            "google_service_account_path",
            "service_account_path",
            "google_application_credentials",
        )
        kwargs: dict[str, Any] = {"project": project}
        if endpoint:
            kwargs["client_options"] = {"api_endpoint": endpoint}
        with gcs_errors(f"creating the GCS client for {prefix}"):
            if opts.get_bool("gcs.anonymous", default=False):
                kwargs["credentials"] = AnonymousCredentials()  # type: ignore[no-untyped-call]
                client = storage.Client(**kwargs)
            elif key_file:
                client = _service_account_client(key_file, kwargs)
            else:
                client = storage.Client(**kwargs)
        retry = StoreRetryPolicy(
            max_attempts=opts.get_int("gcs.max_attempts", default=8, minimum=1)
        )
        root = prefix + key if key else prefix.rstrip("/")
        return cls(client, prefix, bucket, retry), root

    def _put(self, key: str, data: bytes, *, if_absent: bool) -> None:
        where = self.path_of(key)
        blob = self.bucket.blob(key)
        try:
            blob.upload_from_string(
                data,
                content_type="application/octet-stream",
                if_generation_match=0 if if_absent else None,
                retry=None,
            )
        except api_exceptions.PreconditionFailed as exc:
            if not if_absent:
                raise map_gcs_error(exc, f"PUT {where}") from exc
            raise FileAlreadyExistsError(f"already exists: {where}") from exc
        except _SDK_ERRORS as exc:
            raise map_gcs_error(exc, f"PUT {where}") from exc

    def _get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes:
        blob = self.bucket.blob(key)
        with gcs_errors(f"GET {self.path_of(key)}"):
            if start is None:
                data: bytes = blob.download_as_bytes(retry=None)
            else:
                end = None if stop is None else stop - 1
                data = blob.download_as_bytes(start=start, end=end, retry=None, checksum=None)
        return data

    def _head(self, key: str) -> FileStatus:
        where = self.path_of(key)
        with gcs_errors(f"HEAD {where}"):
            blob = self.bucket.get_blob(key, retry=None)
        if blob is None:
            raise LogFileNotFoundError(f"not found: {where}")
        return _status(self.path_of(key), blob)

    def _delete(self, key: str) -> None:
        with contextlib.suppress(LogFileNotFoundError), gcs_errors(f"DELETE {self.path_of(key)}"):
            self.bucket.blob(key).delete(retry=None)

    def _list(
        self, prefix: str, start_key: str, *, recursive: bool = False
    ) -> Iterator[FileStatus]:
        out: list[FileStatus] = []
        with gcs_errors(f"LIST {self.path_of(prefix)}"):
            blobs = self.client.list_blobs(
                self.bucket,
                prefix=prefix,
                delimiter=None if recursive else "/",
                start_offset=start_key if start_key > prefix else None,
                retry=None,
            )
            for blob in blobs:
                if blob.name != prefix and blob.name >= start_key:
                    out.append(_status(self.path_of(blob.name), blob))
        return iter(out)

    def _any_under(self, prefix: str) -> bool:
        with gcs_errors(f"LIST {self.path_of(prefix)}"):
            blobs = self.client.list_blobs(self.bucket, prefix=prefix, max_results=1, retry=None)
            return any(True for _ in blobs)


def _service_account_client(key_file: str, kwargs: dict[str, Any]) -> Any:
    """A client signing in with the service-account key file ``key_file``.

    Raises:
        StoreConfigurationError: The file cannot be read or is not a service-account key. The
            message never quotes the option's value: it may be key JSON pasted where a path was
            expected.
    """
    unreadable = ""
    try:
        return storage.Client.from_service_account_json(key_file, **kwargs)
    except OSError as exc:
        unreadable = f"{type(exc).__name__} ({exc.strerror})"
    except ValueError as exc:
        raise StoreConfigurationError(
            f"cannot load gcs.credentials_file: {type(exc).__name__}"
        ) from exc
    # Raised outside the handler so that neither __cause__ nor __context__ holds the OSError:
    # its filename is the option's value, and tracebacks print the chain.
    raise StoreConfigurationError(f"cannot load gcs.credentials_file: {unreadable}")


def _status(path: str, blob: Any) -> FileStatus:
    updated = blob.updated
    modified = int(updated.timestamp() * 1000) if updated is not None else 0
    return FileStatus(path, int(blob.size or 0), modified)
