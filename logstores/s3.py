"""Amazon S3 (and S3-compatible) log store: create-if-absent through ``If-None-Match: *``.

A plain S3 PUT is last-writer-wins, so two writers could both "commit" version N and one batch
would silently vanish. An ``s3://`` table therefore needs one of two commit protocols, chosen
with the option ``s3.commit_protocol``:

``conditional-put``
    ``PutObject`` with ``If-None-Match: *``; S3 answers 412 ``PreconditionFailed`` (or 409
    ``ConditionalRequestConflict`` while a competing upload is in flight) when the name is
    taken. AWS S3 supports this since August 2024; check that an S3-compatible server does.
``dynamodb``
    delta-spark's ``S3DynamoDBLogStore`` protocol (:mod:`logstores.dynamodb`), which also lets
    deltalog and delta-spark writers share one table.

Without either, :meth:`S3LogStore.from_uri` raises
:class:`~logstores.errors.UnsafeStoreConfigurationError`. ``unsafe-single-writer`` (a HEAD
then a PUT) exists for a table that only ever has one writer process; it can lose commits
otherwise.

delta-rs' option names are accepted too (``aws_conditional_put=etag``,
``aws_s3_locking_provider=dynamodb``, ``aws_endpoint_url``, ...), and boto3 reads the usual AWS
environment variables (``AWS_ACCESS_KEY_ID``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ...).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    HTTPClientError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from .base import FileStatus
from .errors import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    StoreAccessDeniedError,
    StoreConfigurationError,
    StoreIOError,
    StoreThrottledError,
    StoreUnavailableError,
    UnsafeStoreConfigurationError,
)
from .object_store import ObjectLogStore
from .options import StoreOptions
from .retry import StoreRetryPolicy, call_with_retries

log = logging.getLogger(__name__)

CONDITIONAL_PUT = "conditional-put"
DYNAMODB = "dynamodb"
UNSAFE_SINGLE_WRITER = "unsafe-single-writer"
CommitProtocol = Literal["conditional-put", "dynamodb", "unsafe-single-writer"]
#: How :class:`S3LogStore` makes a create-if-absent (see its ``create_mode``).
CreateMode = Literal["if-none-match", "check-then-put", "if-none-match-else-check"]
_NOT_IMPLEMENTED = {"NotImplemented", "501"}

#: Every ``s3.*`` option; ``s3.dynamodb.*`` ones are read by :mod:`logstores.dynamodb`.
KNOWN_OPTIONS = (
    "s3.commit_protocol",
    "s3.endpoint",
    "s3.region",
    "s3.access_key_id",
    "s3.secret_access_key",
    "s3.session_token",
    "s3.profile",
    "s3.addressing_style",
    "s3.max_attempts",
    "s3.dynamodb.table_name",
    "s3.dynamodb.endpoint",
    "s3.dynamodb.region",
    "s3.dynamodb.create_table",
    "s3.dynamodb.ttl_seconds",
    "s3.dynamodb.rcu",
    "s3.dynamodb.wcu",
    "s3.dynamodb.if_none_match",
)

_NOT_FOUND = {"NoSuchKey", "404", "NotFound", "NoSuchBucket"}
_DENIED = {
    "AccessDenied",
    "403",
    "Forbidden",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "AllAccessDisabled",
    "AccessDeniedException",
    "UnrecognizedClientException",
}
_THROTTLED = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "RequestThrottled",
    "503",
    "429",
}
_TRANSIENT = {"InternalError", "ServiceUnavailable", "RequestTimeout", "500", "502", "504"}
_TAKEN = {"PreconditionFailed", "412"}
#: Keys per ``DeleteObjects`` request (the API's maximum).
_DELETE_BATCH = 1000
#: "A conflicting operation is in progress": retried (the retry gets 412 if the other upload
#: won, or succeeds if it failed) and, as any retried create, read back before reporting "taken".
_IN_FLIGHT = {"ConditionalRequestConflict", "409"}


def error_code(exc: ClientError) -> str:
    """The service's error code of ``exc`` (or its HTTP status as text)."""
    error = exc.response.get("Error", {})
    code = str(error.get("Code") or "")
    if code:
        return code
    return str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


