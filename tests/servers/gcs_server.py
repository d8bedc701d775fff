"""A small in-memory Google Cloud Storage server for tests, with real precondition enforcement.

The server speaks enough of two GCS HTTP dialects for the clients our test suite uses:

* the **JSON API** used by ``google-cloud-storage`` (buckets, media / multipart / resumable
  uploads, object metadata, downloads with ``Range``, listing with prefix / delimiter /
  offsets / pagination, delete, patch, ``rewriteTo`` and ``copyTo``), and
* the **XML API** used by delta-rs through the Rust ``object_store`` crate (``GET`` / ``HEAD``
  with ``Range``, ``ListObjectsV2``-style listing, ``PUT`` with ``x-goog-if-generation-match``,
  copies through ``x-goog-copy-source``, ``DELETE`` and S3-style multipart uploads).

Unlike the ``gcp-storage-emulator`` package it enforces the generation preconditions
(``ifGenerationMatch``, ``ifGenerationNotMatch``, ``ifMetagenerationMatch``,
``ifMetagenerationNotMatch`` and their XML header forms): every check-and-mutate runs under one
lock, so ``ifGenerationMatch=0`` ("create only if absent") has exactly one winner however many
writers race. Preconditions of an upload are evaluated when the upload *completes* (for a
resumable upload: with the final chunk), atomically with the store; a resumable upload is also
refused up front when its conditions already fail at initiation. Generations are microsecond
timestamps forced to increase strictly, as on real GCS.

State lives in memory only: buckets hold objects (bytes, generation, metageneration, times,
content type, custom metadata, hashes). Old generations are not kept (no versioning).

Pointing the clients at the server:

* ``google-cloud-storage``::

      storage.Client(project="test", credentials=AnonymousCredentials(),
                     client_options={"api_endpoint": server.endpoint})

* delta-rs (``deltalake``, ``object_store`` 0.13): write the service-account file
  ``{"gcs_base_url": server.endpoint, "disable_oauth": true, "client_email": "",
  "private_key": "", "private_key_id": ""}`` and pass
  ``storage_options={"google_service_account": "<path of that file>"}``
  (:func:`delta_rs_service_account`, :func:`delta_rs_storage_options`). The aliases
  ``service_account``, ``service_account_path`` and ``google_service_account_path`` work too,
  as does ``google_service_account_key`` with the JSON document itself. With ``disable_oauth``
  object_store fetches no token (its writes carry an empty ``Authorization: Bearer``).
  (``google_application_credentials`` does not accept this document.)

What the clients send (observed; the tests pin most of it down):

* google-cloud-storage uploads objects of known size up to 8 MiB as one ``multipart/related``
  POST (with a client-computed ``crc32c`` or ``md5Hash`` in the metadata, verified here), and
  larger ones as a resumable upload (POST ``uploadType=resumable``, then PUTs of
  ``chunk_size`` bytes with ``Content-Range``; the final one carries ``x-goog-hash``). The
  blob's ``chunk_size`` does not change that choice. On uploads it spells the parameter
  ``ifMetaGenerationNotMatch`` (capital G), so precondition names are matched without regard
  to case.
* It downloads from ``/download/storage/v1/b/{bucket}/o/{object}?alt=media`` (or from the
  ``mediaLink`` of a loaded blob) and validates the body against ``x-goog-hash`` on full (200)
  responses; ranged (206) responses carry the whole object's hashes, as on GCS, and are not
  validated. ``blob.open("rb")`` reloads the metadata, then reads ranges through ``mediaLink``.
* object_store percent-encodes every ``/``, ``_``, ``-`` and ``.`` in the path (the bucket
  included); delta-rs commits with ``PUT`` + ``x-goog-if-generation-match: 0``, writes small
  data files with one ``PUT`` and large ones as an XML multipart upload (5 MiB parts), lists
  the log with ``list-type=2&prefix=...&start-after=...`` and reads data files with ranged
  ``GET``.

Run it as a program (``python tests/servers/gcs_server.py --port 0 --bucket b``) and it prints
one line ``PORT <n>`` once it accepts connections, then serves until terminated; or use
:class:`GCSTestServer` in-process.

Not implemented: object versioning (old generations), ACLs / IAM, compose, batch requests,
``matchGlob`` listing, gzip transcoding, customer-supplied encryption keys, authentication.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import bisect
import contextlib
import hashlib
import json
import re
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
import urllib.parse
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.message import Message
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, ModuleType
from typing import Any, ClassVar, Self
from xml.sax.saxutils import escape as xml_escape

_crc32c_module: ModuleType | None
try:
    import google_crc32c as _crc32c_module
except ImportError:  # pragma: no cover - depends on the environment
    _crc32c_module = None

__all__ = [
    "GCSState",
    "GCSTestServer",
    "Preconditions",
    "RequestRecord",
    "StoredObject",
    "delta_rs_service_account",
    "delta_rs_storage_options",
    "main",
]

_JSON_CONTENT_TYPE = "application/json; charset=UTF-8"
_XML_CONTENT_TYPE = "application/xml; charset=UTF-8"
_DEFAULT_CONTENT_TYPE = "application/octet-stream"
_MAX_LIST_RESULTS = 1000
_BUCKET_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
_CONTENT_RANGE_RE = re.compile(r"^bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$")
#: Writable object fields (besides ``contentType`` and ``metadata``) kept verbatim.
_EXTRA_FIELDS = ("cacheControl", "contentDisposition", "contentEncoding", "contentLanguage")


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _crc32c(data: bytes) -> bytes | None:
    """Big-endian CRC32C of ``data``, or None when ``google_crc32c`` is not installed."""
    if _crc32c_module is None:
        return None
    value: int = _crc32c_module.value(data)
    return value.to_bytes(4, "big")


def _rfc3339(micros: int) -> str:
    """``2024-05-01T12:00:00.123Z`` for a time in microseconds since the epoch."""
    moment = datetime.fromtimestamp(micros / 1_000_000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _http_date(micros: int) -> str:
    return formatdate(micros / 1_000_000, usegmt=True)


def _now_micros() -> int:
    return time.time_ns() // 1000


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _strip_quotes(etag: str) -> str:
    etag = etag.strip()
    if etag.startswith("W/"):
        etag = etag[2:]
    return etag.strip('"')


# --------------------------------------------------------------------------------------------
# Errors, requests and responses
# --------------------------------------------------------------------------------------------


class ApiError(Exception):
    """An error answered to the client, rendered as a JSON-API or an XML-API error document.

    Attributes:
        status: HTTP status code.
        message: Human-readable message.
        reason: The JSON API ``errors[0].reason`` (``notFound``, ``conditionNotMet``, ...).
        xml_code: The XML API ``<Code>`` (``NoSuchKey``, ``PreconditionFailed``, ...).
        headers: Extra response headers.
    """

    def __init__(
        self,
        status: int,
        message: str,
        reason: str,
        xml_code: str,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason
        self.xml_code = xml_code
        self.headers = list(headers)

    def to_response(self, xml: bool) -> Response:
        """Render the error in the JSON API or the XML API format."""
        if self.status in (204, 304):
            return Response(self.status, headers=self.headers)
        if xml:
            body = (
                "<?xml version='1.0' encoding='UTF-8'?><Error>"
                f"<Code>{xml_escape(self.xml_code)}</Code>"
                f"<Message>{xml_escape(self.message)}</Message></Error>"
            ).encode()
            content_type = _XML_CONTENT_TYPE
        else:
            document = {
                "error": {
                    "code": self.status,
                    "message": self.message,
                    "errors": [
                        {"message": self.message, "domain": "global", "reason": self.reason}
                    ],
                }
            }
            body = json.dumps(document).encode()
            content_type = _JSON_CONTENT_TYPE
        return Response(self.status, body, [("Content-Type", content_type), *self.headers])


def _bad_request(message: str) -> ApiError:
    return ApiError(400, message, "invalid", "InvalidArgument")


def _no_such_bucket(bucket: str) -> ApiError:
    return ApiError(
        404, f"The specified bucket does not exist: {bucket}", "notFound", "NoSuchBucket"
    )


def _no_such_object(bucket: str, name: str) -> ApiError:
    return ApiError(404, f"No such object: {bucket}/{name}", "notFound", "NoSuchKey")


def _precondition_failed(message: str) -> ApiError:
    return ApiError(
        412,
        f"At least one of the pre-conditions you specified did not hold: {message}",
        "conditionNotMet",
        "PreconditionFailed",
    )


def _not_modified() -> ApiError:
    return ApiError(304, "Not Modified", "notModified", "NotModified")


@dataclass
class Request:
    """One parsed HTTP request.

    Attributes:
        method: HTTP method, upper case.
        path: The request path, still percent-encoded.
        query: Query parameters (the last value wins for repeated names).
        headers: Request headers (case-insensitive lookups).
        body: The complete request body.
        base_url: ``http://<Host>`` as the client addressed the server.
    """

    method: str
    path: str
    query: dict[str, str]
    headers: Message
    body: bytes
    base_url: str

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive), or None."""
        value = self.headers.get(name)
        return None if value is None else str(value)

    def json_body(self) -> dict[str, Any]:
        """The body parsed as a JSON object (an empty body gives ``{}``)."""
        if not self.body.strip():
            return {}
        try:
            document = json.loads(self.body)
        except ValueError as exc:
            raise _bad_request(f"Request body is not valid JSON: {exc}") from exc
        if not isinstance(document, dict):
            raise _bad_request("Request body must be a JSON object")
        return document

    def int_param(self, name: str, any_case: bool = False) -> int | None:
        """Query parameter ``name`` as an int (None when absent); 400 when not an integer.

        Args:
            name: The parameter.
            any_case: Also accept the name in another letter case (google-cloud-storage sends
                ``ifMetaGenerationNotMatch`` on uploads).
        """
        raw = self.query.get(name)
        if raw is None and any_case:
            wanted = name.lower()
            raw = next((v for k, v in self.query.items() if k.lower() == wanted), None)
        if raw is None or raw == "":
            return None
        try:
            return int(raw)
        except ValueError as exc:
            raise _bad_request(f"Invalid value for {name}: {raw!r}") from exc

    def flag(self, name: str) -> bool:
        """Query parameter ``name`` as a boolean flag."""
        return self.query.get(name, "").lower() in ("true", "1", "yes")


