"""Storage options of the object-store log stores: ``s3.*``, ``gcs.*`` and ``azure.*``.

Covers the commit-protocol choice for S3 (and its refusal when none is configured), delta-rs'
option names, case-insensitive keys, unknown keys, bad values, URL notations, and that secrets
never reach error messages or reprs. Option parsing is tested through ``from_uri`` and the built
SDK clients; where the effect of an option is only visible on the wire (credentials, the
conditional header), a scripted HTTP server on 127.0.0.1 records what the SDK sent.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from scripted_http import Reply, ScriptedServer, isolate_cloud_environment
from servers import harness
from servers.fixtures import s3_options

from deltalog import DeltaTable
from deltalog.errors import StorageError
from deltalog.logstores import (
    LogStoreError,
    MissingDependencyError,
    StoreAccessDeniedError,
    StoreConfigurationError,
    UnsafeStoreConfigurationError,
    open_store,
)
from deltalog.logstores.azure import EMULATOR_ACCOUNT, EMULATOR_KEY, AzureLogStore, parse_azure_url
from deltalog.logstores.dynamodb import S3DynamoDBLogStore
from deltalog.logstores.gcs import GCSLogStore
from deltalog.logstores.options import StoreOptions
from deltalog.logstores.retry import StoreRetryPolicy
from deltalog.logstores.s3 import (
    CONDITIONAL_PUT,
    DYNAMODB,
    KNOWN_OPTIONS,
    UNSAFE_SINGLE_WRITER,
    AwsConnection,
    S3LogStore,
    commit_protocol_from_options,
    connection_from_options,
)
from deltalog.logstores.s3_open import S3Stores

SECRET = "SECRET-xyz"
SESSION_SECRET = "SECRET-session-xyz"
BASE = {"s3.commit_protocol": "conditional-put", "s3.region": "us-east-1"}
CONDITIONAL = {"s3.commit_protocol": "conditional-put"}
SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_cloud_environment(monkeypatch, tmp_path)


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def moto_bucket(moto_server: harness.ServerProcess) -> str:
    """A fresh, empty bucket on moto that only this test uses."""
    name = f"opts-{uuid.uuid4().hex[:12]}"
    _moto_client(moto_server).create_bucket(Bucket=name)
    return name


def _moto_client(server: harness.ServerProcess) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _keys_in(server: harness.ServerProcess, bucket: str) -> list[str]:
    page = _moto_client(server).list_objects_v2(Bucket=bucket)
    return [item["Key"] for item in page.get("Contents", [])]


def _protocol(options: dict[str, str]) -> str:
    return commit_protocol_from_options(StoreOptions(options, "s3.", KNOWN_OPTIONS))


def _s3(uri: str, options: dict[str, str]) -> S3LogStore:
    store, _ = S3Stores.from_uri(uri, options)
    assert isinstance(store, S3LogStore)
    return store


def _no_secret(exc: BaseException) -> None:
    for text in (str(exc), repr(exc)):
        assert SECRET not in text
        assert SESSION_SECRET not in text


# =========================================================================== S3: commit protocol


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"s3.commit_protocol": "conditional-put"}, CONDITIONAL_PUT),
        ({"s3.commit_protocol": "dynamodb"}, DYNAMODB),
        ({"s3.commit_protocol": "unsafe-single-writer"}, UNSAFE_SINGLE_WRITER),
        ({"aws_conditional_put": "etag"}, CONDITIONAL_PUT),
        ({"AWS_CONDITIONAL_PUT": "ETag"}, CONDITIONAL_PUT),
        ({"aws_s3_locking_provider": "dynamodb"}, DYNAMODB),
        ({"AWS_S3_LOCKING_PROVIDER": "DynamoDB"}, DYNAMODB),
        ({"aws_s3_allow_unsafe_rename": "true"}, UNSAFE_SINGLE_WRITER),
        ({"S3.Commit_Protocol": "conditional-put"}, CONDITIONAL_PUT),
        # The same protocol named twice is no conflict.
        ({"s3.commit_protocol": "conditional-put", "aws_conditional_put": "etag"}, CONDITIONAL_PUT),
        ({"s3.commit_protocol": "dynamodb", "aws_s3_locking_provider": "dynamodb"}, DYNAMODB),
    ],
)
def test_commit_protocol_from_options(options: dict[str, str], expected: str) -> None:
    assert _protocol(options) == expected


def test_locking_provider_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_S3_LOCKING_PROVIDER", "dynamodb")
    assert _protocol({}) == DYNAMODB


def test_an_empty_locking_provider_variable_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_S3_LOCKING_PROVIDER", "")
    with pytest.raises(UnsafeStoreConfigurationError):
        _protocol({})


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="nothing"),
        pytest.param({"aws_s3_allow_unsafe_rename": "false"}, id="unsafe-rename-false"),
        pytest.param({"aws_conditional_put": "none"}, id="conditional-put-none"),
        pytest.param({"s3.commit_protocol": ""}, id="empty-protocol"),
    ],
)
def test_no_commit_protocol_is_refused_with_the_ways_out(options: dict[str, str]) -> None:
    with pytest.raises(UnsafeStoreConfigurationError) as info:
        _protocol(options)
    assert isinstance(info.value, StoreConfigurationError)
    message = str(info.value)
    assert "s3.commit_protocol" in message
    assert "conditional-put" in message
    assert "dynamodb" in message
    assert "unsafe-single-writer" in message


def test_no_commit_protocol_writes_nothing(
    moto_server: harness.ServerProcess, moto_bucket: str
) -> None:
    options = {"s3.endpoint": moto_server.endpoint, "s3.region": "us-east-1", **harness.AWS_KEYS}
    uri = f"s3://{moto_bucket}/table"
    with pytest.raises(UnsafeStoreConfigurationError):
        S3Stores.from_uri(uri, options)
    with pytest.raises(UnsafeStoreConfigurationError):
        open_store(uri, options)
    with pytest.raises(StorageError) as info:
        DeltaTable.create(uri, SCHEMA, storage_options=options)
    assert isinstance(info.value.__cause__, UnsafeStoreConfigurationError)
    assert _keys_in(moto_server, moto_bucket) == []
    # The same options with a protocol do write: the bucket check above can see a write.
    DeltaTable.create(uri, SCHEMA, storage_options={**options, **CONDITIONAL})
    assert _keys_in(moto_server, moto_bucket) == [
        "table/_delta_log/00000000000000000000.crc",  # the version checksum, after the commit
        "table/_delta_log/00000000000000000000.json",
    ]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (
            {"s3.commit_protocol": "conditional-put", "aws_s3_locking_provider": "dynamodb"},
            ("conditional-put", "dynamodb"),
        ),
        (
            {"aws_conditional_put": "etag", "aws_s3_allow_unsafe_rename": "true"},
            ("conditional-put", "unsafe-single-writer"),
        ),
        (
            {"s3.commit_protocol": "dynamodb", "aws_s3_allow_unsafe_rename": "true"},
            ("dynamodb", "unsafe-single-writer"),
        ),
        (
            {"s3.commit_protocol": "unsafe-single-writer", "aws_conditional_put": "etag"},
            ("conditional-put", "unsafe-single-writer"),
        ),
    ],
)
def test_conflicting_commit_protocols_are_refused(
    options: dict[str, str], named: tuple[str, str]
) -> None:
    with pytest.raises(StoreConfigurationError) as info:
        _protocol(options)
    assert not isinstance(info.value, UnsafeStoreConfigurationError)
    assert "conflicting" in str(info.value)
    for protocol in named:
        assert protocol in str(info.value)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"s3.commit_protocol": "etag"}, "s3.commit_protocol"),
        ({"s3.commit_protocol": "Conditional_Put"}, "s3.commit_protocol"),
        ({"aws_s3_locking_provider": "zookeeper"}, "aws_s3_locking_provider"),
        ({"aws_s3_allow_unsafe_rename": "maybe"}, "aws_s3_allow_unsafe_rename"),
    ],
)
def test_bad_commit_protocol_values_are_refused(options: dict[str, str], named: str) -> None:
    with pytest.raises(StoreConfigurationError) as info:
        _protocol(options)
    assert not isinstance(info.value, UnsafeStoreConfigurationError)
    assert named in str(info.value)
    assert all(value not in str(info.value) for value in options.values())  # never echoed


def _put_ok() -> Reply:
    return Reply(200, {"ETag": '"e"'})


def _not_found() -> Reply:
    return Reply(404)


def test_conditional_put_protocol_sends_if_none_match(scripted: ScriptedServer) -> None:
    store = _s3("s3://bkt/t", {**BASE, "s3.endpoint": scripted.endpoint, **harness.AWS_KEYS})
    assert store.create_mode == "if-none-match"
    scripted.script(_put_ok())
    store.write("s3://bkt/t/_delta_log/0.json", b"x")
    [put] = scripted.requests
    assert (put.method, put.path) == ("PUT", "/bkt/t/_delta_log/0.json")
    assert put.header("If-None-Match") == "*"


@pytest.mark.parametrize(
    "protocol",
    [{"s3.commit_protocol": "unsafe-single-writer"}, {"aws_s3_allow_unsafe_rename": "true"}],
)
def test_unsafe_single_writer_checks_then_puts_and_warns(
    protocol: dict[str, str], scripted: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    options = {"s3.region": "us-east-1", "s3.endpoint": scripted.endpoint, **harness.AWS_KEYS}
    with caplog.at_level(logging.WARNING, logger="deltalog.logstores.s3"):
        store = _s3("s3://bkt/t", {**options, **protocol})
    assert store.create_mode == "check-then-put"
    assert any("unsafe-single-writer" in r.getMessage() for r in caplog.records)
    scripted.script(_not_found(), _put_ok())
    store.write("s3://bkt/t/a", b"x")
    head, put = scripted.requests
    assert (head.method, head.path) == ("HEAD", "/bkt/t/a")
    assert (put.method, put.path) == ("PUT", "/bkt/t/a")
    assert put.header("If-None-Match") is None


@pytest.mark.parametrize(
    "protocol",
    [
        pytest.param({"s3.commit_protocol": "dynamodb"}, id="s3.commit_protocol"),
        pytest.param({"aws_s3_locking_provider": "dynamodb"}, id="aws_s3_locking_provider"),
        pytest.param({}, id="env-AWS_S3_LOCKING_PROVIDER"),
    ],
)
def test_dynamodb_protocol_builds_the_coordinated_store(
    protocol: dict[str, str],
    moto_server: harness.ServerProcess,
    moto_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not protocol:
        monkeypatch.setenv("AWS_S3_LOCKING_PROVIDER", "dynamodb")
    table = f"opts_{uuid.uuid4().hex[:12]}"
    options = {
        "s3.endpoint": moto_server.endpoint,
        "s3.region": "us-east-1",
        **harness.AWS_KEYS,
        "s3.dynamodb.table_name": table,
        "s3.dynamodb.create_table": "true",
        **protocol,
    }
    store, root = open_store(f"s3://{moto_bucket}/t", options)
    assert isinstance(store, S3DynamoDBLogStore)
    assert store.table_name == table
    assert isinstance(store.objects, S3LogStore)
    assert store.objects.create_mode == "if-none-match-else-check"
    assert root == f"s3://{moto_bucket}/t"
    # The table was created on moto, where the store found it.
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=moto_server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    assert dynamodb.describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE"


def test_dynamodb_s3_creates_check_first_when_told_the_server_ignores_if_none_match(
    moto_server: harness.ServerProcess, moto_bucket: str
) -> None:
    options = {
        "s3.endpoint": moto_server.endpoint,
        "s3.region": "us-east-1",
        **harness.AWS_KEYS,
        "s3.commit_protocol": "dynamodb",
        "s3.dynamodb.table_name": f"opts_{uuid.uuid4().hex[:12]}",
        "s3.dynamodb.create_table": "true",
        "s3.dynamodb.if_none_match": "false",
    }
    store, _ = open_store(f"s3://{moto_bucket}/t", options)
    assert isinstance(store, S3DynamoDBLogStore)
    assert store.objects.create_mode == "check-then-put"


# =========================================================================== S3: other options


@pytest.mark.parametrize("key", ["s3.xyz", "S3.XYZ", "s3.dynamodb.xyz", "s3.secret_acess_key"])
def test_unknown_s3_option_is_refused_and_named(key: str) -> None:
    with pytest.raises(StoreConfigurationError) as info:
        S3Stores.from_uri("s3://bkt/t", {**CONDITIONAL, key: SECRET})
    assert key.lower() in str(info.value)
    assert not isinstance(info.value, UnsafeStoreConfigurationError)
    _no_secret(info.value)


def test_options_of_other_stores_and_libraries_are_ignored(scripted: ScriptedServer) -> None:
    store = _s3(
        "s3://bkt/t",
        {
            **BASE,
            "s3.endpoint": scripted.endpoint,
            "gcs.endpoint": "http://elsewhere",
            "azure.xyz": "1",
            "timeout": "120s",
        },
    )
    assert store.client.meta.endpoint_url == scripted.endpoint


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"s3.addressing_style": "vhost"}, "s3.addressing_style"),
        ({"s3.max_attempts": "0"}, "s3.max_attempts"),
        ({"s3.max_attempts": "-3"}, "s3.max_attempts"),
        ({"s3.max_attempts": "three"}, "s3.max_attempts"),
        ({"s3.max_attempts": "2.5"}, "s3.max_attempts"),
        (
            {"s3.commit_protocol": "dynamodb", "s3.dynamodb.create_table": "sure"},
            "s3.dynamodb.create_table",
        ),
        ({"s3.commit_protocol": "dynamodb", "s3.dynamodb.ttl_seconds": "-1"}, "ttl_seconds"),
        ({"aws_s3_allow_unsafe_rename": "sure"}, "aws_s3_allow_unsafe_rename"),
    ],
)
def test_bad_values_are_refused(options: dict[str, str], named: str) -> None:
    merged = {**BASE, "s3.secret_access_key": SECRET, "s3.access_key_id": "AKID", **options}
    with pytest.raises(StoreConfigurationError) as info:
        S3Stores.from_uri("s3://bkt/t", merged)
    assert not isinstance(info.value, UnsafeStoreConfigurationError)
    assert named in str(info.value)
    _no_secret(info.value)


def test_an_empty_value_counts_as_unset() -> None:
    store = _s3("s3://bkt/t", {**BASE, "s3.addressing_style": "", "s3.max_attempts": ""})
    assert store.client.meta.config.s3["addressing_style"] == "auto"
    assert store.retry.max_attempts == StoreRetryPolicy().max_attempts


def test_max_attempts_sets_the_retry_policy() -> None:
    assert _s3("s3://bkt/t", {**BASE, "s3.max_attempts": "3"}).retry.max_attempts == 3
    assert _s3("s3://bkt/t", BASE).retry.max_attempts == StoreRetryPolicy().max_attempts


def test_keys_are_case_insensitive(scripted: ScriptedServer) -> None:
    store = _s3(
        "s3://bkt/t",
        {
            "S3.COMMIT_PROTOCOL": "conditional-put",
            "S3.Endpoint": scripted.endpoint,
            "s3.REGION": "eu-west-3",
            "S3.Addressing_Style": "path",
            "S3.MAX_ATTEMPTS": "2",
        },
    )
    assert store.client.meta.endpoint_url == scripted.endpoint
    assert store.client.meta.region_name == "eu-west-3"
    assert store.client.meta.config.s3["addressing_style"] == "path"
    assert store.retry.max_attempts == 2


@pytest.mark.parametrize(
    "key", ["s3.endpoint", "aws_endpoint_url", "aws_endpoint", "endpoint_url", "AWS_ENDPOINT_URL"]
)
def test_endpoint_aliases(key: str, scripted: ScriptedServer) -> None:
    store = _s3("s3://bkt/t", {**BASE, key: scripted.endpoint})
    assert store.client.meta.endpoint_url == scripted.endpoint


@pytest.mark.parametrize("key", ["s3.region", "aws_region", "region", "aws_default_region"])
def test_region_aliases(key: str) -> None:
    store = _s3("s3://bkt/t", {**CONDITIONAL, key: "ap-southeast-2"})
    assert store.client.meta.region_name == "ap-southeast-2"


def test_canonical_key_wins_over_alias(scripted: ScriptedServer) -> None:
    store = _s3(
        "s3://bkt/t",
        {
            **CONDITIONAL,
            "aws_region": "us-west-2",
            "s3.region": "eu-central-1",
            "aws_endpoint_url": "http://127.0.0.1:9",
            "s3.endpoint": scripted.endpoint,
        },
    )
    assert store.client.meta.region_name == "eu-central-1"
    assert store.client.meta.endpoint_url == scripted.endpoint


def test_region_defaults_to_us_east_1() -> None:
    assert _s3("s3://bkt/t", CONDITIONAL).client.meta.region_name == "us-east-1"


@pytest.mark.parametrize("variable", ["AWS_DEFAULT_REGION", "AWS_REGION"])
def test_region_from_the_environment(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The module docstring promises AWS_REGION (delta-rs' variable) as well."""
    monkeypatch.setenv(variable, "sa-east-1")
    assert _s3("s3://bkt/t", CONDITIONAL).client.meta.region_name == "sa-east-1"
    options = {**CONDITIONAL, "s3.region": "eu-north-1"}
    assert _s3("s3://bkt/t", options).client.meta.region_name == "eu-north-1"


