"""Error mapping and retries of the object-store log stores, over real HTTP.

A scripted HTTP server on 127.0.0.1 (``scripted_http``) answers the SDKs with canned replies:
throttling, server errors, refusals, dropped connections. Each test checks which log store error
comes out, that the SDK's exception is its ``__cause__`` and never escapes, and how many
requests were sent. Azurite covers what a real service decides (a wrong account key, a missing
container). Also unit tests of the retry policy and of the ranged reader.
"""

from __future__ import annotations

import io
import json
import math
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from azure.core.exceptions import AzureError
from botocore.exceptions import BotoCoreError, ClientError
from google.api_core.exceptions import GoogleAPIError
from google.auth.exceptions import GoogleAuthError
from scripted_http import (
    DROP,
    Recorded,
    Reply,
    ScriptedServer,
    isolate_cloud_environment,
    refused_endpoint,
)
from servers import harness

import deltalog.logstores.retry as retry_module
from deltalog.logstores import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    StoreAccessDeniedError,
    StoreIOError,
    StoreThrottledError,
    StoreUnavailableError,
    UnsafeStoreConfigurationError,
)
from deltalog.logstores.azure import EMULATOR_KEY, AzureLogStore
from deltalog.logstores.gcs import GCSLogStore
from deltalog.logstores.object_store import ObjectLogStore
from deltalog.logstores.ranged_reader import RangedReader, open_ranged
from deltalog.logstores.retry import StoreRetryPolicy, call_with_retries
from deltalog.logstores.s3 import S3LogStore
from deltalog.logstores.s3_open import S3Stores

FAST = StoreRetryPolicy(max_attempts=4, base_delay=0.001, max_delay=0.002)
DATA = b'{"commitInfo":{"txnId":"ours"}}\n'
OTHER = b'{"commitInfo":{"txnId":"theirs"}}\n'
HTTP_DATE = "Tue, 02 Jan 2024 03:04:05 GMT"
SECRET_KEY = "U0VDUkVULXh5ei13cm9uZy1rZXktMDEyMzQ1Njc4OQ=="  # base64 of "SECRET-xyz-..."

SDK_ERRORS: tuple[type[BaseException], ...] = (
    BotoCoreError,
    ClientError,
    GoogleAPIError,
    AzureError,
    requests.RequestException,
)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_cloud_environment(monkeypatch, tmp_path)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def assert_mapped(
    exc: BaseException, cause: type[BaseException] | tuple[type[BaseException], ...]
) -> None:
    """``exc`` is one of ours, raised ``from`` the SDK exception ``cause``."""
    assert isinstance(exc, LogStoreError)
    assert not isinstance(exc, SDK_ERRORS)
    assert type(exc).__module__ == "deltalog.logstores.errors"
    assert isinstance(exc.__cause__, cause), repr(exc.__cause__)


def methods(requests_: list[Recorded]) -> list[str]:
    return [r.method for r in requests_]


# =========================================================================== S3


def s3_store(endpoint: str) -> S3LogStore:
    store, _ = S3Stores.from_uri(
        "s3://bkt/t",
        {
            "s3.endpoint": endpoint,
            "s3.region": "us-east-1",
            "s3.commit_protocol": "conditional-put",
            "s3.addressing_style": "path",
            **harness.AWS_KEYS,
        },
    )
    assert isinstance(store, S3LogStore)
    store.retry = FAST
    return store


def s3_error(status: int, code: str, message: str = "scripted") -> Reply:
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
        f"<Message>{message}</Message><RequestId>r1</RequestId></Error>"
    ).encode()
    return Reply(status, {"Content-Type": "application/xml"}, body)


def s3_put_ok() -> Reply:
    return Reply(200, {"ETag": '"etag"'})


def s3_object(data: bytes) -> Reply:
    headers = {
        "ETag": '"etag"',
        "Last-Modified": HTTP_DATE,
        "Content-Type": "application/octet-stream",
    }
    return Reply(200, headers, data)


def count_s3_sends(store: S3LogStore, operation: str) -> list[int]:
    """Counts the HTTP attempts botocore makes for ``operation`` (connection refused included)."""
    sent: list[int] = []

    def before_send(**_: Any) -> None:
        sent.append(1)

    store.client.meta.events.register(f"before-send.s3.{operation}", before_send)
    return sent


PATH = "s3://bkt/t/_delta_log/00000000000000000001.json"
KEY_PATH = "/bkt/t/_delta_log/00000000000000000001.json"


