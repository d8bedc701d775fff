"""Azure Blob Storage (and ADLS Gen2) log store: create-if-absent through ``If-None-Match: *``.

An upload with ``If-None-Match: *`` fails with 409 ``BlobAlreadyExists`` when the blob exists;
the service decides the race. ADLS Gen2 accounts (hierarchical namespace) are reached through
their Blob endpoint, which honours the same condition.

URLs: ``az://container/path`` (account from the options, as in delta-rs),
``abfs[s]://container@account.dfs.core.windows.net/path``.

Options (``storage_options``; delta-rs' names accepted):

``azure.account_name`` (``azure_storage_account_name``, env ``AZURE_STORAGE_ACCOUNT_NAME``),
``azure.account_key`` (``azure_storage_account_key``, ``azure_storage_access_key``),
``azure.sas_token`` (``azure_storage_sas_token``),
``azure.connection_string`` (``azure_storage_connection_string``, env
``AZURE_STORAGE_CONNECTION_STRING``),
``azure.endpoint`` (``azure_storage_endpoint``)
    the Blob service URL, e.g. Azurite's ``http://127.0.0.1:10000/devstoreaccount1``;
``azure.use_emulator`` (``azure_storage_use_emulator``)
    Azurite's well-known account on ``127.0.0.1:10000``;
``azure.max_attempts``
    attempts per request for throttled or transient failures (default 8).

Without a key, SAS or connection string, ``azure-identity``'s DefaultAzureCredential is used
when installed.

Listing reads the whole ``_delta_log`` prefix and filters by name, because the Blob API has no
"start after" parameter; log cleanup keeps that listing short.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from azure.core import exceptions as azure_exceptions
from azure.storage.blob import BlobPrefix, BlobServiceClient

from .base import FileStatus, LogStore
from .errors import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    MissingDependencyError,
    StoreAccessDeniedError,
    StoreConfigurationError,
    StoreIOError,
    StoreThrottledError,
    StoreUnavailableError,
)
from .object_store import ObjectLogStore
from .options import StoreOptions, redact_uri, refuse_credentials_in_uri
from .retry import StoreRetryPolicy

KNOWN_OPTIONS = (
    "azure.account_name",
    "azure.account_key",
    "azure.sas_token",
    "azure.connection_string",
    "azure.endpoint",
    "azure.use_emulator",
    "azure.max_attempts",
)

#: Azurite's documented development account (public, not a secret).
EMULATOR_ACCOUNT = "devstoreaccount1"
EMULATOR_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
_TAKEN_CODES = {"BlobAlreadyExists", "ConditionNotMet"}


def map_azure_error(exc: Exception, what: str) -> LogStoreError:
    """Translate an azure-core / azure-storage-blob exception."""
    if isinstance(exc, azure_exceptions.ResourceNotFoundError):
        return LogFileNotFoundError(f"not found: {what}")
    if isinstance(exc, azure_exceptions.ClientAuthenticationError):
        return StoreAccessDeniedError(f"access denied: {what}")
    if isinstance(exc, azure_exceptions.HttpResponseError):
        status = exc.status_code or 0
        raw = getattr(exc, "error_code", None)
        code = getattr(raw, "value", raw) or status
        if status == 403:
            return StoreAccessDeniedError(f"access denied: {what} ({code})")
        if status in (429, 503):
            return StoreThrottledError(f"throttled: {what} ({code})")
        if status >= 500:
            return StoreUnavailableError(f"service error: {what} ({code})")
        return StoreIOError(f"{what} failed: {code}")
    if isinstance(
        exc, azure_exceptions.ServiceRequestError | azure_exceptions.ServiceResponseError
    ):
        return StoreUnavailableError(f"{what}: {type(exc).__name__}")
    return StoreIOError(f"{what}: {type(exc).__name__}")


@contextlib.contextmanager
def azure_errors(what: str) -> Iterator[None]:
    """Re-raise SDK exceptions as log store errors (``raise ... from``)."""
    try:
        yield
    except LogStoreError:
        raise
    except azure_exceptions.AzureError as exc:
        raise map_azure_error(exc, what) from exc


def parse_azure_url(uri: str) -> tuple[str, str, str | None, str]:
    """Split an Azure table URL into (path prefix, container, account or None, key).

    Raises:
        StoreConfigurationError: The URL has no container, or carries credentials.
    """
    refuse_credentials_in_uri(uri)
    scheme, sep, rest = uri.partition("://")
    authority, _, key = rest.partition("/")
    if not sep or not authority:
        raise StoreConfigurationError(
            f"expected {scheme}://container/path, got {redact_uri(uri)!r}"
        )
    account = None
    container = authority
    if "@" in authority:
        container, _, host = authority.partition("@")
        account = host.split(".", 1)[0] or None
    if not container:
        raise StoreConfigurationError(f"no container in {redact_uri(uri)!r}")
    return f"{scheme}://{authority}/", container, account, key.strip("/")


def _service_client(opts: StoreOptions, url_account: str | None) -> Any:
    connection_string = opts.get(
        "azure.connection_string",
        "azure_storage_connection_string",
        env=("AZURE_STORAGE_CONNECTION_STRING",),
    )
    if connection_string:
        return BlobServiceClient.from_connection_string(connection_string, retry_total=0)
    emulator = opts.get_bool("azure.use_emulator", "azure_storage_use_emulator", default=False)
    account = url_account or opts.get(
        "azure.account_name",
        "azure_storage_account_name",
        "account_name",
        env=("AZURE_STORAGE_ACCOUNT_NAME",),
    )
    endpoint = opts.get("azure.endpoint", "azure_storage_endpoint", "azure_endpoint")
    key = opts.get(
        "azure.account_key",
        "azure_storage_account_key",
        "azure_storage_access_key",
        "account_key",
        "access_key",
        env=("AZURE_STORAGE_ACCOUNT_KEY",),
    )
    sas = opts.get("azure.sas_token", "azure_storage_sas_token", "sas_token", "sas_key")
    if emulator:
        account = account or EMULATOR_ACCOUNT
        endpoint = endpoint or f"http://127.0.0.1:10000/{account}"
        key = key or (EMULATOR_KEY if account == EMULATOR_ACCOUNT else None)
    if not account and not endpoint:
        raise StoreConfigurationError(
            "an Azure table needs an account: use abfss://container@account.dfs.core.windows.net/"
            "path, or set azure.account_name (or azure.endpoint / azure.connection_string)"
        )
    endpoint = endpoint or f"https://{account}.blob.core.windows.net"
    credential: Any
    if key:
        credential = {"account_name": account, "account_key": key} if account else key
    elif sas:
        credential = sas.lstrip("?")
    else:
        try:
            from azure.identity import DefaultAzureCredential
        except ImportError as exc:
            raise MissingDependencyError(
                "no Azure credentials given (azure.account_key, azure.sas_token or "
                "azure.connection_string) and azure-identity is not installed for "
                "DefaultAzureCredential: pip install azure-identity"
            ) from exc
        credential = DefaultAzureCredential()
    return BlobServiceClient(endpoint, credential=credential, retry_total=0)


class AzureLogStore(ObjectLogStore):
    """Log store over one Azure Blob container.

    Args:
        container: An ``azure.storage.blob.ContainerClient``.
        prefix: The container's URL as the user wrote it, the notation of every path.
        retry: Backoff for throttled and transient requests (the SDK's own retries are off).
    """

    def __init__(self, container: Any, prefix: str, retry: StoreRetryPolicy | None = None) -> None:
        super().__init__(prefix, retry)
        self.container = container

    @classmethod
    def from_uri(cls, uri: str, options: Mapping[str, str]) -> tuple[LogStore, str]:
        """Build the store for ``az://container/path`` or ``abfss://container@account...``.

        Raises:
            StoreConfigurationError: No account, or bad options.
            MissingDependencyError: No credentials and no azure-identity.
        """
        prefix, container, account, key = parse_azure_url(uri)
        opts = StoreOptions(options, "azure.", KNOWN_OPTIONS)
        try:
            with azure_errors(f"creating the Azure client for {prefix}"):
                service = _service_client(opts, account)
                client = service.get_container_client(container)
        except ValueError as exc:
            if isinstance(exc, LogStoreError):
                raise
            # Never echo the value: connection strings hold keys.
            raise StoreConfigurationError(
                f"invalid Azure settings for {prefix}: {type(exc).__name__} (check "
                "azure.endpoint, azure.connection_string and azure.account_key)"
            ) from exc
        retry = StoreRetryPolicy(
            max_attempts=opts.get_int("azure.max_attempts", default=8, minimum=1)
        )
        root = prefix + key if key else prefix.rstrip("/")
        return cls(client, prefix, retry), root

    def _put(self, key: str, data: bytes, *, if_absent: bool) -> None:
        where = self.path_of(key)
        try:
            # overwrite=False makes the SDK send If-None-Match: * (on the single PUT, or on the
            # block-list commit for large blobs).
            self.container.upload_blob(key, data, overwrite=not if_absent)
        except azure_exceptions.ResourceExistsError as exc:
            if if_absent and getattr(exc, "error_code", None) in _TAKEN_CODES:
                raise FileAlreadyExistsError(f"already exists: {where}") from exc
            raise map_azure_error(exc, f"PUT {where}") from exc
        except azure_exceptions.ResourceModifiedError as exc:
            if if_absent:
                raise FileAlreadyExistsError(f"already exists: {where}") from exc
            raise map_azure_error(exc, f"PUT {where}") from exc
        except azure_exceptions.AzureError as exc:
            raise map_azure_error(exc, f"PUT {where}") from exc

    def _get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes:
        with azure_errors(f"GET {self.path_of(key)}"):
            if start is None:
                stream = self.container.download_blob(key)
            else:
                length = None if stop is None else stop - start
                stream = self.container.download_blob(key, offset=start, length=length)
            data: bytes = stream.readall()
        return data

    def _head(self, key: str) -> FileStatus:
        with azure_errors(f"HEAD {self.path_of(key)}"):
            props = self.container.get_blob_client(key).get_blob_properties()
        return _status(self.path_of(key), props)

    def _delete(self, key: str) -> None:
        with contextlib.suppress(LogFileNotFoundError), azure_errors(f"DELETE {self.path_of(key)}"):
            self.container.delete_blob(key)

    def _list(
        self, prefix: str, start_key: str, *, recursive: bool = False
    ) -> Iterator[FileStatus]:
        out: list[FileStatus] = []
        with azure_errors(f"LIST {self.path_of(prefix)}"):
            items = (
                self.container.list_blobs(name_starts_with=prefix)
                if recursive
                else self.container.walk_blobs(name_starts_with=prefix, delimiter="/")
            )
            for item in items:
                if isinstance(item, BlobPrefix):
                    continue
                if item.name != prefix and item.name >= start_key:
                    out.append(_status(self.path_of(item.name), item))
        out.sort(key=lambda s: s.path)
        return iter(out)

    def _any_under(self, prefix: str) -> bool:
        with azure_errors(f"LIST {self.path_of(prefix)}"):
            pages = self.container.list_blob_names(name_starts_with=prefix, results_per_page=1)
            return next(iter(pages), None) is not None


def _status(path: str, props: Any) -> FileStatus:
    modified = props.last_modified
    millis = int(modified.timestamp() * 1000) if modified is not None else 0
    return FileStatus(path, int(props.size or 0), millis)