def map_aws_error(exc: Exception, what: str) -> LogStoreError:
    """Translate a boto3/botocore exception into the log store error tree.

    ``what`` describes the request and its location; it never contains credentials.
    """
    if isinstance(exc, ClientError):
        code = error_code(exc)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _NOT_FOUND:
            return LogFileNotFoundError(f"not found: {what} ({code})")
        if code in _DENIED or status == 403:
            return StoreAccessDeniedError(f"access denied: {what} ({code})")
        if code in _THROTTLED or status in (429, 503):
            return StoreThrottledError(f"throttled: {what} ({code})")
        if code in _TRANSIENT or (isinstance(status, int) and status >= 500):
            return StoreUnavailableError(f"service error: {what} ({code})")
        return StoreIOError(
            f"{what} failed: {code}: {exc.response.get('Error', {}).get('Message')}"
        )
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return StoreAccessDeniedError(
            f"{what}: no usable AWS credentials (set s3.access_key_id/s3.secret_access_key, "
            "s3.profile, or the AWS_* environment variables)"
        )
    if isinstance(exc, ConnectionError | ReadTimeoutError | HTTPClientError):
        return StoreUnavailableError(f"{what}: {type(exc).__name__}")
    if isinstance(exc, BotoCoreError):
        return StoreIOError(f"{what}: {type(exc).__name__}: {exc}")
    return StoreIOError(f"{what}: {type(exc).__name__}")


@contextlib.contextmanager
def aws_errors(what: str) -> Iterator[None]:
    """Re-raise any boto3/botocore exception as a log store error (``raise ... from``)."""
    try:
        yield
    except LogStoreError:
        raise
    except (ClientError, BotoCoreError) as exc:
        raise map_aws_error(exc, what) from exc


@dataclass(frozen=True)
class AwsConnection:
    """Where and as whom to talk to AWS; ``None`` fields fall back to boto3's own resolution."""

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    profile: str | None = None
    addressing_style: str | None = None

    def __repr__(self) -> str:  # never print secrets
        return f"AwsConnection(endpoint={self.endpoint!r}, region={self.region!r})"

    def client(
        self, service: str, *, endpoint: str | None = None, region: str | None = None
    ) -> Any:
        """A boto3 client with SDK retries off (the store retries itself).

        Raises:
            StoreConfigurationError: boto3 rejects the settings.
        """
        try:
            session = boto3.session.Session(
                aws_access_key_id=self.access_key_id,
                aws_secret_access_key=self.secret_access_key,
                aws_session_token=self.session_token,
                profile_name=self.profile,
            )
            resolved_region = region or self.region or session.region_name or "us-east-1"
            config = Config(
                retries={"total_max_attempts": 1},
                max_pool_connections=32,
                connect_timeout=10,
                read_timeout=60,
                s3={"addressing_style": self.addressing_style or "auto"},
            )
            return session.client(
                service,
                endpoint_url=endpoint or self.endpoint,
                region_name=resolved_region,
                config=config,
            )
        except (ValueError, BotoCoreError) as exc:
            # Never echo option values: they may hold credentials.
            raise StoreConfigurationError(
                f"cannot create the {service} client: {type(exc).__name__} (check s3.endpoint, "
                "s3.region, s3.profile and the AWS_* environment variables)"
            ) from exc


def connection_from_options(opts: StoreOptions) -> AwsConnection:
    """Read endpoint, region, credentials and addressing style.

    Raises:
        StoreConfigurationError: An unknown addressing style.
    """
    style = opts.get("s3.addressing_style")
    style = style.strip().lower() if style is not None else None
    virtual = opts.get("aws_virtual_hosted_style_request")
    if style is None and virtual is not None:
        style = "virtual" if virtual.lower() in ("true", "1") else "path"
    if style is not None and style not in ("path", "virtual", "auto"):
        raise StoreConfigurationError(
            "s3.addressing_style must be path, virtual or auto (the value given is not shown)"
        )
    return AwsConnection(
        endpoint=opts.get("s3.endpoint", "aws_endpoint_url", "aws_endpoint", "endpoint_url"),
        region=opts.get(
            "s3.region", "aws_region", "region", "aws_default_region", env=("AWS_REGION",)
        ),
        access_key_id=opts.get("s3.access_key_id", "aws_access_key_id", "access_key_id"),
        secret_access_key=opts.get(
            "s3.secret_access_key", "aws_secret_access_key", "secret_access_key"
        ),
        session_token=opts.get("s3.session_token", "aws_session_token", "aws_token"),
        profile=opts.get("s3.profile", "aws_profile", "profile"),
        addressing_style=style,
    )