def test_s3_throttled_twice_then_written(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(503, "SlowDown"), s3_error(503, "SlowDown"), s3_put_ok())
    store.write(PATH, DATA)
    assert methods(server.requests) == ["PUT"] * 3
    for request in server.requests:
        assert request.path == KEY_PATH
        assert request.header("If-None-Match") == "*"
        assert request.body == DATA


@pytest.mark.parametrize(
    ("status", "code"),
    [(503, "SlowDown"), (503, "ServiceUnavailable"), (400, "RequestLimitExceeded")],
)
def test_s3_persistently_throttled(server: ScriptedServer, status: int, code: str) -> None:
    store = s3_store(server.endpoint)
    server.script(*[s3_error(status, code)] * 6)
    with pytest.raises(StoreThrottledError) as info:
        store.write(PATH, DATA)
    assert_mapped(info.value, ClientError)
    assert len(server.requests) == FAST.max_attempts
    assert code in str(info.value)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (403, "AccessDenied"),
        (403, "InvalidAccessKeyId"),
        (403, "SignatureDoesNotMatch"),
        (400, "ExpiredToken"),
        (403, "AccountProblem"),  # any 403, whatever its code
    ],
)
def test_s3_access_denied_is_not_retried(server: ScriptedServer, status: int, code: str) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(status, code), s3_put_ok())
    with pytest.raises(StoreAccessDeniedError) as info:
        store.write(PATH, DATA)
    assert_mapped(info.value, ClientError)
    assert isinstance(info.value, PermissionError)
    assert len(server.requests) == 1
    assert PATH in str(info.value)


def test_s3_get_of_a_missing_key(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(404, "NoSuchKey"))
    with pytest.raises(LogFileNotFoundError) as info:
        store.read(PATH)
    assert_mapped(info.value, ClientError)
    assert isinstance(info.value, FileNotFoundError)
    assert methods(server.requests) == ["GET"]


def test_s3_head_of_a_missing_key(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(Reply(404), Reply(404))  # HEAD answers carry no body: the code is "404"
    with pytest.raises(LogFileNotFoundError) as info:
        store.stat(PATH)
    assert_mapped(info.value, ClientError)
    assert store.exists(PATH) is False
    assert methods(server.requests) == ["HEAD", "HEAD"]


def test_s3_create_if_absent_lost(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(412, "PreconditionFailed"))
    with pytest.raises(FileAlreadyExistsError) as info:
        store.write(PATH, DATA)
    assert_mapped(info.value, ClientError)
    assert isinstance(info.value, FileExistsError)
    assert methods(server.requests) == ["PUT"]  # no retry, no read-back


def test_s3_conflicting_upload_in_flight_is_retried_then_taken(server: ScriptedServer) -> None:
    """409 ConditionalRequestConflict: another upload is in flight; the retry decides."""
    store = s3_store(server.endpoint)
    server.script(
        s3_error(409, "ConditionalRequestConflict"),
        s3_error(412, "PreconditionFailed"),
        s3_object(b"someone else's commit"),
    )
    with pytest.raises(FileAlreadyExistsError):
        store.write(PATH, DATA)
    assert methods(server.requests) == ["PUT", "PUT", "GET"]


def test_s3_conflicting_upload_in_flight_that_failed_lets_the_retry_win(
    server: ScriptedServer,
) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(409, "ConditionalRequestConflict"), s3_put_ok())
    store.write(PATH, DATA)
    puts = server.requests
    assert methods(puts) == ["PUT", "PUT"]
    assert all(p.header("If-None-Match") == "*" for p in puts)


def test_s3_overwrite_sends_no_condition(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_put_ok())
    store.write(PATH, DATA, overwrite=True)
    [put] = server.requests
    assert put.header("If-None-Match") is None


def test_s3_endpoint_without_conditional_writes(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(501, "NotImplemented", "A header you provided is not implemented"))
    with pytest.raises(UnsafeStoreConfigurationError) as info:
        store.write(PATH, DATA)
    assert_mapped(info.value, ClientError)
    assert "dynamodb" in str(info.value)
    assert len(server.requests) == 1