def test_endpoint_from_the_environment(
    scripted: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", scripted.endpoint)
    assert _s3("s3://bkt/t", BASE).client.meta.endpoint_url == scripted.endpoint
    options = {**BASE, "s3.endpoint": "http://127.0.0.1:9"}
    assert _s3("s3://bkt/t", options).client.meta.endpoint_url == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("options", "style"),
    [
        ({"s3.addressing_style": "path"}, "path"),
        ({"s3.addressing_style": "virtual"}, "virtual"),
        ({"aws_virtual_hosted_style_request": "true"}, "virtual"),
        ({"aws_virtual_hosted_style_request": "false"}, "path"),
        ({}, "auto"),
        # The canonical key wins over delta-rs' flag.
        ({"s3.addressing_style": "path", "aws_virtual_hosted_style_request": "true"}, "path"),
    ],
)
def test_addressing_style(options: dict[str, str], style: str) -> None:
    store = _s3("s3://bkt/t", {**BASE, **options})
    assert store.client.meta.config.s3["addressing_style"] == style


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param(
            ("s3.access_key_id", "s3.secret_access_key", "s3.session_token"), id="canonical"
        ),
        pytest.param(
            ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"), id="delta-rs"
        ),
        pytest.param(("access_key_id", "secret_access_key", "aws_token"), id="short"),
    ],
)
def test_credentials_and_their_aliases_sign_the_requests(
    keys: tuple[str, str, str], scripted: ScriptedServer
) -> None:
    key_id, secret, token = keys
    store = _s3(
        "s3://bkt/t",
        {
            **BASE,
            "s3.endpoint": scripted.endpoint,
            key_id: "AKIDALIAS",
            secret: SECRET,
            token: SESSION_SECRET,
        },
    )
    scripted.script(_put_ok())
    store.write("s3://bkt/t/x", b"x")
    [put] = scripted.requests
    authorization = put.header("Authorization") or ""
    assert "Credential=AKIDALIAS/" in authorization
    assert "/us-east-1/s3/" in authorization
    assert put.header("X-Amz-Security-Token") == SESSION_SECRET
    # The secret signs; it is never sent.
    assert all(SECRET not in v for k, v in put.headers.items() if k != "x-amz-security-token")