def commit_protocol_from_options(opts: StoreOptions) -> CommitProtocol:
    """Which create-if-absent the table uses.

    Raises:
        UnsafeStoreConfigurationError: None is configured.
        StoreConfigurationError: Conflicting or unknown settings.
    """
    chosen: set[str] = set()
    raw = opts.get("s3.commit_protocol")
    explicit = raw.strip().lower() if raw is not None else None
    if explicit is not None:
        if explicit not in (CONDITIONAL_PUT, DYNAMODB, UNSAFE_SINGLE_WRITER):
            raise StoreConfigurationError(
                f"s3.commit_protocol must be {CONDITIONAL_PUT!r}, {DYNAMODB!r} or "
                f"{UNSAFE_SINGLE_WRITER!r} (the value given is not shown)"
            )
        chosen.add(explicit)
    conditional = opts.get("aws_conditional_put", "conditional_put")
    if conditional is not None and conditional.lower() in ("etag", "true", "if-none-match"):
        chosen.add(CONDITIONAL_PUT)
    locking = opts.get("aws_s3_locking_provider")
    if locking is None and not chosen:  # the environment only fills in what options leave open
        locking = opts.get("aws_s3_locking_provider", env=("AWS_S3_LOCKING_PROVIDER",))
    if locking is not None:
        if locking.lower() != DYNAMODB:
            raise StoreConfigurationError(
                "aws_s3_locking_provider must be 'dynamodb' (the value given is not shown)"
            )
        chosen.add(DYNAMODB)
    if opts.get_bool("aws_s3_allow_unsafe_rename", default=False):
        chosen.add(UNSAFE_SINGLE_WRITER)
    if len(chosen) > 1:
        raise StoreConfigurationError(
            f"conflicting S3 commit protocols configured: {', '.join(sorted(chosen))}"
        )
    if not chosen:
        raise UnsafeStoreConfigurationError(
            "an s3:// table needs a commit protocol with a real compare-and-swap, otherwise two "
            "writers can both commit version N and one commit is silently lost. Set "
            "storage option s3.commit_protocol to 'conditional-put' (S3 PutObject with "
            "If-None-Match: *; AWS S3 supports it, check that your S3-compatible server does) or "
            "to 'dynamodb' (delta-spark's S3DynamoDBLogStore protocol; also set "
            "s3.dynamodb.table_name, and s3.dynamodb.create_table=true to create it). If exactly "
            "one process will ever write this table, s3.commit_protocol='unsafe-single-writer' "
            "turns the check off."
        )
    return chosen.pop()  # type: ignore[return-value]