def test_s3_under_dynamodb_creates_with_if_none_match_until_the_endpoint_answers_501(
    server: ScriptedServer,
) -> None:
    """The S3 store beneath the DynamoDB coordinator creates in one conditional PUT; an
    endpoint without conditional writes makes it check with a HEAD before each PUT from then on.
    """
    store = S3LogStore(
        s3_store(server.endpoint).client, "s3://bkt/", "bkt", create_mode="if-none-match-else-check"
    )
    store.retry = FAST
    server.script(s3_put_ok())
    store.write(PATH, DATA)
    assert [(r.method, r.header("If-None-Match")) for r in server.requests] == [("PUT", "*")]
    server.requests.clear()
    server.script(
        s3_error(501, "NotImplemented", "A header you provided is not implemented"),
        Reply(404),  # HEAD: absent
        s3_put_ok(),
        Reply(404),  # the next create checks first at once
        s3_put_ok(),
    )
    store.write(PATH + "2", DATA)
    store.write(PATH + "3", DATA)
    sent = [(r.method, r.header("If-None-Match")) for r in server.requests]
    assert sent == [("PUT", "*"), ("HEAD", None), ("PUT", None), ("HEAD", None), ("PUT", None)]


@pytest.mark.parametrize(
    ("first", "read_back", "succeeds"),
    [
        pytest.param(s3_error(500, "InternalError"), s3_object(DATA), True, id="500-same"),
        pytest.param(s3_error(500, "InternalError"), s3_object(OTHER), False, id="500-other"),
        pytest.param(
            s3_error(500, "InternalError"), s3_error(404, "NoSuchKey"), False, id="500-gone"
        ),
        pytest.param(s3_error(502, "BadGateway"), s3_object(DATA), True, id="502-same"),
        pytest.param(DROP, s3_object(DATA), True, id="dropped-same"),
    ],
)
def test_s3_uncertain_put_then_already_exists_reads_back(
    server: ScriptedServer, first: Reply, read_back: Reply, succeeds: bool
) -> None:
    """An attempt that failed in transit may have landed; equal bytes mean it did."""
    store = s3_store(server.endpoint)
    server.script(first, s3_error(412, "PreconditionFailed"), read_back)
    if succeeds:
        store.write(PATH, DATA)
    else:
        with pytest.raises(FileAlreadyExistsError) as info:
            store.write(PATH, DATA)
        assert_mapped(info.value, ClientError)
    assert methods(server.requests) == ["PUT", "PUT", "GET"]
    assert server.requests[2].path == KEY_PATH
    assert server.requests[1].header("If-None-Match") == "*"


def test_s3_throttled_put_then_already_exists_is_read_back(server: ScriptedServer) -> None:
    """After any retried create the object is read back: other bytes mean a real loss."""
    store = s3_store(server.endpoint)
    server.script(
        s3_error(503, "SlowDown"), s3_error(412, "PreconditionFailed"), s3_object(b"theirs")
    )
    with pytest.raises(FileAlreadyExistsError):
        store.write(PATH, DATA)
    assert methods(server.requests) == ["PUT", "PUT", "GET"]


def test_s3_503_whose_put_landed_is_a_success(server: ScriptedServer) -> None:
    """A 503 can come back for a PUT that was stored; the read-back finds our bytes."""
    store = s3_store(server.endpoint)
    server.script(
        s3_error(503, "ServiceUnavailable"), s3_error(412, "PreconditionFailed"), s3_object(DATA)
    )
    store.write(PATH, DATA)
    assert methods(server.requests) == ["PUT", "PUT", "GET"]


def test_s3_dropped_connection_is_retried(server: ScriptedServer) -> None:
    """BUG: botocore's ConnectionClosedError maps to StoreIOError, which is not retried."""
    store = s3_store(server.endpoint)
    server.script(DROP, s3_object(DATA))
    assert store.read(PATH) == DATA
    assert methods(server.requests) == ["GET", "GET"]


def test_s3_truncated_body_is_retried(server: ScriptedServer) -> None:
    """BUG: a body cut short (botocore ResponseStreamingError) is a StoreIOError, not retried."""
    store = s3_store(server.endpoint)
    cut = s3_object(DATA[:5])
    cut = Reply(cut.status, {**cut.headers, "Content-Length": str(len(DATA))}, cut.body, close=True)
    server.script(cut, s3_object(DATA))
    assert store.read(PATH) == DATA
    assert methods(server.requests) == ["GET", "GET"]


def test_s3_persistently_dropped_connection_is_unavailable(server: ScriptedServer) -> None:
    """BUG: as above; a dropped connection is a transient StoreUnavailableError."""
    store = s3_store(server.endpoint)
    server.script(*[DROP] * FAST.max_attempts)
    with pytest.raises(StoreUnavailableError) as info:
        store.read(PATH)
    assert_mapped(info.value, BotoCoreError)
    assert len(server.requests) == FAST.max_attempts