def test_credentials_from_the_environment(
    scripted: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    store = _s3("s3://bkt/t", {**BASE, "s3.endpoint": scripted.endpoint})
    scripted.script(_put_ok())
    store.write("s3://bkt/t/x", b"x")
    assert "Credential=AKIDFROMENV/" in (scripted.requests[0].header("Authorization") or "")


@pytest.mark.parametrize(
    ("uri", "prefix", "root"),
    [
        ("s3://bkt/a/b", "s3://bkt/", "s3://bkt/a/b"),
        ("s3://bkt/a/b/", "s3://bkt/", "s3://bkt/a/b"),
        ("s3://bkt", "s3://bkt/", "s3://bkt"),
        ("s3a://bkt/a", "s3a://bkt/", "s3a://bkt/a"),
    ],
)
def test_s3_urls(uri: str, prefix: str, root: str) -> None:
    store, got_root = S3Stores.from_uri(uri, BASE)
    assert isinstance(store, S3LogStore)
    assert (store.prefix, store.bucket, got_root) == (prefix, "bkt", root)


@pytest.mark.parametrize("uri", ["s3://", "s3:///key", "bkt/key"])
def test_s3_url_without_bucket_is_refused(uri: str) -> None:
    with pytest.raises(StoreConfigurationError):
        S3Stores.from_uri(uri, BASE)


def test_s3a_urls_work_and_keep_their_notation(
    moto_server: harness.ServerProcess, moto_bucket: str
) -> None:
    store, root = open_store(f"s3a://{moto_bucket}/t", s3_options(moto_server.endpoint))
    assert root == f"s3a://{moto_bucket}/t"
    path = f"{root}/_delta_log/00000000000000000000.json"
    store.write(path, b"{}")
    assert store.read(path) == b"{}"
    [status] = store.list_from(f"{root}/_delta_log/0")
    assert status.path == path
    assert store.stat(path).path == path
    # On the wire it is an ordinary key in the bucket.
    assert _keys_in(moto_server, moto_bucket) == ["t/_delta_log/00000000000000000000.json"]
    # An s3:// path is not in an s3a:// store.
    with pytest.raises(StoreConfigurationError):
        store.read(f"s3://{moto_bucket}/t/_delta_log/00000000000000000000.json")


# =========================================================================== S3: secrets


def test_aws_connection_repr_hides_credentials() -> None:
    options = {
        "s3.endpoint": "http://127.0.0.1:9",
        "s3.region": "eu-west-1",
        "s3.access_key_id": "AKID",
        "s3.secret_access_key": SECRET,
        "s3.session_token": SESSION_SECRET,
    }
    connection = connection_from_options(StoreOptions(options, "s3.", KNOWN_OPTIONS))
    assert connection.secret_access_key == SECRET
    assert connection.session_token == SESSION_SECRET
    for text in (repr(connection), str(connection), f"{connection}", repr([connection])):
        assert SECRET not in text
        assert SESSION_SECRET not in text
        assert "http://127.0.0.1:9" in text
    assert repr(AwsConnection(secret_access_key=SECRET)).count("SECRET") == 0


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({}, id="no-protocol"),
        pytest.param({"s3.commit_protocol": "etag"}, id="bad-protocol"),
        pytest.param({**CONDITIONAL, "aws_s3_locking_provider": "dynamodb"}, id="conflict"),
        pytest.param({**CONDITIONAL, "s3.addressing_style": "x"}, id="addressing"),
        pytest.param({**CONDITIONAL, "s3.max_attempts": "x"}, id="int"),
        pytest.param({**CONDITIONAL, "s3.nope": "x"}, id="unknown-key"),
    ],
)
def test_secrets_never_appear_in_option_errors(bad: dict[str, str]) -> None:
    options = {"s3.secret_access_key": SECRET, "s3.session_token": SESSION_SECRET, **bad}
    with pytest.raises(StoreConfigurationError) as info:
        S3Stores.from_uri("s3://bkt/t", options)
    _no_secret(info.value)