@dataclass
class Response:
    """An HTTP response produced by the application.

    Attributes:
        status: HTTP status code.
        body: Response body (also used for ``Content-Length`` of ``HEAD`` responses).
        headers: Response headers, in order.
    """

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def _json_response(document: Mapping[str, Any], status: int = 200) -> Response:
    return Response(status, json.dumps(document).encode(), [("Content-Type", _JSON_CONTENT_TYPE)])


def _xml_response(document: str, status: int = 200) -> Response:
    body = ('<?xml version="1.0" encoding="UTF-8"?>' + document).encode()
    return Response(status, body, [("Content-Type", _XML_CONTENT_TYPE)])


@dataclass(frozen=True)
class RequestRecord:
    """What the server saw of one request (kept when ``record_requests`` is on).

    Attributes:
        method: HTTP method.
        path: Percent-encoded path.
        query: Query parameters.
        headers: Request headers (lower-cased names).
        body_size: Size of the request body in bytes.
        status: Status code answered.
    """

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body_size: int
    status: int


# --------------------------------------------------------------------------------------------
# Storage model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredObject:
    """One live object generation. Immutable: every change stores a new instance.

    Attributes:
        data: The object's bytes.
        generation: Generation number (changes whenever the data is written).
        metageneration: Metadata generation (1 for a new generation, +1 per metadata update).
        created_us: Creation time of this generation, microseconds since the epoch.
        updated_us: Time of the last data or metadata change, microseconds since the epoch.
        content_type: The object's content type.
        metadata: Custom metadata (``x-goog-meta-*``).
        extra: Other writable fields (cacheControl, contentEncoding, ...).
        md5: MD5 digest of ``data``.
        crc32c: Big-endian CRC32C of ``data``, or None without ``google_crc32c``.
    """

    data: bytes
    generation: int
    metageneration: int
    created_us: int
    updated_us: int
    content_type: str
    metadata: Mapping[str, str]
    extra: Mapping[str, str]
    md5: bytes
    crc32c: bytes | None

    @property
    def size(self) -> int:
        """Length of the data in bytes."""
        return len(self.data)

    @property
    def xml_etag(self) -> str:
        """The quoted hex MD5 the XML API uses as ETag."""
        return f'"{self.md5.hex()}"'

    @property
    def json_etag(self) -> str:
        """An opaque ETag that changes with the generation and the metageneration."""
        return _b64(f"{self.generation}/{self.metageneration}".encode())

    def hash_header(self) -> str:
        """Value of the ``x-goog-hash`` header for the whole object."""
        parts = []
        if self.crc32c is not None:
            parts.append(f"crc32c={_b64(self.crc32c)}")
        parts.append(f"md5={_b64(self.md5)}")
        return ",".join(parts)


@dataclass(frozen=True)
class Preconditions:
    """Generation / metageneration preconditions of one request.

    A ``if_generation_match`` of 0 means "the object must not exist"; a
    ``if_generation_not_match`` of 0 means "the object must exist".
    """

    if_generation_match: int | None = None
    if_generation_not_match: int | None = None
    if_metageneration_match: int | None = None
    if_metageneration_not_match: int | None = None

    @classmethod
    def from_query(cls, request: Request, infix: str = "") -> Preconditions:
        """Read ``if{infix}GenerationMatch`` and friends from the query string.

        Args:
            request: The request.
            infix: ``""`` for the object written, ``"Source"`` for a copy's source.
        """
        return cls(
            request.int_param(f"if{infix}GenerationMatch", any_case=True),
            request.int_param(f"if{infix}GenerationNotMatch", any_case=True),
            request.int_param(f"if{infix}MetagenerationMatch", any_case=True),
            request.int_param(f"if{infix}MetagenerationNotMatch", any_case=True),
        )

    @classmethod
    def from_headers(cls, request: Request, prefix: str = "x-goog-") -> Preconditions:
        """Read the XML API headers ``{prefix}if-generation-match`` and friends."""

        def number(name: str) -> int | None:
            raw = request.header(prefix + name)
            if raw is None or not raw.strip():
                return None
            try:
                return int(raw)
            except ValueError as exc:
                raise _bad_request(f"Invalid value for {prefix}{name}: {raw!r}") from exc

        return cls(
            number("if-generation-match"),
            number("if-generation-not-match"),
            number("if-metageneration-match"),
            number("if-metageneration-not-match"),
        )

    def combine(self, other: Preconditions) -> Preconditions:
        """Conditions of ``self`` completed by those of ``other`` that ``self`` lacks."""
        return Preconditions(
            *(
                mine if mine is not None else theirs
                for mine, theirs in (
                    (self.if_generation_match, other.if_generation_match),
                    (self.if_generation_not_match, other.if_generation_not_match),
                    (self.if_metageneration_match, other.if_metageneration_match),
                    (self.if_metageneration_not_match, other.if_metageneration_not_match),
                )
            )
        )

    def check_write(self, current: StoredObject | None) -> None:
        """Raise 412 unless the preconditions hold for a write over ``current``."""
        failure = self._failure(current, read=False)
        if failure is not None:
            raise _precondition_failed(failure)

    def check_read(self, current: StoredObject) -> None:
        """Raise 412 (``*Match``) or 304 (``*NotMatch``) unless the conditions hold."""
        failure = self._failure(current, read=True)
        if failure == "not modified":
            raise _not_modified()
        if failure is not None:
            raise _precondition_failed(failure)

    def _failure(self, current: StoredObject | None, read: bool) -> str | None:
        generation = None if current is None else current.generation
        metageneration = None if current is None else current.metageneration
        wanted = self.if_generation_match
        if wanted is not None:
            if wanted == 0 and current is not None:
                return f"ifGenerationMatch=0 but the object exists (generation {generation})"
            if wanted != 0 and generation != wanted:
                return f"ifGenerationMatch={wanted} but the generation is {generation}"
        if self.if_metageneration_match is not None and (
            metageneration != self.if_metageneration_match
        ):
            return (
                f"ifMetagenerationMatch={self.if_metageneration_match} but the "
                f"metageneration is {metageneration}"
            )
        unwanted = self.if_generation_not_match
        if unwanted is not None:
            if unwanted == 0 and current is None:
                return "ifGenerationNotMatch=0 but the object does not exist"
            if unwanted != 0 and generation == unwanted:
                return "not modified" if read else f"ifGenerationNotMatch={unwanted}"
        unwanted_meta = self.if_metageneration_not_match
        if unwanted_meta is not None and metageneration == unwanted_meta:
            return "not modified" if read else f"ifMetagenerationNotMatch={unwanted_meta}"
        return None


@dataclass
class _Bucket:
    name: str
    created_us: int
    objects: dict[str, StoredObject] = field(default_factory=dict)
    _sorted: list[str] | None = None

    def sorted_names(self) -> list[str]:
        # Python orders str by code point, which is the byte order of their UTF-8 encodings.
        if self._sorted is None:
            self._sorted = sorted(self.objects)
        return self._sorted

    def store(self, name: str, obj: StoredObject) -> None:
        if name not in self.objects:
            self._sorted = None
        self.objects[name] = obj

    def remove(self, name: str) -> None:
        del self.objects[name]
        self._sorted = None