def test_s3_server_error_on_get_is_retried(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(500, "InternalError"), s3_object(DATA))
    assert store.read(PATH) == DATA
    assert methods(server.requests) == ["GET", "GET"]


def test_s3_other_client_errors_are_io_errors_at_once(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(400, "InvalidArgument", "bad argument"))
    with pytest.raises(StoreIOError) as info:
        store.read(PATH)
    assert_mapped(info.value, ClientError)
    assert not isinstance(info.value, StoreUnavailableError)
    assert "InvalidArgument" in str(info.value)
    assert len(server.requests) == 1


def test_s3_listing_access_denied(server: ScriptedServer) -> None:
    store = s3_store(server.endpoint)
    server.script(s3_error(403, "AccessDenied"))
    with pytest.raises(StoreAccessDeniedError) as info:
        list(store.list_from("s3://bkt/t/_delta_log/0"))
    assert_mapped(info.value, ClientError)
    [request] = server.requests
    assert request.path == "/bkt"
    assert request.query["prefix"] == "t/_delta_log/"


def test_s3_open_input_reads_ranges(server: ScriptedServer) -> None:
    content = bytes(range(100))
    store = s3_store(server.endpoint)
    head = Reply(200, {"Content-Length": "100", "Last-Modified": HTTP_DATE, "ETag": '"e"'})
    part = Reply(
        206,
        {"Content-Range": "bytes 92-99/100", "Last-Modified": HTTP_DATE, "ETag": '"e"'},
        content[92:],
    )
    server.script(head, part)
    with store.open_input(PATH) as f:
        f.seek(-8, io.SEEK_END)
        assert f.read() == content[92:]
    assert methods(server.requests) == ["HEAD", "GET"]
    assert server.requests[1].header("Range") == "bytes=92-99"


def test_s3_connection_refused_is_unavailable_after_retries() -> None:
    endpoint, sock = refused_endpoint()
    with sock:
        store = s3_store(endpoint)
        sent = count_s3_sends(store, "PutObject")
        with pytest.raises(StoreUnavailableError) as info:
            store.write(PATH, DATA)
    assert_mapped(info.value, BotoCoreError)
    assert len(sent) == FAST.max_attempts


def test_s3_missing_bucket_on_moto(moto_server: harness.ServerProcess) -> None:
    store, root = S3Stores.from_uri(
        f"s3://missing-{uuid.uuid4().hex[:10]}/t",
        {
            "s3.endpoint": moto_server.endpoint,
            "s3.region": "us-east-1",
            "s3.commit_protocol": "conditional-put",
            **harness.AWS_KEYS,
        },
    )
    with pytest.raises(LogStoreError) as info:
        store.write(f"{root}/_delta_log/00000000000000000000.json", DATA)
    assert_mapped(info.value, ClientError)
    assert "NoSuchBucket" in str(info.value)


# =========================================================================== GCS


def gcs_store(endpoint: str) -> GCSLogStore:
    store, _ = GCSLogStore.from_uri("gs://bkt/t", {"gcs.endpoint": endpoint, "gcs.anonymous": "1"})
    assert isinstance(store, GCSLogStore)
    store.retry = FAST
    return store