def test_secrets_never_appear_in_access_denied_errors(scripted: ScriptedServer) -> None:
    store = _s3(
        "s3://bkt/t",
        {
            **BASE,
            "s3.endpoint": scripted.endpoint,
            "s3.access_key_id": "AKID",
            "s3.secret_access_key": SECRET,
            "s3.session_token": SESSION_SECRET,
        },
    )
    body = (
        b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
        b"<Message>Access Denied</Message></Error>"
    )
    scripted.script(Reply(403, {"Content-Type": "application/xml"}, body))
    with pytest.raises(StoreAccessDeniedError) as info:
        store.write("s3://bkt/t/x", b"x")
    _no_secret(info.value)
    assert "s3://bkt/t/x" in str(info.value)
    # Through deltalog too: its StorageError quotes the store error.
    scripted.script(Reply(403, {"Content-Type": "application/xml"}, body))
    with pytest.raises(StorageError) as table_info:
        DeltaTable.create(
            "s3://bkt/t2",
            SCHEMA,
            storage_options={
                **BASE,
                "s3.endpoint": scripted.endpoint,
                "s3.secret_access_key": SECRET,
                "s3.access_key_id": "AKID",
            },
        )
    _no_secret(table_info.value)


def test_an_invalid_endpoint_is_a_configuration_error() -> None:
    """BUG: botocore's ValueError("Invalid endpoint") escapes from_uri unmapped."""
    with pytest.raises(StoreConfigurationError) as info:
        S3Stores.from_uri("s3://bkt/t", {**BASE, "s3.endpoint": "not a url"})
    assert "s3.endpoint" in str(info.value) or "endpoint" in str(info.value).lower()


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"s3.profile": "no-such-profile"}, id="missing-profile"),
        pytest.param({"s3.region": "not a region!"}, id="malformed-region"),
    ],
)
def test_settings_boto3_rejects_are_configuration_errors(options: dict[str, str]) -> None:
    """BUG: these surface as StoreIOError although client() documents StoreConfigurationError."""
    with pytest.raises(LogStoreError) as info:
        S3Stores.from_uri("s3://bkt/t", {**CONDITIONAL, **options})
    assert isinstance(info.value, StoreConfigurationError)