class S3LogStore(ObjectLogStore):
    """Log store over one S3 bucket.

    Args:
        client: A boto3 S3 client.
        prefix: ``s3://bucket/`` (or ``s3a://bucket/``), the notation of every path.
        bucket: The bucket name.
        create_mode: ``"if-none-match"`` (the server refuses an existing key),
            ``"check-then-put"`` (a HEAD, then a plain PUT: unsafe with concurrent writers; used
            by ``unsafe-single-writer``), or ``"if-none-match-else-check"`` (``If-None-Match``
            while the server supports it, ``check-then-put`` from the first 501
            ``NotImplemented`` on; used underneath the DynamoDB coordinator, which provides the
            mutual exclusion for commits itself, so that a create costs one request).
        retry: Backoff for throttled and transient requests.
    """

    def __init__(
        self,
        client: Any,
        prefix: str,
        bucket: str,
        *,
        create_mode: CreateMode = "if-none-match",
        retry: StoreRetryPolicy | None = None,
    ) -> None:
        super().__init__(prefix, retry)
        self.client = client
        self.bucket = bucket
        self.create_mode = create_mode
        #: ``if-none-match-else-check`` found the server without conditional writes.
        self.checks_before_put = create_mode == "check-then-put"

    def _put(self, key: str, data: bytes, *, if_absent: bool) -> None:
        where = self.path_of(key)
        if if_absent and self.checks_before_put:
            if self._exists_key(key):
                raise FileAlreadyExistsError(f"already exists: {where}")
            if_absent = False
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key, "Body": data}
        if if_absent:
            kwargs["IfNoneMatch"] = "*"
        try:
            self.client.put_object(**kwargs)
        except ClientError as exc:
            code = error_code(exc)
            if if_absent and code in _TAKEN:
                raise FileAlreadyExistsError(f"already exists: {where} ({code})") from exc
            if if_absent and code in _IN_FLIGHT:
                raise StoreUnavailableError(
                    f"conflicting upload in flight: {where} ({code}); retrying"
                ) from exc
            if if_absent and code in _NOT_IMPLEMENTED:
                if self.create_mode == "if-none-match-else-check":
                    log.info(
                        "%s: no conditional writes (%s); checking before each create", where, code
                    )
                    self.checks_before_put = True
                    self._put(key, data, if_absent=True)
                    return
                raise UnsafeStoreConfigurationError(
                    f"the S3 endpoint does not support conditional writes (If-None-Match) for "
                    f"{where}; use s3.commit_protocol=dynamodb"
                ) from exc
            raise map_aws_error(exc, f"PUT {where}") from exc
        except BotoCoreError as exc:
            raise map_aws_error(exc, f"PUT {where}") from exc

    def _exists_key(self, key: str) -> bool:
        try:
            self._head(key)
        except LogFileNotFoundError:
            return False
        return True

    def _get(self, key: str, start: int | None = None, stop: int | None = None) -> bytes:
        where = self.path_of(key)
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if start is not None:
            end = "" if stop is None else str(stop - 1)
            kwargs["Range"] = f"bytes={start}-{end}"
        with aws_errors(f"GET {where}"):
            response = self.client.get_object(**kwargs)
            data: bytes = response["Body"].read()
            return data

    def _head(self, key: str) -> FileStatus:
        with aws_errors(f"HEAD {self.path_of(key)}"):
            response = self.client.head_object(Bucket=self.bucket, Key=key)
        modified = int(response["LastModified"].timestamp() * 1000)
        return FileStatus(self.path_of(key), int(response["ContentLength"]), modified)

    def _delete(self, key: str) -> None:
        with aws_errors(f"DELETE {self.path_of(key)}"):
            self.client.delete_object(Bucket=self.bucket, Key=key)

    def _delete_keys(self, keys: list[str]) -> None:
        """``DeleteObjects`` in batches of 1,000 keys (the API's limit), a few in flight."""
        batches = [keys[i : i + _DELETE_BATCH] for i in range(0, len(keys), _DELETE_BATCH)]

        def one(batch: list[str]) -> Exception | None:
            try:
                call_with_retries(lambda: self._delete_batch(batch), self.retry)
            except LogStoreError as exc:  # re-raised below, after the other batches
                return exc
            return None

        with ThreadPoolExecutor(min(4, len(batches)), thread_name_prefix="s3-delete") as pool:
            failures = [exc for exc in pool.map(one, batches) if exc is not None]
        if failures:
            raise failures[0]

    def _delete_batch(self, batch: list[str]) -> None:
        where = f"DeleteObjects {self.path_of(batch[0])} (+{len(batch) - 1} more)"
        with aws_errors(where):
            response = self.client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
            )
        errors = [e for e in response.get("Errors") or () if e.get("Code") not in _NOT_FOUND]
        if not errors:
            return
        first = errors[0]
        fake = ClientError(
            {"Error": {"Code": first.get("Code", ""), "Message": first.get("Message", "")}},
            "DeleteObjects",
        )
        raise map_aws_error(fake, f"DELETE {self.path_of(first.get('Key', ''))}")

    def _list(
        self, prefix: str, start_key: str, *, recursive: bool = False
    ) -> Iterator[FileStatus]:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if not recursive:
            kwargs["Delimiter"] = "/"
        if start_key > prefix and _steppable(start_key[-1]):
            # StartAfter is exclusive: start just below start_key and filter.
            kwargs["StartAfter"] = start_key[:-1] + chr(ord(start_key[-1]) - 1)
        out: list[FileStatus] = []
        with aws_errors(f"LIST {self.path_of(prefix)}"):
            while True:
                page = self.client.list_objects_v2(**kwargs)
                for item in page.get("Contents", ()):
                    key = item["Key"]
                    if key >= start_key and key != prefix:
                        modified = int(item["LastModified"].timestamp() * 1000)
                        out.append(FileStatus(self.path_of(key), int(item["Size"]), modified))
                token = page.get("NextContinuationToken")
                if not page.get("IsTruncated") or not token:
                    break
                kwargs["ContinuationToken"] = token
        return iter(out)

    def _any_under(self, prefix: str) -> bool:
        with aws_errors(f"LIST {self.path_of(prefix)}"):
            page = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
        return bool(page.get("KeyCount") or page.get("Contents"))


def _steppable(last: str) -> bool:
    """Whether the character before ``last`` exists and is encodable (not a surrogate)."""
    below = ord(last) - 1
    return below >= 0 and not 0xD800 <= below <= 0xDFFF