def gcs_error(status: int, message: str = "scripted") -> Reply:
    body = {"error": {"code": status, "message": message, "errors": [{"message": message}]}}
    return Reply(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


def gcs_uploaded(name: str, size: int) -> Reply:
    resource = {
        "kind": "storage#object",
        "bucket": "bkt",
        "name": name,
        "generation": "1",
        "metageneration": "1",
        "size": str(size),
        "updated": "2024-01-02T03:04:05.000Z",
    }
    return Reply(200, {"Content-Type": "application/json"}, json.dumps(resource).encode())


def gcs_media(data: bytes) -> Reply:
    return Reply(200, {"Content-Type": "application/octet-stream"}, data)


GS_PATH = "gs://bkt/t/_delta_log/00000000000000000001.json"
GS_KEY = "t/_delta_log/00000000000000000001.json"


def assert_gcs_create_if_absent(request: Recorded) -> None:
    assert (request.method, request.path) == ("POST", "/upload/storage/v1/b/bkt/o")
    assert request.query["ifGenerationMatch"] == "0"


def test_gcs_throttled_then_written(server: ScriptedServer) -> None:
    store = gcs_store(server.endpoint)
    server.script(gcs_error(429), gcs_uploaded(GS_KEY, len(DATA)))
    store.write(GS_PATH, DATA)
    assert len(server.requests) == 2
    for request in server.requests:
        assert_gcs_create_if_absent(request)
        assert DATA in request.body
        assert request.header("Authorization") is None


@pytest.mark.parametrize("status", [429, 503])
def test_gcs_persistently_throttled(server: ScriptedServer, status: int) -> None:
    store = gcs_store(server.endpoint)
    server.script(*[gcs_error(status)] * 6)
    with pytest.raises(StoreThrottledError) as info:
        store.write(GS_PATH, DATA)
    assert_mapped(info.value, GoogleAPIError)
    assert len(server.requests) == FAST.max_attempts


def test_gcs_precondition_failed_is_already_exists(server: ScriptedServer) -> None:
    store = gcs_store(server.endpoint)
    server.script(gcs_error(412))
    with pytest.raises(FileAlreadyExistsError) as info:
        store.write(GS_PATH, DATA)
    assert_mapped(info.value, GoogleAPIError)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
def test_gcs_access_denied(server: ScriptedServer, status: int) -> None:
    store = gcs_store(server.endpoint)
    server.script(gcs_error(status))
    with pytest.raises(StoreAccessDeniedError) as info:
        store.write(GS_PATH, DATA)
    # On 401 google-auth first tries to refresh the (anonymous) credentials, which fails.
    assert_mapped(info.value, GoogleAPIError if status == 403 else GoogleAuthError)
    assert len(server.requests) == 1


def test_gcs_not_found(server: ScriptedServer) -> None:
    store = gcs_store(server.endpoint)
    server.script(gcs_error(404), gcs_error(404))
    with pytest.raises(LogFileNotFoundError) as info:
        store.read(GS_PATH)
    assert_mapped(info.value, GoogleAPIError)
    with pytest.raises(LogFileNotFoundError):
        store.stat(GS_PATH)
    assert [r.path for r in server.requests] == [
        f"/download/storage/v1/b/bkt/o/{GS_KEY}",
        f"/storage/v1/b/bkt/o/{GS_KEY}",
    ]


@pytest.mark.parametrize(
    ("first", "read_back", "succeeds"),
    [
        pytest.param(gcs_error(500), gcs_media(DATA), True, id="500-same"),
        pytest.param(gcs_error(500), gcs_media(OTHER), False, id="500-other"),
        pytest.param(DROP, gcs_media(DATA), True, id="dropped-same"),
    ],
)
def test_gcs_uncertain_upload_then_precondition_failed(
    server: ScriptedServer, first: Reply, read_back: Reply, succeeds: bool
) -> None:
    store = gcs_store(server.endpoint)
    server.script(first, gcs_error(412), read_back)
    if succeeds:
        store.write(GS_PATH, DATA)
    else:
        with pytest.raises(FileAlreadyExistsError):
            store.write(GS_PATH, DATA)
    assert methods(server.requests) == ["POST", "POST", "GET"]
    assert server.requests[2].path == f"/download/storage/v1/b/bkt/o/{GS_KEY}"


def test_gcs_dropped_connection_is_retried(server: ScriptedServer) -> None:
    store = gcs_store(server.endpoint)
    server.script(DROP, gcs_media(DATA))
    assert store.read(GS_PATH) == DATA
    assert methods(server.requests) == ["GET", "GET"]


def test_gcs_truncated_body_is_retried(server: ScriptedServer) -> None:
    """BUG: requests' ChunkedEncodingError (body cut short) is a StoreIOError, not retried."""
    store = gcs_store(server.endpoint)
    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(DATA))}
    server.script(Reply(200, headers, DATA[:5], close=True), gcs_media(DATA))
    assert store.read(GS_PATH) == DATA
    assert methods(server.requests) == ["GET", "GET"]


def test_gcs_connection_refused_is_unavailable_after_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoint, sock = refused_endpoint()
    with sock:
        store = gcs_store(endpoint)
        attempts = count_attempts(monkeypatch, store)
        with pytest.raises(StoreUnavailableError) as info:
            store.write(GS_PATH, DATA)
    assert_mapped(info.value, requests.ConnectionError)
    assert len(attempts) == FAST.max_attempts


def count_attempts(monkeypatch: pytest.MonkeyPatch, store: ObjectLogStore) -> list[int]:
    """Counts the store's ``_put`` calls (one per attempt of our retry loop)."""
    attempts: list[int] = []
    put = store._put

    def counting(key: str, data: bytes, *, if_absent: bool) -> None:
        attempts.append(1)
        put(key, data, if_absent=if_absent)

    monkeypatch.setattr(store, "_put", counting)
    return attempts