# =========================================================================== GCS


def _gcs(uri: str, options: dict[str, str]) -> GCSLogStore:
    store, _ = GCSLogStore.from_uri(uri, options)
    assert isinstance(store, GCSLogStore)
    return store


def _gcs_object(name: str, size: int) -> Reply:
    resource = {
        "kind": "storage#object",
        "bucket": "bkt",
        "name": name,
        "generation": "1",
        "metageneration": "1",
        "size": str(size),
        "updated": "2024-01-02T03:04:05.678Z",
    }
    return Reply(200, {"Content-Type": "application/json"}, json.dumps(resource).encode())


@pytest.mark.parametrize("key", ["gcs.endpoint", "google_endpoint", "GCS.ENDPOINT"])
def test_gcs_endpoint_and_anonymous(key: str, scripted: ScriptedServer) -> None:
    store = _gcs("gs://bkt/t", {key: scripted.endpoint, "GCS.Anonymous": "TRUE"})
    scripted.script(_gcs_object("t/x", 5))
    status = store.stat("gs://bkt/t/x")
    assert (status.path, status.size, status.modification_time) == (
        "gs://bkt/t/x",
        5,
        1704164645678,
    )
    [request] = scripted.requests
    assert request.path == "/storage/v1/b/bkt/o/t/x"
    assert request.header("Authorization") is None