@dataclass
class _ResumableUpload:
    bucket: str
    name: str
    content_type: str
    metadata: dict[str, str]
    extra: dict[str, str]
    preconditions: Preconditions
    expected_hashes: dict[str, str]
    total: int | None
    data: bytearray = field(default_factory=bytearray)


@dataclass
class _XmlMultipartUpload:
    bucket: str
    name: str
    content_type: str
    metadata: dict[str, str]
    preconditions: Preconditions
    parts: dict[int, bytes] = field(default_factory=dict)


@dataclass
class _ListPage:
    items: list[tuple[str, StoredObject]]
    prefixes: list[str]
    next_token: str | None


def _encode_cursor(after: str, skip_prefix: str | None) -> str:
    raw = json.dumps({"a": after, "s": skip_prefix}).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(token: str) -> tuple[str, str | None]:
    try:
        document = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
        after, skip = document["a"], document["s"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise _bad_request(f"Invalid page token: {token!r}") from exc
    if not isinstance(after, str) or not (skip is None or isinstance(skip, str)):
        raise _bad_request(f"Invalid page token: {token!r}")
    return after, skip


class GCSState:
    """All buckets, objects and upload sessions, guarded by a single lock.

    Every operation that checks preconditions and then changes an object does both while
    holding :attr:`lock`, which makes the conditional writes atomic.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}
        self._last_generation = 0
        self._resumable: dict[str, _ResumableUpload] = {}
        self._xml_uploads: dict[str, _XmlMultipartUpload] = {}

    # -- buckets ---------------------------------------------------------------------------

    def create_bucket(self, name: str, exist_ok: bool = False) -> None:
        """Create bucket ``name`` (409 if it exists, unless ``exist_ok``)."""
        if not _BUCKET_NAME_RE.match(name):
            raise _bad_request(f"Invalid bucket name: {name!r}")
        with self.lock:
            if name in self._buckets:
                if exist_ok:
                    return
                raise ApiError(
                    409,
                    f"Your previous request to create the named bucket succeeded and you "
                    f"already own it: {name}",
                    "conflict",
                    "BucketAlreadyOwnedByYou",
                )
            self._buckets[name] = _Bucket(name, _now_micros())

    def bucket_names(self) -> list[str]:
        """Names of all buckets, sorted."""
        with self.lock:
            return sorted(self._buckets)

    def bucket_created(self, name: str) -> int:
        """Creation time (microseconds) of bucket ``name``; 404 if it does not exist."""
        with self.lock:
            return self._bucket(name).created_us

    def delete_bucket(self, name: str) -> None:
        """Delete the empty bucket ``name`` (404 if missing, 409 if not empty)."""
        with self.lock:
            bucket = self._bucket(name)
            if bucket.objects:
                raise ApiError(
                    409,
                    f"The bucket you tried to delete is not empty: {name}",
                    "conflict",
                    "BucketNotEmpty",
                )
            del self._buckets[name]

    def _bucket(self, name: str) -> _Bucket:
        bucket = self._buckets.get(name)
        if bucket is None:
            raise _no_such_bucket(name)
        return bucket

    # -- objects ---------------------------------------------------------------------------

    def _next_generation(self) -> int:
        generation = max(_now_micros(), self._last_generation + 1)
        self._last_generation = generation
        return generation

    def get(self, bucket: str, name: str) -> StoredObject:
        """The live object ``bucket/name``; 404 if the bucket or the object is missing."""
        with self.lock:
            obj = self._bucket(bucket).objects.get(name)
        if obj is None:
            raise _no_such_object(bucket, name)
        return obj

    def put(
        self,
        bucket: str,
        name: str,
        data: bytes,
        *,
        content_type: str | None,
        metadata: Mapping[str, str] | None = None,
        extra: Mapping[str, str] | None = None,
        preconditions: Preconditions | None = None,
    ) -> StoredObject:
        """Store ``data`` as a new generation of ``bucket/name`` if the preconditions hold.

        Raises:
            ApiError: 404 for a missing bucket, 412 if a precondition fails.
        """
        if not name:
            raise _bad_request("Object name must not be empty")
        md5 = hashlib.md5(data).digest()
        crc = _crc32c(data)
        with self.lock:
            target = self._bucket(bucket)
            if preconditions is not None:
                preconditions.check_write(target.objects.get(name))
            generation = self._next_generation()
            now = _now_micros()
            obj = StoredObject(
                data=data,
                generation=generation,
                metageneration=1,
                created_us=now,
                updated_us=now,
                content_type=content_type or _DEFAULT_CONTENT_TYPE,
                metadata=dict(metadata or {}),
                extra=dict(extra or {}),
                md5=md5,
                crc32c=crc,
            )
            target.store(name, obj)
            return obj

    def update_metadata(
        self,
        bucket: str,
        name: str,
        change: Callable[[StoredObject], StoredObject],
        preconditions: Preconditions,
        generation: int | None = None,
    ) -> StoredObject:
        """Apply ``change`` to the object's metadata and bump its metageneration, atomically."""
        with self.lock:
            target = self._bucket(bucket)
            current = target.objects.get(name)
            if current is None or (generation is not None and current.generation != generation):
                raise _no_such_object(bucket, name)
            preconditions.check_write(current)
            changed = change(current)
            obj = replace(
                changed,
                data=current.data,
                generation=current.generation,
                metageneration=current.metageneration + 1,
                created_us=current.created_us,
                updated_us=_now_micros(),
                md5=current.md5,
                crc32c=current.crc32c,
            )
            target.store(name, obj)
            return obj

    def delete(
        self,
        bucket: str,
        name: str,
        preconditions: Preconditions,
        generation: int | None = None,
    ) -> None:
        """Delete ``bucket/name`` if the preconditions hold (404 if missing, 412 on failure)."""
        with self.lock:
            target = self._bucket(bucket)
            current = target.objects.get(name)
            if current is None or (generation is not None and current.generation != generation):
                raise _no_such_object(bucket, name)
            preconditions.check_write(current)
            target.remove(name)

    def copy(
        self,
        src_bucket: str,
        src_name: str,
        dst_bucket: str,
        dst_name: str,
        *,
        source_generation: int | None,
        source_preconditions: Preconditions,
        preconditions: Preconditions,
        overrides: Mapping[str, Any] | None,
    ) -> StoredObject:
        """Copy an object atomically, checking source and destination preconditions.

        Args:
            src_bucket: Source bucket.
            src_name: Source object.
            dst_bucket: Destination bucket.
            dst_name: Destination object.
            source_generation: Required generation of the source, if any.
            source_preconditions: Preconditions on the source.
            preconditions: Preconditions on the destination.
            overrides: Destination metadata (JSON resource fields); None copies the source's.
        """
        if not dst_name:
            raise _bad_request("Object name must not be empty")
        with self.lock:
            source = self._bucket(src_bucket).objects.get(src_name)
            if source is None or (
                source_generation is not None and source.generation != source_generation
            ):
                raise _no_such_object(src_bucket, src_name)
            source_preconditions.check_write(source)
            target = self._bucket(dst_bucket)
            preconditions.check_write(target.objects.get(dst_name))
            content_type, metadata, extra = _metadata_from_resource(
                overrides or {}, source.content_type, source.metadata, source.extra
            )
            now = _now_micros()
            obj = replace(
                source,
                generation=self._next_generation(),
                metageneration=1,
                created_us=now,
                updated_us=now,
                content_type=content_type,
                metadata=metadata,
                extra=extra,
            )
            target.store(dst_name, obj)
            return obj

    def list(
        self,
        bucket: str,
        *,
        prefix: str = "",
        delimiter: str = "",
        start_offset: str = "",
        end_offset: str = "",
        start_after: str | None = None,
        include_trailing_delimiter: bool = False,
        max_results: int = _MAX_LIST_RESULTS,
        page_token: str | None = None,
    ) -> _ListPage:
        """One page of a listing, in lexicographic (UTF-8 byte) order of names.

        Args:
            bucket: The bucket.
            prefix: Only names starting with this.
            delimiter: Collapse names containing it after ``prefix`` into prefixes.
            start_offset: Only names ``>= start_offset``.
            end_offset: Only names ``< end_offset`` (when not empty).
            start_after: Only names ``> start_after`` (XML API ``start-after``).
            include_trailing_delimiter: Also list objects named exactly like a prefix.
            max_results: Maximum number of entries (items plus prefixes) on the page.
            page_token: Token from a previous page.
        """
        skip_prefix: str | None = None
        after = start_after
        if page_token:
            token_after, skip_prefix = _decode_cursor(page_token)
            after = token_after if after is None else max(after, token_after)
        max_results = max(1, min(max_results, _MAX_LIST_RESULTS))
        with self.lock:
            target = self._bucket(bucket)
            names = target.sorted_names()
            objects = target.objects
            index = bisect.bisect_left(names, max(prefix, start_offset))
            if after is not None:
                index = max(index, bisect.bisect_right(names, after))
            page = _ListPage([], [], None)
            count = 0
            last_key: str | None = None
            last_skip: str | None = None
            while index < len(names):
                name = names[index]
                index += 1
                if not name.startswith(prefix) or (end_offset and name >= end_offset):
                    break
                if skip_prefix is not None and name.startswith(skip_prefix):
                    continue
                if count >= max_results:
                    assert last_key is not None
                    page.next_token = _encode_cursor(last_key, last_skip)
                    break
                count += 1
                cut = name.find(delimiter, len(prefix)) if delimiter else -1
                if cut >= 0:
                    collapsed = name[: cut + len(delimiter)]
                    page.prefixes.append(collapsed)
                    if include_trailing_delimiter and name == collapsed:
                        page.items.append((name, objects[name]))
                    last_key = skip_prefix = last_skip = collapsed
                else:
                    page.items.append((name, objects[name]))
                    last_key, last_skip = name, None
            return page

    # -- resumable (JSON API) uploads ------------------------------------------------------

    def start_resumable(self, upload: _ResumableUpload) -> str:
        """Register a resumable upload session and return its id."""
        upload_id = secrets.token_urlsafe(18)
        with self.lock:
            self._bucket(upload.bucket)
            self._resumable[upload_id] = upload
        return upload_id

    def resumable(self, upload_id: str) -> _ResumableUpload:
        """The resumable session ``upload_id``; 404 if unknown."""
        with self.lock:
            upload = self._resumable.get(upload_id)
        if upload is None:
            raise ApiError(404, f"No such upload session: {upload_id}", "notFound", "NoSuchUpload")
        return upload

    def end_resumable(self, upload_id: str) -> None:
        """Forget the resumable session ``upload_id``."""
        with self.lock:
            self._resumable.pop(upload_id, None)

    # -- multipart (XML API) uploads -------------------------------------------------------

    def start_xml_upload(self, upload: _XmlMultipartUpload) -> str:
        """Register an XML multipart upload and return its id."""
        upload_id = secrets.token_urlsafe(18)
        with self.lock:
            self._bucket(upload.bucket)
            self._xml_uploads[upload_id] = upload
        return upload_id

    def xml_upload(self, upload_id: str, bucket: str, name: str) -> _XmlMultipartUpload:
        """The XML multipart upload ``upload_id`` of ``bucket/name``; 404 if unknown."""
        with self.lock:
            upload = self._xml_uploads.get(upload_id)
        if upload is None or upload.bucket != bucket or upload.name != name:
            raise ApiError(
                404, f"No such multipart upload: {upload_id}", "notFound", "NoSuchUpload"
            )
        return upload

    def end_xml_upload(self, upload_id: str) -> None:
        """Forget the XML multipart upload ``upload_id``."""
        with self.lock:
            self._xml_uploads.pop(upload_id, None)


def _metadata_from_resource(
    resource: Mapping[str, Any],
    content_type: str,
    metadata: Mapping[str, str],
    extra: Mapping[str, str],
    merge: bool = False,
) -> tuple[str, dict[str, str], dict[str, str]]:
    """Apply the writable fields of a JSON object resource to existing metadata.

    Args:
        resource: The JSON object resource from the request.
        content_type: Current content type.
        metadata: Current custom metadata.
        extra: Current other writable fields.
        merge: Merge ``metadata`` key by key (PATCH: a null value deletes a key) instead of
            replacing it as a whole.
    """
    new_type = resource.get("contentType") or content_type
    if not isinstance(new_type, str):
        raise _bad_request("contentType must be a string")
    new_metadata = dict(metadata)
    if "metadata" in resource:
        given = resource["metadata"] or {}
        if not isinstance(given, dict):
            raise _bad_request("metadata must be an object")
        if not merge:
            new_metadata = {}
        for key, value in given.items():
            if value is None:
                new_metadata.pop(str(key), None)
            else:
                new_metadata[str(key)] = str(value)
    new_extra = dict(extra)
    for name in _EXTRA_FIELDS:
        if name in resource:
            if resource[name] is None:
                new_extra.pop(name, None)
            else:
                new_extra[name] = str(resource[name])
    return new_type, new_metadata, new_extra


def _parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """Resolve a ``Range`` header to ``(first, last)`` inclusive, or None for the whole object.

    Unparsable or multi-range headers are ignored (the whole object is sent), as RFC 9110
    allows; a range starting beyond the end answers 416. Ranges on an empty object are
    ignored.
    """
    if header is None or size == 0:
        return None
    match = _RANGE_RE.match(header.strip())
    if match is None:
        return None
    first_text, last_text = match.groups()
    if not first_text:
        if not last_text:
            return None
        suffix = int(last_text)
        if suffix == 0:
            raise _range_not_satisfiable(size)
        return max(0, size - suffix), size - 1
    first = int(first_text)
    if last_text and int(last_text) < first:
        return None  # syntactically invalid: ignore the header
    if first >= size:
        raise _range_not_satisfiable(size)
    last = size - 1 if not last_text else min(int(last_text), size - 1)
    return first, last


def _range_not_satisfiable(size: int) -> ApiError:
    return ApiError(
        416,
        "The requested range cannot be satisfied.",
        "requestedRangeNotSatisfiable",
        "InvalidRange",
        [("Content-Range", f"bytes */{size}")],
    )


def _verify_hashes(data: bytes, expected: Mapping[str, str]) -> None:
    """400 if a client-supplied base64 ``md5`` / ``crc32c`` does not match ``data``."""
    md5 = expected.get("md5")
    if md5 is not None and md5 != _b64(hashlib.md5(data).digest()):
        raise _bad_request(
            f"Provided MD5 hash {md5!r} doesn't match calculated MD5 hash "
            f"{_b64(hashlib.md5(data).digest())!r}."
        )
    crc = expected.get("crc32c")
    actual = _crc32c(data)
    if crc is not None and actual is not None and crc != _b64(actual):
        raise _bad_request(
            f"Provided CRC32C {crc!r} doesn't match calculated CRC32C {_b64(actual)!r}."
        )


def _parse_hash_header(value: str | None) -> dict[str, str]:
    """``{"crc32c": ..., "md5": ...}`` from an ``x-goog-hash`` header value."""
    hashes: dict[str, str] = {}
    if value:
        for item in value.split(","):
            name, sep, digest = item.strip().partition("=")
            if sep:
                hashes[name.strip()] = digest.strip()
    return hashes


def _parse_multipart_related(content_type: str, body: bytes) -> list[tuple[Message, bytes]]:
    """Split a ``multipart/related`` body into (headers, content) parts."""
    boundary = None
    for param in content_type.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "boundary":
            boundary = value.strip().strip('"')
    if not boundary:
        raise _bad_request("multipart/related upload without a boundary")
    delimiter = b"--" + boundary.encode("latin-1")
    segments = body.split(delimiter)
    if len(segments) < 3 or not segments[-1].startswith(b"--"):
        raise _bad_request("Malformed multipart/related body")
    parts = []
    for segment in segments[1:-1]:
        segment = segment.removeprefix(b"\r\n").removesuffix(b"\r\n")
        head, sep, content = segment.partition(b"\r\n\r\n")
        if not sep:
            raise _bad_request("Malformed multipart/related part")
        headers = Message()
        for line in head.decode("latin-1").split("\r\n"):
            key, colon, value = line.partition(":")
            if colon:
                headers[key.strip()] = value.strip()
        parts.append((headers, content))
    return parts


def _local_tag(element: ElementTree.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


# --------------------------------------------------------------------------------------------
# The application: routes -> handlers
# --------------------------------------------------------------------------------------------

_JSON_PREFIXES = ("/storage/", "/upload/", "/download/", "/batch/")


class GCSApp:
    """Maps requests to responses; independent of the HTTP server machinery."""

    _JSON_ROUTES: ClassVar[list[tuple[re.Pattern[str], dict[str, str]]]] = [
        (re.compile(r"^/storage/v1/b/?$"), {"GET": "list_buckets", "POST": "insert_bucket"}),
        (
            re.compile(r"^/storage/v1/b/(?P<bucket>[^/]+)/?$"),
            {"GET": "get_bucket", "DELETE": "delete_bucket"},
        ),
        (re.compile(r"^/storage/v1/b/(?P<bucket>[^/]+)/o/?$"), {"GET": "list_objects"}),
        (
            re.compile(
                r"^/storage/v1/b/(?P<bucket>[^/]+)/o/(?P<object>[^/]+)/"
                r"(?P<op>rewriteTo|copyTo)/b/(?P<dst_bucket>[^/]+)/o/(?P<dst_object>[^/]+)$"
            ),
            {"POST": "rewrite_object"},
        ),
        (
            re.compile(r"^/storage/v1/b/(?P<bucket>[^/]+)/o/(?P<object>.+)$"),
            {
                "GET": "get_object",
                "PATCH": "patch_object",
                "PUT": "update_object",
                "DELETE": "delete_object",
            },
        ),
        (
            re.compile(r"^/upload/storage/v1/b/(?P<bucket>[^/]+)/o/?$"),
            {"POST": "upload", "PUT": "resumable_put", "DELETE": "resumable_cancel"},
        ),
        (
            re.compile(r"^/download/storage/v1/b/(?P<bucket>[^/]+)/o/(?P<object>.+)$"),
            {"GET": "download"},
        ),
    ]
    _XML_ROUTES: ClassVar[list[tuple[re.Pattern[str], dict[str, str]]]] = [
        (re.compile(r"^/(?P<bucket>[^/]+)/?$"), {"GET": "xml_list", "HEAD": "xml_head_bucket"}),
        (
            re.compile(r"^/(?P<bucket>[^/]+)/(?P<object>.+)$"),
            {
                "GET": "xml_get",
                "HEAD": "xml_get",
                "PUT": "xml_put",
                "POST": "xml_post",
                "DELETE": "xml_delete",
            },
        ),
    ]

    def __init__(self, state: GCSState, verbose: bool = False) -> None:
        self.state = state
        self.verbose = verbose

    def handle(self, request: Request) -> Response:
        """Answer ``request``; never raises (unexpected errors become a 500 response)."""
        json_api = request.path.startswith(_JSON_PREFIXES)
        try:
            return self._dispatch(request, json_api)
        except ApiError as exc:
            return exc.to_response(xml=not json_api)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            error = ApiError(500, f"Internal server error: {exc!r}", "backendError", "Internal")
            return error.to_response(xml=not json_api)

    def _dispatch(self, request: Request, json_api: bool) -> Response:
        routes = self._JSON_ROUTES if json_api else self._XML_ROUTES
        for pattern, methods in routes:
            match = pattern.match(request.path)
            if match is None:
                continue
            name = methods.get(request.method)
            if name is None:
                raise ApiError(
                    405,
                    f"Method {request.method} not allowed here",
                    "methodNotAllowed",
                    "MethodNotAllowed",
                    [("Allow", ", ".join(sorted(methods)))],
                )
            params = {key: urllib.parse.unquote(value) for key, value in match.groupdict().items()}
            handler: Callable[[Request, dict[str, str]], Response] = getattr(self, "_" + name)
            return handler(request, params)
        raise ApiError(
            404 if not request.path.startswith("/batch/") else 501,
            f"No such API: {request.method} {request.path}",
            "notFound",
            "NotImplemented",
        )

    # -- JSON API: buckets -----------------------------------------------------------------

    def _bucket_resource(self, request: Request, name: str) -> dict[str, Any]:
        created = _rfc3339(self.state.bucket_created(name))
        return {
            "kind": "storage#bucket",
            "id": name,
            "selfLink": f"{request.base_url}/storage/v1/b/{_quote(name)}",
            "projectNumber": "0",
            "name": name,
            "timeCreated": created,
            "updated": created,
            "metageneration": "1",
            "location": "US",
            "locationType": "multi-region",
            "storageClass": "STANDARD",
            "etag": "CAE=",
        }

    def _list_buckets(self, request: Request, params: dict[str, str]) -> Response:
        items = [self._bucket_resource(request, name) for name in self.state.bucket_names()]
        return _json_response({"kind": "storage#buckets", "items": items})

    def _insert_bucket(self, request: Request, params: dict[str, str]) -> Response:
        name = request.json_body().get("name")
        if not isinstance(name, str):
            raise _bad_request("Bucket name is required")
        self.state.create_bucket(name)
        return _json_response(self._bucket_resource(request, name))

    def _get_bucket(self, request: Request, params: dict[str, str]) -> Response:
        return _json_response(self._bucket_resource(request, params["bucket"]))

    def _delete_bucket(self, request: Request, params: dict[str, str]) -> Response:
        self.state.delete_bucket(params["bucket"])
        return Response(204)

    # -- JSON API: objects -----------------------------------------------------------------

    def _object_resource(
        self, request: Request, bucket: str, name: str, obj: StoredObject
    ) -> dict[str, Any]:
        link = f"{request.base_url}/storage/v1/b/{_quote(bucket)}/o/{_quote(name)}"
        media = (
            f"{request.base_url}/download/storage/v1/b/{_quote(bucket)}/o/{_quote(name)}"
            f"?generation={obj.generation}&alt=media"
        )
        resource: dict[str, Any] = {
            "kind": "storage#object",
            "id": f"{bucket}/{name}/{obj.generation}",
            "selfLink": link,
            "mediaLink": media,
            "name": name,
            "bucket": bucket,
            "generation": str(obj.generation),
            "metageneration": str(obj.metageneration),
            "contentType": obj.content_type,
            "storageClass": "STANDARD",
            "size": str(obj.size),
            "md5Hash": _b64(obj.md5),
            "etag": obj.json_etag,
            "timeCreated": _rfc3339(obj.created_us),
            "updated": _rfc3339(obj.updated_us),
            "timeStorageClassUpdated": _rfc3339(obj.created_us),
        }
        if obj.crc32c is not None:
            resource["crc32c"] = _b64(obj.crc32c)
        if obj.metadata:
            resource["metadata"] = dict(obj.metadata)
        resource.update(obj.extra)
        return resource

    def _read(self, request: Request, bucket: str, name: str) -> StoredObject:
        """The object a JSON-API read addresses, after ``generation`` and preconditions."""
        obj = self.state.get(bucket, name)
        generation = request.int_param("generation")
        if generation is not None and generation != obj.generation:
            raise _no_such_object(bucket, name)
        Preconditions.from_query(request).check_read(obj)
        return obj

    def _get_object(self, request: Request, params: dict[str, str]) -> Response:
        bucket, name = params["bucket"], params["object"]
        obj = self._read(request, bucket, name)
        if request.query.get("alt") == "media":
            return self._media(request, obj, xml=False)
        return _json_response(self._object_resource(request, bucket, name, obj))

    def _download(self, request: Request, params: dict[str, str]) -> Response:
        obj = self._read(request, params["bucket"], params["object"])
        return self._media(request, obj, xml=False)

    def _media(self, request: Request, obj: StoredObject, xml: bool) -> Response:
        """The object's bytes, honouring ``Range``, with the headers GCS sends."""
        headers = [
            ("Content-Type", obj.content_type),
            ("ETag", obj.xml_etag if xml else obj.json_etag),
            ("Last-Modified", _http_date(obj.updated_us)),
            ("Accept-Ranges", "bytes"),
            ("x-goog-generation", str(obj.generation)),
            ("x-goog-metageneration", str(obj.metageneration)),
            ("x-goog-stored-content-length", str(obj.size)),
            ("x-goog-stored-content-encoding", "identity"),
            # Like GCS, the hashes are those of the whole object, also on 206 responses
            # (where the client does not validate them).
            ("x-goog-hash", obj.hash_header()),
        ]
        headers.extend((f"x-goog-meta-{key}", value) for key, value in obj.metadata.items())
        span = _parse_range(request.header("Range"), obj.size)
        if span is None:
            return Response(200, obj.data, headers)
        first, last = span
        headers.append(("Content-Range", f"bytes {first}-{last}/{obj.size}"))
        return Response(206, obj.data[first : last + 1], headers)

    def _patch_object(self, request: Request, params: dict[str, str]) -> Response:
        return self._change_metadata(request, params, merge=True)

    def _update_object(self, request: Request, params: dict[str, str]) -> Response:
        return self._change_metadata(request, params, merge=False)

    def _change_metadata(self, request: Request, params: dict[str, str], merge: bool) -> Response:
        bucket, name = params["bucket"], params["object"]
        resource = request.json_body()

        def change(current: StoredObject) -> StoredObject:
            base_extra = current.extra if merge else {}
            base_metadata = current.metadata if merge else {}
            content_type, metadata, extra = _metadata_from_resource(
                resource, current.content_type, base_metadata, base_extra, merge=merge
            )
            return replace(current, content_type=content_type, metadata=metadata, extra=extra)

        obj = self.state.update_metadata(
            bucket,
            name,
            change,
            Preconditions.from_query(request),
            request.int_param("generation"),
        )
        return _json_response(self._object_resource(request, bucket, name, obj))

    def _delete_object(self, request: Request, params: dict[str, str]) -> Response:
        self.state.delete(
            params["bucket"],
            params["object"],
            Preconditions.from_query(request),
            request.int_param("generation"),
        )
        return Response(204)

    def _rewrite_object(self, request: Request, params: dict[str, str]) -> Response:
        overrides = request.json_body()
        obj = self.state.copy(
            params["bucket"],
            params["object"],
            params["dst_bucket"],
            params["dst_object"],
            source_generation=request.int_param("sourceGeneration"),
            source_preconditions=Preconditions.from_query(request, "Source"),
            preconditions=Preconditions.from_query(request),
            overrides=overrides or None,
        )
        resource = self._object_resource(request, params["dst_bucket"], params["dst_object"], obj)
        if params["op"] == "copyTo":
            return _json_response(resource)
        return _json_response(
            {
                "kind": "storage#rewriteResponse",
                "totalBytesRewritten": str(obj.size),
                "objectSize": str(obj.size),
                "done": True,
                "resource": resource,
            }
        )

    def _list_objects(self, request: Request, params: dict[str, str]) -> Response:
        if request.query.get("matchGlob"):
            raise ApiError(501, "matchGlob is not supported", "notImplemented", "NotImplemented")
        bucket = params["bucket"]
        page = self.state.list(
            bucket,
            prefix=request.query.get("prefix", ""),
            delimiter=request.query.get("delimiter", ""),
            start_offset=request.query.get("startOffset", ""),
            end_offset=request.query.get("endOffset", ""),
            include_trailing_delimiter=request.flag("includeTrailingDelimiter"),
            max_results=request.int_param("maxResults") or _MAX_LIST_RESULTS,
            page_token=request.query.get("pageToken") or None,
        )
        document: dict[str, Any] = {
            "kind": "storage#objects",
            "items": [
                self._object_resource(request, bucket, name, obj) for name, obj in page.items
            ],
            "prefixes": page.prefixes,
        }
        if page.next_token is not None:
            document["nextPageToken"] = page.next_token
        return _json_response(document)

    # -- JSON API: uploads -----------------------------------------------------------------

    def _upload(self, request: Request, params: dict[str, str]) -> Response:
        bucket = params["bucket"]
        upload_type = request.query.get("uploadType", "media")
        if upload_type == "media":
            name = request.query.get("name", "")
            obj = self.state.put(
                bucket,
                name,
                request.body,
                content_type=request.header("Content-Type"),
                preconditions=Preconditions.from_query(request),
            )
            return _json_response(self._object_resource(request, bucket, name, obj))
        if upload_type == "multipart":
            return self._multipart_upload(request, bucket)
        if upload_type == "resumable":
            return self._initiate_resumable(request, bucket)
        raise _bad_request(f"Unsupported uploadType: {upload_type!r}")

    def _multipart_upload(self, request: Request, bucket: str) -> Response:
        parts = _parse_multipart_related(request.header("Content-Type") or "", request.body)
        if len(parts) != 2:
            raise _bad_request(f"multipart upload needs 2 parts, got {len(parts)}")
        (_, metadata_bytes), (media_headers, data) = parts
        try:
            resource = json.loads(metadata_bytes or b"{}")
        except ValueError as exc:
            raise _bad_request(f"Invalid metadata part: {exc}") from exc
        if not isinstance(resource, dict):
            raise _bad_request("The metadata part must be a JSON object")
        name = request.query.get("name") or resource.get("name") or ""
        if not isinstance(name, str):
            raise _bad_request("Object name must be a string")
        _verify_hashes(
            data,
            {
                key: str(resource[field_name])
                for key, field_name in (("md5", "md5Hash"), ("crc32c", "crc32c"))
                if resource.get(field_name)
            },
        )
        media_type = media_headers.get("Content-Type")
        content_type, metadata, extra = _metadata_from_resource(
            resource, str(media_type) if media_type else _DEFAULT_CONTENT_TYPE, {}, {}
        )
        obj = self.state.put(
            bucket,
            name,
            data,
            content_type=content_type,
            metadata=metadata,
            extra=extra,
            preconditions=Preconditions.from_query(request),
        )
        return _json_response(self._object_resource(request, bucket, name, obj))

    def _initiate_resumable(self, request: Request, bucket: str) -> Response:
        resource = request.json_body()
        name = request.query.get("name") or resource.get("name") or ""
        if not isinstance(name, str) or not name:
            raise _bad_request("Object name is required")
        preconditions = Preconditions.from_query(request)
        total_text = request.header("X-Upload-Content-Length")
        try:
            total = int(total_text) if total_text else None
        except ValueError as exc:
            raise _bad_request(f"Invalid X-Upload-Content-Length: {total_text!r}") from exc
        content_type, metadata, extra = _metadata_from_resource(
            resource,
            request.header("X-Upload-Content-Type") or _DEFAULT_CONTENT_TYPE,
            {},
            {},
        )
        expected = {
            key: str(resource[field_name])
            for key, field_name in (("md5", "md5Hash"), ("crc32c", "crc32c"))
            if resource.get(field_name)
        }
        # Fail early like GCS does; the conditions are checked again, atomically, on completion.
        try:
            current: StoredObject | None = self.state.get(bucket, name)
        except ApiError as exc:
            if exc.xml_code == "NoSuchBucket":
                raise
            current = None
        preconditions.check_write(current)
        upload = _ResumableUpload(
            bucket, name, content_type, metadata, extra, preconditions, expected, total
        )
        upload_id = self.state.start_resumable(upload)
        query = urllib.parse.urlencode(
            {"uploadType": "resumable", "name": name, "upload_id": upload_id}
        )
        location = f"{request.base_url}/upload/storage/v1/b/{_quote(bucket)}/o?{query}"
        return Response(200, b"", [("Location", location), ("X-GUploader-UploadID", upload_id)])

    def _resumable_put(self, request: Request, params: dict[str, str]) -> Response:
        upload_id = request.query.get("upload_id")
        if not upload_id:
            raise _bad_request("upload_id is required")
        upload = self.state.resumable(upload_id)
        if upload.bucket != params["bucket"]:
            raise _bad_request("upload_id belongs to another bucket")
        content_range = request.header("Content-Range")
        if content_range is None:
            first: int | None = len(upload.data) if request.body else None
            total: int | None = len(upload.data) + len(request.body)
        else:
            match = _CONTENT_RANGE_RE.match(content_range.strip())
            if match is None:
                raise _bad_request(f"Invalid Content-Range: {content_range!r}")
            first_text, last_text, total_text = match.groups()
            total = None if total_text == "*" else int(total_text)
            first = None if first_text is None else int(first_text)
            if first is not None and int(last_text) - first + 1 != len(request.body):
                raise _bad_request("Content-Range does not match the body length")
        with self.state.lock:
            if first is not None:
                received = len(upload.data)
                if first > received:
                    raise _bad_request(f"Chunk starts at {first}, only {received} bytes arrived")
                # A retransmitted chunk may overlap what arrived already: keep the new bytes.
                upload.data += request.body[received - first :]
            if total is not None:
                upload.total = total
        if upload.total is not None and len(upload.data) >= upload.total:
            return self._finish_resumable(request, upload_id, upload)
        headers = []
        if upload.data:
            headers.append(("Range", f"bytes=0-{len(upload.data) - 1}"))
        return Response(308, b"", headers)

    def _finish_resumable(
        self, request: Request, upload_id: str, upload: _ResumableUpload
    ) -> Response:
        data = bytes(upload.data)
        if upload.total is not None and len(data) != upload.total:
            raise _bad_request(f"Upload has {len(data)} bytes, declared {upload.total}")
        try:
            _verify_hashes(data, upload.expected_hashes)
            _verify_hashes(data, _parse_hash_header(request.header("x-goog-hash")))
            obj = self.state.put(
                upload.bucket,
                upload.name,
                data,
                content_type=upload.content_type,
                metadata=upload.metadata,
                extra=upload.extra,
                preconditions=upload.preconditions,
            )
        finally:
            self.state.end_resumable(upload_id)
        return _json_response(self._object_resource(request, upload.bucket, upload.name, obj))

    def _resumable_cancel(self, request: Request, params: dict[str, str]) -> Response:
        upload_id = request.query.get("upload_id", "")
        self.state.resumable(upload_id)
        self.state.end_resumable(upload_id)
        return Response(499)

    # -- XML API ---------------------------------------------------------------------------

    def _xml_head_bucket(self, request: Request, params: dict[str, str]) -> Response:
        self.state.bucket_created(params["bucket"])
        return Response(200)

    def _xml_list(self, request: Request, params: dict[str, str]) -> Response:
        bucket = params["bucket"]
        query = request.query
        if "uploads" in query:
            raise ApiError(501, "Listing multipart uploads is not supported", "", "NotImplemented")
        v2 = query.get("list-type") == "2"
        max_keys = request.int_param("max-keys")
        page = self.state.list(
            bucket,
            prefix=query.get("prefix", ""),
            delimiter=query.get("delimiter", ""),
            start_after=(query.get("start-after") if v2 else query.get("marker")) or None,
            max_results=_MAX_LIST_RESULTS if max_keys is None else max_keys,
            page_token=(query.get("continuation-token") if v2 else None) or None,
        )
        parts = [
            '<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01">',
            f"<Name>{xml_escape(bucket)}</Name>",
            f"<Prefix>{xml_escape(query.get('prefix', ''))}</Prefix>",
            f"<MaxKeys>{_MAX_LIST_RESULTS if max_keys is None else max_keys}</MaxKeys>",
        ]
        if query.get("delimiter"):
            parts.append(f"<Delimiter>{xml_escape(query['delimiter'])}</Delimiter>")
        parts.append(f"<IsTruncated>{'true' if page.next_token else 'false'}</IsTruncated>")
        if v2:
            parts.append(f"<KeyCount>{len(page.items) + len(page.prefixes)}</KeyCount>")
            if query.get("continuation-token"):
                token = xml_escape(query["continuation-token"])
                parts.append(f"<ContinuationToken>{token}</ContinuationToken>")
            if page.next_token:
                parts.append(f"<NextContinuationToken>{page.next_token}</NextContinuationToken>")
        elif page.next_token:
            last = max([name for name, _ in page.items] + page.prefixes)
            parts.append(f"<NextMarker>{xml_escape(last)}</NextMarker>")
        for name, obj in page.items:
            parts.append(
                f"<Contents><Key>{xml_escape(name)}</Key>"
                f"<Generation>{obj.generation}</Generation>"
                f"<MetaGeneration>{obj.metageneration}</MetaGeneration>"
                f"<LastModified>{_rfc3339(obj.updated_us)}</LastModified>"
                f"<ETag>{xml_escape(obj.xml_etag)}</ETag>"
                f"<Size>{obj.size}</Size>"
                "<StorageClass>STANDARD</StorageClass></Contents>"
            )
        for prefix in page.prefixes:
            parts.append(f"<CommonPrefixes><Prefix>{xml_escape(prefix)}</Prefix></CommonPrefixes>")
        parts.append("</ListBucketResult>")
        return _xml_response("".join(parts))

    def _xml_get(self, request: Request, params: dict[str, str]) -> Response:
        bucket, name = params["bucket"], params["object"]
        obj = self.state.get(bucket, name)
        generation = request.int_param("generation")
        if generation is not None and generation != obj.generation:
            raise _no_such_object(bucket, name)
        Preconditions.from_headers(request).check_read(obj)
        self._check_http_conditions(request, obj)
        return self._media(request, obj, xml=True)

    @staticmethod
    def _check_http_conditions(request: Request, obj: StoredObject) -> None:
        """Standard ``If-Match`` / ``If-None-Match`` / ``If-(Un)Modified-Since`` on reads."""
        etag = _strip_quotes(obj.xml_etag)
        if_match = request.header("If-Match")
        if (
            if_match is not None
            and if_match.strip() != "*"
            and etag not in {_strip_quotes(tag) for tag in if_match.split(",")}
        ):
            raise _precondition_failed(f"If-Match: {if_match}")
        if_none_match = request.header("If-None-Match")
        if if_none_match is not None and (
            if_none_match.strip() == "*"
            or etag in {_strip_quotes(tag) for tag in if_none_match.split(",")}
        ):
            raise _not_modified()
        modified_seconds = obj.updated_us // 1_000_000
        for header, modified_fails in (("If-Unmodified-Since", True), ("If-Modified-Since", False)):
            value = request.header(header)
            if value is None:
                continue
            try:
                limit = int(parsedate_to_datetime(value).timestamp())
            except (TypeError, ValueError):
                continue
            if modified_fails and modified_seconds > limit:
                raise _precondition_failed(f"{header}: {value}")
            if not modified_fails and modified_seconds <= limit:
                raise _not_modified()

    @staticmethod
    def _xml_custom_metadata(request: Request) -> dict[str, str]:
        return {
            key.lower().removeprefix("x-goog-meta-"): str(value)
            for key, value in request.headers.items()
            if key.lower().startswith("x-goog-meta-")
        }

    @staticmethod
    def _xml_write_headers(obj: StoredObject) -> list[tuple[str, str]]:
        return [
            ("ETag", obj.xml_etag),
            ("x-goog-generation", str(obj.generation)),
            ("x-goog-metageneration", str(obj.metageneration)),
            ("x-goog-hash", obj.hash_header()),
            ("Last-Modified", _http_date(obj.updated_us)),
        ]

    def _xml_put(self, request: Request, params: dict[str, str]) -> Response:
        bucket, name = params["bucket"], params["object"]
        if "uploadId" in request.query:
            return self._xml_upload_part(request, bucket, name)
        preconditions = Preconditions.from_headers(request)
        copy_source = request.header("x-goog-copy-source")
        if copy_source is not None:
            return self._xml_copy(request, bucket, name, copy_source, preconditions)
        expected = _parse_hash_header(request.header("x-goog-hash"))
        content_md5 = request.header("Content-MD5")
        if content_md5:
            expected["md5"] = content_md5.strip()
        _verify_hashes(request.body, expected)
        obj = self.state.put(
            bucket,
            name,
            request.body,
            content_type=request.header("Content-Type"),
            metadata=self._xml_custom_metadata(request),
            preconditions=preconditions,
        )
        return Response(200, b"", self._xml_write_headers(obj))

    def _xml_copy(
        self,
        request: Request,
        bucket: str,
        name: str,
        copy_source: str,
        preconditions: Preconditions,
    ) -> Response:
        source_path = urllib.parse.unquote(copy_source.split("?", 1)[0]).lstrip("/")
        source_bucket, slash, source_name = source_path.partition("/")
        if not slash or not source_name:
            raise _bad_request(f"Invalid x-goog-copy-source: {copy_source!r}")
        overrides: dict[str, Any] | None = None
        if (request.header("x-goog-metadata-directive") or "COPY").upper() == "REPLACE":
            overrides = {
                "contentType": request.header("Content-Type") or _DEFAULT_CONTENT_TYPE,
                "metadata": self._xml_custom_metadata(request),
            }
        obj = self.state.copy(
            source_bucket,
            source_name,
            bucket,
            name,
            source_generation=None,
            source_preconditions=Preconditions.from_headers(request, "x-goog-copy-source-"),
            preconditions=preconditions,
            overrides=overrides,
        )
        response = _xml_response(
            f"<CopyObjectResult><LastModified>{_rfc3339(obj.updated_us)}</LastModified>"
            f"<ETag>{xml_escape(obj.xml_etag)}</ETag></CopyObjectResult>"
        )
        response.headers.extend(self._xml_write_headers(obj))
        return response

    def _xml_delete(self, request: Request, params: dict[str, str]) -> Response:
        bucket, name = params["bucket"], params["object"]
        upload_id = request.query.get("uploadId")
        if upload_id is not None:
            self.state.xml_upload(upload_id, bucket, name)
            self.state.end_xml_upload(upload_id)
            return Response(204)
        self.state.delete(
            bucket, name, Preconditions.from_headers(request), request.int_param("generation")
        )
        return Response(204)

    def _xml_post(self, request: Request, params: dict[str, str]) -> Response:
        bucket, name = params["bucket"], params["object"]
        if "uploads" in request.query:
            upload = _XmlMultipartUpload(
                bucket,
                name,
                request.header("Content-Type") or _DEFAULT_CONTENT_TYPE,
                self._xml_custom_metadata(request),
                Preconditions.from_headers(request),
            )
            new_id = self.state.start_xml_upload(upload)
            return _xml_response(
                "<InitiateMultipartUploadResult>"
                f"<Bucket>{xml_escape(bucket)}</Bucket><Key>{xml_escape(name)}</Key>"
                f"<UploadId>{new_id}</UploadId></InitiateMultipartUploadResult>"
            )
        upload_id = request.query.get("uploadId")
        if upload_id is not None:
            return self._xml_complete_upload(request, bucket, name, upload_id)
        raise ApiError(501, "Unsupported POST on an object", "notImplemented", "NotImplemented")

    def _xml_upload_part(self, request: Request, bucket: str, name: str) -> Response:
        upload = self.state.xml_upload(request.query["uploadId"], bucket, name)
        number = request.int_param("partNumber")
        if number is None or not 1 <= number <= 10000:
            raise _bad_request("partNumber must be between 1 and 10000")
        with self.state.lock:
            upload.parts[number] = request.body
        return Response(200, b"", [("ETag", f'"{hashlib.md5(request.body).hexdigest()}"')])

    def _xml_complete_upload(
        self, request: Request, bucket: str, name: str, upload_id: str
    ) -> Response:
        upload = self.state.xml_upload(upload_id, bucket, name)
        try:
            root = ElementTree.fromstring(request.body)
        except ElementTree.ParseError as exc:
            raise ApiError(400, f"Malformed XML: {exc}", "invalid", "MalformedXML") from exc
        chunks = []
        previous = 0
        for part in root:
            if _local_tag(part) != "Part":
                continue
            fields = {_local_tag(child): (child.text or "").strip() for child in part}
            try:
                number = int(fields.get("PartNumber", ""))
            except ValueError as exc:
                raise ApiError(400, "Invalid PartNumber", "invalid", "InvalidPart") from exc
            if number <= previous:
                raise ApiError(400, "Parts must be in ascending order", "invalid", "InvalidPart")
            previous = number
            with self.state.lock:
                data = upload.parts.get(number)
            if data is None:
                raise ApiError(400, f"Part {number} was not uploaded", "invalid", "InvalidPart")
            etag = fields.get("ETag")
            if etag and _strip_quotes(etag) != hashlib.md5(data).hexdigest():
                raise ApiError(400, f"ETag mismatch for part {number}", "invalid", "InvalidPart")
            chunks.append(data)
        obj = self.state.put(
            bucket,
            name,
            b"".join(chunks),
            content_type=upload.content_type,
            metadata=upload.metadata,
            preconditions=Preconditions.from_headers(request).combine(upload.preconditions),
        )
        self.state.end_xml_upload(upload_id)
        response = _xml_response(
            "<CompleteMultipartUploadResult>"
            f"<Location>{xml_escape(request.base_url)}/{xml_escape(bucket)}/"
            f"{xml_escape(name)}</Location>"
            f"<Bucket>{xml_escape(bucket)}</Bucket><Key>{xml_escape(name)}</Key>"
            f"<ETag>{xml_escape(obj.xml_etag)}</ETag></CompleteMultipartUploadResult>"
        )
        response.headers.extend(self._xml_write_headers(obj))
        return response


# --------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------


class _BadRequestBody(Exception):
    pass


class _GCSHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(
        self,
        address: tuple[str, int],
        app: GCSApp,
        record_requests: bool,
        verbose: bool,
    ) -> None:
        self.app = app
        self.verbose = verbose
        self.record_requests = record_requests
        self.records: list[RequestRecord] = []
        self.records_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Cut the kept-alive client connections, so that nothing is served after a stop."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return  # the client went away; nothing to report
        super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body would
    # wait for the client's delayed ACK (~40 ms per request).
    disable_nagle_algorithm = True
    server: _GCSHTTPServer
    _MAX_LINE = 65536

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Log to stderr only in verbose mode."""
        if self.server.verbose:
            super().log_message(format, *args)

    def _read_exact(self, size: int) -> bytes:
        data = self.rfile.read(size)
        if len(data) != size:
            raise _BadRequestBody(f"body ended after {len(data)} of {size} bytes")
        return data

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline(self._MAX_LINE)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError as exc:
                    raise _BadRequestBody(f"bad chunk size line {line!r}") from exc
                if size == 0:
                    while self.rfile.readline(self._MAX_LINE) not in (b"\r\n", b"\n", b""):
                        pass  # skip trailers
                    return b"".join(chunks)
                chunks.append(self._read_exact(size))
                self.rfile.readline(self._MAX_LINE)
        length_text = self.headers.get("Content-Length")
        if not length_text:
            return b""
        try:
            length = int(length_text)
        except ValueError as exc:
            raise _BadRequestBody(f"bad Content-Length {length_text!r}") from exc
        if length < 0:
            raise _BadRequestBody(f"bad Content-Length {length_text!r}")
        return self._read_exact(length)

    def _serve(self) -> None:
        split = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        try:
            body = self._read_body()
        except _BadRequestBody as exc:
            self.close_connection = True
            xml = not split.path.startswith(_JSON_PREFIXES)
            response = _bad_request(f"Unreadable request body: {exc}").to_response(xml=xml)
            self._send(response, body_size=0)
            return
        host = self.headers.get("Host") or "{}:{}".format(*self.server.server_address[:2])
        request = Request(
            method=self.command,
            path=split.path,
            query=query,
            headers=self.headers,
            body=body,
            base_url=f"http://{host}",
        )
        self._send(self.server.app.handle(request), body_size=len(body))

    def _send(self, response: Response, body_size: int) -> None:
        # Record before answering, so a client that got its answer finds the request recorded.
        if self.server.record_requests:
            split = urllib.parse.urlsplit(self.path)
            record = RequestRecord(
                method=self.command,
                path=split.path,
                query=dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True)),
                headers={key.lower(): str(value) for key, value in self.headers.items()},
                body_size=body_size,
                status=response.status,
            )
            with self.server.records_lock:
                self.server.records.append(record)
        self.send_response(response.status)
        names = set()
        for name, value in response.headers:
            names.add(name.lower())
            self.send_header(name, value)
        bodyless = response.status in (204, 304) or 100 <= response.status < 200
        if not bodyless and "content-length" not in names:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if not bodyless and self.command != "HEAD" and response.body:
            self.wfile.write(response.body)


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


class GCSTestServer:
    """An in-memory GCS server on a local port, served from a background thread.

    Example::

        with GCSTestServer(buckets=["bucket"]) as server:
            client = storage.Client(
                project="test",
                credentials=AnonymousCredentials(),
                client_options={"api_endpoint": server.endpoint},
            )

    Args:
        host: Interface to bind.
        port: Port to bind; 0 picks a free one.
        buckets: Buckets to create up front.
        record_requests: Keep a :class:`RequestRecord` of every request in :attr:`requests`.
        verbose: Log every request to stderr.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        buckets: Iterable[str] = (),
        record_requests: bool = False,
        verbose: bool = False,
    ) -> None:
        self.host = host
        self.state = GCSState()
        for bucket in buckets:
            self.state.create_bucket(bucket, exist_ok=True)
        self._requested_port = port
        self._record_requests = record_requests
        self._verbose = verbose
        self._httpd: _GCSHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def bind(self) -> None:
        """Bind and listen (connections queue up from here on); idempotent."""
        if self._httpd is None:
            self._httpd = _GCSHTTPServer(
                (self.host, self._requested_port),
                GCSApp(self.state, self._verbose),
                self._record_requests,
                self._verbose,
            )

    def start(self) -> Self:
        """Bind and serve from a daemon thread; returns ``self``."""
        self.bind()
        assert self._httpd is not None
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.1},
                name=f"gcs-test-server-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Bind and serve from the calling thread until interrupted."""
        self.bind()
        assert self._httpd is not None
        try:
            self._httpd.serve_forever(poll_interval=0.1)
        finally:
            self._httpd.server_close()

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._httpd is None:
            return
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        self._httpd.close_connections()
        self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("the server is not bound; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def endpoint(self) -> str:
        """``http://<host>:<port>``, for ``client_options={"api_endpoint": ...}``."""
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[RequestRecord]:
        """Requests seen so far (only with ``record_requests=True``)."""
        if self._httpd is None:
            return []
        with self._httpd.records_lock:
            return list(self._httpd.records)

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        if self._httpd is not None:
            with self._httpd.records_lock:
                self._httpd.records.clear()

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` if it does not exist yet."""
        self.state.create_bucket(name, exist_ok=True)


def delta_rs_service_account(endpoint: str) -> dict[str, Any]:
    """Service-account document that points delta-rs (``object_store``) at ``endpoint``.

    ``gcs_base_url`` replaces ``https://storage.googleapis.com`` and ``disable_oauth`` makes
    ``object_store`` send requests without fetching a token, so the key fields may be empty.
    """
    return {
        "gcs_base_url": endpoint,
        "disable_oauth": True,
        "client_email": "",
        "private_key": "",
        "private_key_id": "",
    }


def delta_rs_storage_options(service_account_path: str) -> dict[str, str]:
    """``storage_options`` for ``deltalake`` given a file written from :func:`delta_rs_service_account`."""  # noqa: E501
    return {"google_service_account": service_account_path}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point: serve until SIGTERM / SIGINT.

    Prints ``PORT <n>`` (flushed) as soon as the socket accepts connections.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind")
    parser.add_argument("--port", type=int, default=0, help="port to bind (0: a free port)")
    parser.add_argument(
        "--bucket", action="append", default=[], help="bucket to create (repeatable)"
    )
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, terminate)
    server = GCSTestServer(args.host, args.port, buckets=args.bucket, verbose=args.verbose)
    server.bind()
    print(f"PORT {server.port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