# =========================================================================== Azure


def azure_store(endpoint: str, key: str = EMULATOR_KEY, container: str = "cont") -> AzureLogStore:
    store, _ = AzureLogStore.from_uri(
        f"az://{container}/t",
        {
            "azure.endpoint": f"{endpoint}/{harness.AZURITE_ACCOUNT}",
            "azure.account_name": harness.AZURITE_ACCOUNT,
            "azure.account_key": key,
        },
    )
    assert isinstance(store, AzureLogStore)
    store.retry = FAST
    return store


def azure_error(status: int, code: str) -> Reply:
    body = (
        f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code>'
        "<Message>scripted</Message></Error>"
    ).encode()
    return Reply(status, {"Content-Type": "application/xml", "x-ms-error-code": code}, body)


def azure_created() -> Reply:
    return Reply(201, {"ETag": '"0x1"', "Last-Modified": HTTP_DATE})


def azure_blob(data: bytes) -> Reply:
    headers = {
        "Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}",
        "ETag": '"0x1"',
        "Last-Modified": HTTP_DATE,
        "x-ms-blob-type": "BlockBlob",
    }
    return Reply(206, headers, data)


AZ_PATH = "az://cont/t/_delta_log/00000000000000000001.json"
AZ_KEY_PATH = f"/{harness.AZURITE_ACCOUNT}/cont/t/_delta_log/00000000000000000001.json"


def test_azure_server_busy_is_retried(server: ScriptedServer) -> None:
    store = azure_store(server.endpoint)
    server.script(azure_error(503, "ServerBusy"), azure_error(503, "ServerBusy"), azure_created())
    store.write(AZ_PATH, DATA)
    assert methods(server.requests) == ["PUT"] * 3
    for request in server.requests:
        assert request.path == AZ_KEY_PATH
        assert request.header("If-None-Match") == "*"
        assert request.body == DATA


def test_azure_persistently_busy(server: ScriptedServer) -> None:
    store = azure_store(server.endpoint)
    server.script(*[azure_error(503, "ServerBusy")] * 6)
    with pytest.raises(StoreThrottledError) as info:
        store.write(AZ_PATH, DATA)
    assert_mapped(info.value, AzureError)
    assert len(server.requests) == FAST.max_attempts


@pytest.mark.parametrize(("status", "code"), [(409, "BlobAlreadyExists"), (412, "ConditionNotMet")])
def test_azure_create_if_absent_lost(server: ScriptedServer, status: int, code: str) -> None:
    store = azure_store(server.endpoint)
    server.script(azure_error(status, code))
    with pytest.raises(FileAlreadyExistsError) as info:
        store.write(AZ_PATH, DATA)
    assert_mapped(info.value, AzureError)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("first", "read_back", "succeeds"),
    [
        pytest.param(azure_error(500, "InternalError"), azure_blob(DATA), True, id="500-same"),
        pytest.param(azure_error(500, "InternalError"), azure_blob(OTHER), False, id="500-other"),
        pytest.param(DROP, azure_blob(DATA), True, id="dropped-same"),
    ],
)
def test_azure_uncertain_upload_then_already_exists(
    server: ScriptedServer, first: Reply, read_back: Reply, succeeds: bool
) -> None:
    store = azure_store(server.endpoint)
    server.script(first, azure_error(409, "BlobAlreadyExists"), read_back)
    if succeeds:
        store.write(AZ_PATH, DATA)
    else:
        with pytest.raises(FileAlreadyExistsError):
            store.write(AZ_PATH, DATA)
    assert methods(server.requests) == ["PUT", "PUT", "GET"]


def test_azure_wrong_account_key_is_access_denied(
    azurite_server: harness.ServerProcess,
) -> None:
    from servers.fixtures import BUCKET

    store = azure_store(azurite_server.endpoint, key=SECRET_KEY, container=BUCKET)
    path = f"az://{BUCKET}/t-{uuid.uuid4().hex[:8]}/_delta_log/00000000000000000000.json"
    operations: list[Callable[[], object]] = [
        lambda: store.write(path, DATA),
        lambda: store.read(path),
        lambda: store.stat(path),
        lambda: list(store.list_from(path)),
    ]
    for operation in operations:
        with pytest.raises(StoreAccessDeniedError) as info:
            operation()
        assert_mapped(info.value, AzureError)
        assert SECRET_KEY not in str(info.value)
        assert "SECRET" not in repr(info.value)