@pytest.mark.parametrize(
    ("options", "project"),
    [
        ({}, "deltalog"),
        ({"gcs.project": "p1"}, "p1"),
        ({"google_project_id": "p2"}, "p2"),
        ({"project_id": "p3"}, "p3"),
        ({"gcs.project": "p1", "google_project_id": "p2"}, "p1"),
    ],
)
def test_gcs_project(options: dict[str, str], project: str) -> None:
    store = _gcs("gs://bkt/t", {"gcs.anonymous": "true", **options})
    assert store.client.project == project


@pytest.mark.parametrize(
    ("uri", "prefix", "root"),
    [
        ("gs://bkt/a/b/", "gs://bkt/", "gs://bkt/a/b"),
        ("gs://bkt", "gs://bkt/", "gs://bkt"),
    ],
)
def test_gcs_urls(uri: str, prefix: str, root: str) -> None:
    store, got_root = GCSLogStore.from_uri(uri, {"gcs.anonymous": "true"})
    assert isinstance(store, GCSLogStore)
    assert (store.prefix, store.bucket.name, got_root) == (prefix, "bkt", root)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"gcs.xyz": "1"}, "gcs.xyz"),
        ({"GCS.Endpont": "http://x"}, "gcs.endpont"),
        ({"gcs.anonymous": "maybe"}, "gcs.anonymous"),
        ({"gcs.max_attempts": "0"}, "gcs.max_attempts"),
        ({"gcs.max_attempts": "many"}, "gcs.max_attempts"),
    ],
)
def test_gcs_bad_options_are_refused(options: dict[str, str], named: str) -> None:
    with pytest.raises(StoreConfigurationError) as info:
        GCSLogStore.from_uri("gs://bkt/t", {"gcs.anonymous": "true", **options})
    assert named in str(info.value)