def test_azure_write_into_a_missing_container(azurite_server: harness.ServerProcess) -> None:
    container = f"missing{uuid.uuid4().hex[:8]}"
    store = azure_store(azurite_server.endpoint, container=container)
    path = f"az://{container}/t/_delta_log/00000000000000000000.json"
    with pytest.raises(LogStoreError) as info:
        store.write(path, DATA)
    assert_mapped(info.value, AzureError)
    assert path in str(info.value)


def test_azure_connection_refused_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint, sock = refused_endpoint()
    with sock:
        store = azure_store(endpoint)
        attempts = count_attempts(monkeypatch, store)
        with pytest.raises(StoreUnavailableError) as info:
            store.write(AZ_PATH, DATA)
    assert_mapped(info.value, AzureError)
    assert len(attempts) == FAST.max_attempts


# =========================================================================== retry policy


def test_delay_is_full_jitter_under_the_exponential_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = StoreRetryPolicy(max_attempts=10, base_delay=0.1, max_delay=1.0)
    monkeypatch.setattr(retry_module.random, "uniform", lambda low, high: high)
    assert [policy.delay(n) for n in range(1, 7)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    monkeypatch.setattr(retry_module.random, "uniform", lambda low, high: low)
    assert {policy.delay(n) for n in range(1, 7)} == {0}


def test_delay_samples_stay_in_bounds_and_vary() -> None:
    policy = StoreRetryPolicy(base_delay=0.05, max_delay=5.0)
    for attempt in range(1, 16):
        cap = min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1))
        samples = [policy.delay(attempt) for _ in range(50)]
        assert all(0 <= s <= cap for s in samples)
        assert len(set(samples)) > 1


def test_delay_of_a_late_attempt_is_bounded() -> None:
    """BUG: base_delay * 2 ** (attempt - 1) overflows a float from attempt ~1075 on."""
    policy = StoreRetryPolicy(max_attempts=5000, base_delay=0.05, max_delay=5.0)
    assert 0 <= policy.delay(2000) <= 5.0