def test_gcs_max_attempts() -> None:
    store = _gcs("gs://bkt/t", {"gcs.anonymous": "true", "gcs.max_attempts": "5"})
    assert store.retry.max_attempts == 5


def test_gcs_url_without_bucket_is_refused() -> None:
    with pytest.raises(StoreConfigurationError):
        GCSLogStore.from_uri("gs://", {"gcs.anonymous": "true"})


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(None, id="missing-file"),
        pytest.param(f"not json {SECRET}", id="not-json"),
        pytest.param(json.dumps({"type": "service_account", "private_key": SECRET}), id="fields"),
        pytest.param(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "p",
                    "private_key_id": "k",
                    "private_key": f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n"
                    "-----END PRIVATE KEY-----\n",
                    "client_email": "a@b.c",
                    "token_uri": "https://oauth2.googleapis.com/token",
                }
            ),
            id="bad-key",
        ),
    ],
)
@pytest.mark.parametrize("key", ["gcs.credentials_file", "google_service_account_path"])
def test_gcs_unusable_credentials_file(content: str | None, key: str, tmp_path: Path) -> None:
    path = tmp_path / "key.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(StoreConfigurationError) as info:
        GCSLogStore.from_uri("gs://bkt/t", {key: str(path)})
    # The value is never echoed (it may be key JSON pasted into the option); the option is named.
    assert str(path) not in str(info.value)
    assert "gcs.credentials_file" in str(info.value)
    _no_secret(info.value)


# =========================================================================== Azure


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("az://cont/a/b", ("az://cont/", "cont", None, "a/b")),
        ("az://cont", ("az://cont/", "cont", None, "")),
        (
            "abfss://cont@acct.dfs.core.windows.net/a/b/",
            ("abfss://cont@acct.dfs.core.windows.net/", "cont", "acct", "a/b"),
        ),
        (
            "abfs://cont@acct.dfs.core.windows.net",
            ("abfs://cont@acct.dfs.core.windows.net/", "cont", "acct", ""),
        ),
        (
            "az://cont@acct.blob.core.windows.net/t",
            ("az://cont@acct.blob.core.windows.net/", "cont", "acct", "t"),
        ),
    ],
)
def test_parse_azure_url(uri: str, expected: tuple[str, str, str | None, str]) -> None:
    assert parse_azure_url(uri) == expected


@pytest.mark.parametrize(
    "uri", ["az://", "az:///t", "abfss://@acct.dfs.core.windows.net/t", "cont/path"]
)
def test_parse_azure_url_without_container(uri: str) -> None:
    with pytest.raises(StoreConfigurationError):
        parse_azure_url(uri)


def _azure(uri: str, options: dict[str, str]) -> AzureLogStore:
    store, _ = AzureLogStore.from_uri(uri, options)
    assert isinstance(store, AzureLogStore)
    return store


def test_abfss_url_names_the_account() -> None:
    uri = "abfss://cont@acct.dfs.core.windows.net/warehouse/t"
    store, root = AzureLogStore.from_uri(uri, {"azure.account_key": EMULATOR_KEY})
    assert isinstance(store, AzureLogStore)
    assert root == uri
    assert store.prefix == "abfss://cont@acct.dfs.core.windows.net/"
    assert store.container.url == "https://acct.blob.core.windows.net/cont"
    assert store.container.account_name == "acct"
    assert store.container.container_name == "cont"
    assert store.key_of(f"{uri}/_delta_log/0.json") == "warehouse/t/_delta_log/0.json"


@pytest.mark.parametrize(
    "key",
    ["azure.account_name", "azure_storage_account_name", "account_name", "Azure.Account_Name"],
)
def test_azure_account_name_and_aliases(key: str) -> None:
    store = _azure("az://cont/t", {key: "acct2", "azure_storage_account_key": EMULATOR_KEY})
    assert store.container.url == "https://acct2.blob.core.windows.net/cont"
    assert store.container.credential.account_name == "acct2"


def test_azure_account_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "envacct")
    store = _azure("az://cont/t", {"azure.account_key": EMULATOR_KEY})
    assert store.container.account_name == "envacct"


def test_azure_missing_account_is_refused() -> None:
    with pytest.raises(StoreConfigurationError) as info:
        AzureLogStore.from_uri("az://cont/t", {"azure.account_key": SECRET})
    assert not isinstance(info.value, MissingDependencyError)
    assert "azure.account_name" in str(info.value)
    _no_secret(info.value)


def test_azure_endpoint_and_emulator() -> None:
    store = _azure(
        "az://cont/t",
        {
            "azure_storage_endpoint": "http://127.0.0.1:9/acct",
            "azure.account_name": "acct",
            "azure.account_key": EMULATOR_KEY,
        },
    )
    assert store.container.url == "http://127.0.0.1:9/acct/cont"
    emulator = _azure("az://cont/t", {"azure.use_emulator": "true"})
    assert emulator.container.url == f"http://127.0.0.1:10000/{EMULATOR_ACCOUNT}/cont"
    assert emulator.container.credential.account_name == EMULATOR_ACCOUNT


def test_azure_connection_string() -> None:
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName=acct;AccountKey={EMULATOR_KEY};"
        "BlobEndpoint=http://127.0.0.1:9/acct;"
    )
    store = _azure("az://cont/t", {"azure_storage_connection_string": connection})
    assert store.container.url == "http://127.0.0.1:9/acct/cont"
    assert store.container.account_name == "acct"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"azure.xyz": "1"}, "azure.xyz"),
        ({"AZURE.ACCOUNT_KEYS": SECRET}, "azure.account_keys"),
        ({"azure.use_emulator": "maybe"}, "azure.use_emulator"),
        ({"azure.max_attempts": "0"}, "azure.max_attempts"),
    ],
)
def test_azure_bad_options_are_refused(options: dict[str, str], named: str) -> None:
    base = {"azure.account_name": "acct", "azure.account_key": SECRET}
    with pytest.raises(StoreConfigurationError) as info:
        AzureLogStore.from_uri("az://cont/t", {**base, **options})
    assert named in str(info.value)
    _no_secret(info.value)


def test_azure_max_attempts() -> None:
    options = {"azure.use_emulator": "true", "azure.max_attempts": "3"}
    assert _azure("az://cont/t", options).retry.max_attempts == 3


def test_azure_without_credentials_names_azure_identity() -> None:
    try:
        import azure.identity  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - depends on the environment
        pytest.skip("azure-identity is installed; DefaultAzureCredential would be used")
    with pytest.raises(MissingDependencyError) as info:
        AzureLogStore.from_uri("az://cont/t", {"azure.account_name": "acct"})
    assert isinstance(info.value, StoreConfigurationError)
    assert "azure-identity" in str(info.value)


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"azure.connection_string": f"garbage;{SECRET}"}, id="connection-string"),
        pytest.param({"azure.endpoint": "not a url", "azure.account_key": SECRET}, id="endpoint"),
    ],
)
def test_azure_malformed_settings_are_configuration_errors(options: dict[str, str]) -> None:
    """BUG: the SDK's ValueError escapes AzureLogStore.from_uri unmapped."""
    with pytest.raises(StoreConfigurationError) as info:
        AzureLogStore.from_uri("az://cont/t", options)
    _no_secret(info.value)