class Scripted:
    """A request that raises the given errors in turn, then returns ``"done"``."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def test_call_with_retries_retries_throttling_and_transient_errors() -> None:
    first, second = StoreThrottledError("slow down"), StoreUnavailableError("503")
    request = Scripted(first, second)
    sleeps: list[float] = []
    retried: list[Exception] = []
    policy = StoreRetryPolicy(max_attempts=3, base_delay=0.5, max_delay=0.75)
    result = call_with_retries(request, policy, on_retry=retried.append, sleep=sleeps.append)
    assert result == "done"
    assert request.calls == 3
    assert retried == [first, second]
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 0.5
    assert 0 <= sleeps[1] <= 0.75


def test_call_with_retries_gives_up_after_max_attempts() -> None:
    errors = [StoreThrottledError(f"t{i}") for i in range(5)]
    request = Scripted(*errors)
    sleeps: list[float] = []
    with pytest.raises(StoreThrottledError) as info:
        call_with_retries(request, StoreRetryPolicy(max_attempts=3), sleep=sleeps.append)
    assert info.value is errors[2]
    assert request.calls == 3
    assert len(sleeps) == 2


def test_one_attempt_means_no_retry() -> None:
    request = Scripted(StoreUnavailableError("x"))
    sleeps: list[float] = []
    with pytest.raises(StoreUnavailableError):
        call_with_retries(request, StoreRetryPolicy(max_attempts=1), sleep=sleeps.append)
    assert (request.calls, sleeps) == (1, [])


@pytest.mark.parametrize(
    "error",
    [
        FileAlreadyExistsError("x"),
        LogFileNotFoundError("x"),
        StoreAccessDeniedError("x"),
        StoreIOError("x"),
        UnsafeStoreConfigurationError("x"),
        ValueError("x"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_call_with_retries_raises_other_errors_at_once(error: Exception) -> None:
    request = Scripted(error)
    sleeps: list[float] = []
    retried: list[Exception] = []
    with pytest.raises(type(error)) as info:
        call_with_retries(request, StoreRetryPolicy(), on_retry=retried.append, sleep=sleeps.append)
    assert info.value is error
    assert (request.calls, sleeps, retried) == (1, [], [])


# =========================================================================== ranged reader


class FakeObject:
    """``fetch(start, stop)`` over bytes, recording calls and checking the documented contract."""

    def __init__(self, size: int) -> None:
        self.data = bytes(i % 251 for i in range(size))
        self.calls: list[tuple[int, int]] = []

    def fetch(self, start: int, stop: int) -> bytes:
        assert 0 <= start < stop <= len(self.data), (start, stop)
        self.calls.append((start, stop))
        return self.data[start:stop]


def test_raw_reader_seek_tell_and_reads() -> None:
    obj = FakeObject(100)
    raw = RangedReader(100, obj.fetch)
    assert (raw.readable(), raw.seekable(), raw.size(), raw.tell()) == (True, True, 100, 0)
    assert raw.read(10) == obj.data[:10]
    assert raw.tell() == 10
    assert raw.seek(5, io.SEEK_CUR) == 15
    assert raw.read(5) == obj.data[15:20]
    assert raw.seek(-10, io.SEEK_END) == 90
    assert raw.read(50) == obj.data[90:]  # a read past the end is cut short
    assert raw.tell() == 100
    assert raw.read(10) == b""
    assert raw.seek(0, io.SEEK_END) == 100
    assert raw.seek(-100, io.SEEK_END) == 0
    assert raw.read(1) == obj.data[:1]
    assert obj.calls == [(0, 10), (15, 20), (90, 100), (0, 1)]


def test_raw_reader_beyond_the_end_and_empty_reads() -> None:
    obj = FakeObject(10)
    raw = RangedReader(10, obj.fetch)
    assert raw.seek(25) == 25  # seeking past the end is allowed, as for files
    assert raw.read(4) == b""
    assert raw.tell() == 25
    assert raw.seek(3) == 3
    assert raw.read(0) == b""
    buffer = bytearray(4)
    assert raw.readinto(buffer) == 4
    assert bytes(buffer) == obj.data[3:7]
    assert obj.calls == [(3, 7)]


@pytest.mark.parametrize(
    ("offset", "whence"), [(-1, io.SEEK_SET), (-11, io.SEEK_END), (-1, io.SEEK_CUR)]
)
def test_raw_reader_refuses_negative_positions(offset: int, whence: int) -> None:
    raw = RangedReader(10, FakeObject(10).fetch)
    with pytest.raises(ValueError):
        raw.seek(offset, whence)
    assert raw.tell() == 0


def test_raw_reader_refuses_a_bad_whence() -> None:
    with pytest.raises(ValueError):
        RangedReader(10, FakeObject(10).fetch).seek(0, 3)


def test_zero_length_object() -> None:
    obj = FakeObject(0)
    with open_ranged(0, obj.fetch) as f:
        assert f.read() == b""
        assert f.read(10) == b""
        assert f.seek(0, io.SEEK_END) == 0
    assert obj.calls == []


def test_buffered_small_sequential_reads_share_one_request() -> None:
    obj = FakeObject(5000)
    with open_ranged(5000, obj.fetch, buffer_size=4096) as f:
        chunks = [f.read(100) for _ in range(30)]
        assert b"".join(chunks) == obj.data[:3000]
        assert f.tell() == 3000
        f.seek(500)  # inside the buffer: no request
        assert f.read(10) == obj.data[500:510]
    assert obj.calls == [(0, 4096)]


def test_buffered_parquet_footer_pattern() -> None:
    size = 3 << 20
    obj = FakeObject(size)
    with open_ranged(size, obj.fetch, buffer_size=64 << 10) as f:
        f.seek(-8, io.SEEK_END)
        tail = f.read(8)
        assert tail == obj.data[-8:]
        f.seek(-(8 + 20_000), io.SEEK_END)
        assert f.read(20_000) == obj.data[-20_008:-8]
        f.seek(1000)
        assert f.read(10) == obj.data[1000:1010]
    assert len(obj.calls) == 3
    assert obj.calls[0] == (size - 8, size)


def test_buffered_read_of_everything_costs_few_requests() -> None:
    """BUG: read() goes through RawIOBase.readall, which fetches 8 KiB per request."""
    size = 1 << 20
    obj = FakeObject(size)
    buffer = 256 << 10
    with open_ranged(size, obj.fetch, buffer_size=buffer) as f:
        assert f.read() == obj.data
    assert len(obj.calls) <= math.ceil(size / buffer)


def test_buffered_read_after_a_seek_reads_the_rest() -> None:
    obj = FakeObject(1000)
    with open_ranged(1000, obj.fetch, buffer_size=256) as f:
        f.seek(990)
        assert f.read() == obj.data[990:]
        assert f.read() == b""
        assert f.tell() == 1000
