"""Credentials never appear in logs, exceptions, reprs, CLI output or the table's files.

Every test hands distinctive canary credentials to a real test server (moto for S3 and DynamoDB,
our GCS server with a local OAuth token endpoint, Azurite) and then searches everything a user
or an operator could see for them:

* the exception's ``str``/``repr``, every exception of its ``__cause__``/``__context__`` chain
  (suppressed context included) and the formatted traceback;
* log records: those of our loggers (``deltalog.*``, ``logstores.*``) at every level, and those
  of **every** logger at INFO and above (botocore, urllib3, azure-core's HTTP logging policy,
  google-auth...). Third-party DEBUG is not judged, and not even produced (it only slows the
  tests down): botocore logs request headers (``X-Amz-Security-Token``, the access key id in
  ``Authorization``) and urllib3 logs request URLs (an Azure SAS ``sig=``) at DEBUG by design.
  That is outside this library, and turning those loggers to DEBUG is a deliberate act;
* ``repr`` of the table, its storage, the log store and the store's attributes;
* the CLI's stdout and stderr;
* every byte of every file under the table root (commits with ``commitInfo``, checkpoints,
  ``_last_checkpoint``, data files), Parquet read back as rows too, and the DynamoDB entries.

Every canary contains :data:`MARK`, searched case-insensitively (options are lower-cased in
places), so a partial or re-cased leak is caught too. Each test first checks that the canary is
really in what it passes, and that the scenario raised the error it is about, so none passes
vacuously; ``test_the_witness_catches_leaks`` shows the search itself fails on a leak.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import logging
import socket
import threading
import traceback
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers import harness
from servers.fixtures import BUCKET, DYNAMO_TABLE, REQUIRE_SERVERS, s3_options

from deltalog import DeltaTable
from deltalog.cli import main as cli_main
from deltalog.errors import (
    StorageConfigurationError,
    StorageError,
    UnsafeStorageError,
)
from deltalog.logstores import (
    LogFileNotFoundError,
    LogStore,
    StoreAccessDeniedError,
    StoreConfigurationError,
    StoreUnavailableError,
    UnsafeStoreConfigurationError,
    open_store,
)
from deltalog.logstores.azure import EMULATOR_ACCOUNT, EMULATOR_KEY
from deltalog.logstores.options import (
    has_credentials,
    is_secret_option,
    redact_uri,
    safe_option_name,
)

MARK = "DLCANARY"
AWS_KEY_ID = f"AKIA{MARK}0000001"
AWS_SECRET = f"s3cr3t/{MARK}+secret-0001"  # '/' and '+' as real secret keys have
AWS_TOKEN = f"IQoJb3JpZ2luX2VjE{MARK}sessiontoken0001"
#: Valid base64 (the SDK decodes it to sign) but not Azurite's key.
AZURE_KEY = f"{MARK}azureAccountKey0" + "A" * 64
AZURE_SAS = (
    f"sv=2021-08-06&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00:00:00Z&sig={MARK}signature0001%3D"
)
GCS_ACCESS_TOKEN = f"ya29.{MARK}accesstoken0001"
CANARIES = (AWS_KEY_ID, AWS_SECRET, AWS_TOKEN, AZURE_KEY, AZURE_SAS, GCS_ACCESS_TOKEN)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
OURS = ("deltalog", "logstores")


# =========================================================================== the witness


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception reachable through ``__cause__`` and ``__context__``."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def capture_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Every logger at INFO and above, ours at DEBUG too (see the module docstring)."""
    caplog.set_level(logging.INFO)
    for name in OURS:
        caplog.set_level(logging.DEBUG, logger=name)


class Witness:
    """Collects everything visible and asserts that no secret is in any of it.

    Args:
        secrets: Exact secret values used by the test (besides :data:`MARK`, always searched).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        needles = {MARK, *CANARIES, *secrets}
        for secret in list(needles):
            # The forms a secret takes in URLs and headers.
            needles.add(urllib.parse.unquote(secret))
            needles.add(urllib.parse.quote(secret, safe=""))
        self.needles = sorted(n.lower() for n in needles if len(n) >= 8)
        self.checked = 0

    def text(self, label: str, text: str) -> None:
        """Assert that ``text`` holds no secret."""
        lowered = text.lower()
        for needle in self.needles:
            assert needle not in lowered, f"{label} leaks a secret ({needle[:12]}...):\n{text}"
        self.checked += 1

    def exception(self, label: str, exc: BaseException) -> None:
        """The exception, its whole chain and its formatted traceback."""
        self.text(f"{label}: traceback", "".join(traceback.format_exception(exc)))
        for i, link in enumerate(exception_chain(exc)):
            self.text(f"{label}: chain[{i}] str", str(link))
            self.text(f"{label}: chain[{i}] repr", repr(link))
            self.text(f"{label}: chain[{i}] args", repr(link.args))

    def logs(self, caplog: pytest.LogCaptureFixture) -> int:
        """Our records at every level, everyone's at INFO and above; how many were judged."""
        judged = 0
        formatter = logging.Formatter()
        for record in caplog.records:
            if not (record.name.startswith(OURS) or record.levelno >= logging.INFO):
                continue  # third-party DEBUG: see the module docstring
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + formatter.formatException(record.exc_info)
            if record.stack_info:
                text += "\n" + record.stack_info
            self.text(f"log record {record.name}:{record.levelname}", text)
            judged += 1
        return judged

    def reprs(self, label: str, *objects: object) -> None:
        """``repr``/``str`` of objects and of their attributes."""
        for obj in objects:
            self.text(f"{label}: repr", repr(obj))
            self.text(f"{label}: str", str(obj))
            if hasattr(obj, "__dict__"):
                self.text(f"{label}: vars", repr(vars(obj)))

    def files(self, store: LogStore, root: str) -> int:
        """Every file under the table root, raw and (Parquet) as rows; how many."""
        count = 0
        for status in store.list_tree(root):
            data = store.read(status.path)
            self.text(f"file {status.path}", data.decode("latin-1"))
            if status.path.endswith(".parquet"):
                rows = pq.read_table(io.BytesIO(data)).to_pylist()
                self.text(f"rows of {status.path}", json.dumps(rows, default=str))
            count += 1
        return count


def test_the_witness_catches_leaks(caplog: pytest.LogCaptureFixture) -> None:
    witness = Witness(["an-extra-secret-value"])
    for leaked in (
        f"x {AWS_SECRET.upper()} y",
        "prefix an-extra-secret-value",
        urllib.parse.quote(AWS_SECRET, safe=""),
        f"sig={MARK.lower()}",
    ):
        with pytest.raises(AssertionError):
            witness.text("probe", leaked)
    try:
        try:
            raise ValueError(AWS_TOKEN)
        except ValueError:
            raise RuntimeError("clean") from None  # suppressed, yet still __context__
    except RuntimeError as exc:
        with pytest.raises(AssertionError):
            witness.exception("probe", exc)
    caplog.set_level(logging.DEBUG)
    logging.getLogger("deltalog.logstores.probe").debug("%s", AZURE_KEY)
    with pytest.raises(AssertionError):
        witness.logs(caplog)
    caplog.clear()
    logging.getLogger("botocore.probe").debug("%s", AZURE_KEY)  # third-party DEBUG: not judged
    assert witness.logs(caplog) == 0
    logging.getLogger("botocore.probe").info("%s", AZURE_KEY)
    with pytest.raises(AssertionError):
        witness.logs(caplog)


# =========================================================================== helpers


def _parquet(ids: list[int]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA), buf)
    return buf.getvalue()


def _closed_port() -> int:
    """A port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _name() -> str:
    return f"cred-{uuid.uuid4().hex[:12]}"


def _cli_args(options: dict[str, str]) -> list[str]:
    args: list[str] = []
    for key, value in options.items():
        args += ["-o", f"{key}={value}"]
    return args


def _lifecycle(
    uri: str,
    options: dict[str, str],
    witness: Witness,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> tuple[LogStore, str]:
    """Create, append twice, checkpoint, read, history, and the CLI; check all of it."""
    capture_logs(caplog)
    table = DeltaTable.create(uri, SCHEMA, storage_options=options)
    store, root = open_store(uri, options)
    for i in range(2):
        relative = f"part-{i}.parquet"
        store.write(store.join(root, relative), _parquet([i, i + 10]), overwrite=True)
        assert table.append_files([relative]) == i + 1
    last = table.checkpoint()
    assert last.version == 2
    fresh = DeltaTable(uri, storage_options=options)
    assert fresh.version() == 2
    assert sorted(fresh.files().column("path").to_pylist()) == ["part-0.parquet", "part-1.parquet"]
    history = fresh.history()
    assert [h["version"] for h in history] == [2, 1, 0]
    witness.text("history", json.dumps(history))
    witness.reprs("objects", table, fresh, fresh._storage, fresh._storage.store, store)
    witness.text("snapshot", repr(fresh.snapshot))

    args = _cli_args(options)
    for command in (["describe"], ["files"], ["history"], ["checkpoint"], ["history", "--json"]):
        assert cli_main([*command, uri, *args]) == 0, capsys.readouterr().err
        captured = capsys.readouterr()
        assert captured.out
        witness.text(f"cli {command} stdout", captured.out)
        witness.text(f"cli {command} stderr", captured.err)

    # commits, checkpoint, _last_checkpoint, data files
    assert witness.files(store, root) >= 7
    witness.logs(caplog)
    return store, root


def _failure(
    uri: str,
    options: dict[str, str],
    expected: type[BaseException],
    witness: Witness,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    *,
    cause: type[BaseException] | None = None,
    create: bool = True,
) -> BaseException:
    """Create (or open) a table expecting ``expected``; check the error, logs and CLI."""
    capture_logs(caplog)
    with pytest.raises(expected) as info:
        if create:
            DeltaTable.create(uri, SCHEMA, storage_options=options)
        else:
            DeltaTable(uri, storage_options=options)
    if cause is not None:
        assert any(isinstance(e, cause) for e in exception_chain(info.value)), info.value
    witness.exception("error", info.value)

    # The same through the CLI: exit 2, one line on stderr.
    assert cli_main(["describe", uri, *_cli_args(options)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("deltalog: error:"), captured.err
    witness.text("cli stdout", captured.out)
    witness.text("cli stderr", captured.err)
    witness.logs(caplog)
    return info.value


def _contains_secret(options: dict[str, str], *secrets: str) -> None:
    """The test really passes its secrets (so that finding none of them means something)."""
    flat = json.dumps(options)
    for secret in secrets:
        # A SAS token percent-encodes "+" but may leave "/" as it is.
        forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote(secret, safe="/")}
        assert any(form in flat for form in forms), secret


# =========================================================================== S3 and DynamoDB


def _s3_canary_options(endpoint: str, protocol: str = "conditional-put") -> dict[str, str]:
    options = s3_options(endpoint, protocol)
    options.update(
        {
            "s3.access_key_id": AWS_KEY_ID,
            "s3.secret_access_key": AWS_SECRET,
            "s3.session_token": AWS_TOKEN,
        }
    )
    return options


@pytest.mark.parametrize("protocol", ["conditional-put", "dynamodb", "unsafe-single-writer"])
def test_s3_table_lifecycle_leaks_nothing(
    protocol: str,
    moto_server: harness.ServerProcess,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = _s3_canary_options(moto_server.endpoint, protocol)
    _contains_secret(options, AWS_KEY_ID, AWS_SECRET, AWS_TOKEN)
    uri = f"s3://{BUCKET}/{_name()}"
    witness = Witness()
    _lifecycle(uri, options, witness, caplog, capsys)
    if protocol == "unsafe-single-writer":
        # Our own warning is among the judged records (it names the table, nothing else).
        assert any(
            r.name == "deltalog.logstores.s3" and uri in r.getMessage() for r in caplog.records
        )
    if protocol == "dynamodb":
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=moto_server.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        items = dynamodb.query(
            TableName=DYNAMO_TABLE,
            KeyConditionExpression="tablePath = :p",
            ExpressionAttributeValues={":p": {"S": uri}},
        )["Items"]
        assert len(items) == 3
        witness.text("DynamoDB entries", json.dumps(items))


def _s3_failures(endpoint: str) -> dict[str, tuple[str, dict[str, str], type[BaseException]]]:
    base = _s3_canary_options(endpoint)
    table = f"s3://{BUCKET}/{_name()}"
    return {
        "missing-bucket": (f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/t", base, StorageError),
        "connection-refused": (
            table,
            {
                **base,
                "s3.endpoint": f"http://127.0.0.1:{_closed_port()}",
                "s3.max_attempts": "1",
            },
            StorageError,
        ),
        "unknown-option": (
            table,
            {**base, "s3.secret_acess_key": AWS_SECRET},
            StorageConfigurationError,
        ),
        "colon-for-equals": (
            table,
            {**base, f"s3.secret_access_key:{AWS_SECRET}": ""},
            StorageConfigurationError,
        ),
        "bad-int": (table, {**base, "s3.max_attempts": "many"}, StorageConfigurationError),
        "bad-bool": (
            table,
            {**base, "s3.dynamodb.create_table": "maybe", "s3.commit_protocol": "dynamodb"},
            StorageConfigurationError,
        ),
        "bad-addressing-style": (
            table,
            {**base, "s3.addressing_style": "sideways"},
            StorageConfigurationError,
        ),
        "bad-protocol": (
            table,
            {**base, "s3.commit_protocol": "etag"},
            StorageConfigurationError,
        ),
        "no-protocol": (
            table,
            {k: v for k, v in base.items() if k != "s3.commit_protocol"},
            UnsafeStorageError,
        ),
        "conflicting-protocols": (
            table,
            {**base, "aws_s3_locking_provider": "dynamodb"},
            StorageConfigurationError,
        ),
        "bad-endpoint-url": (
            table,
            {**base, "s3.endpoint": "not a url"},
            StorageConfigurationError,
        ),
        "missing-dynamodb-table": (
            table,
            {
                **base,
                "s3.commit_protocol": "dynamodb",
                "s3.dynamodb.table_name": f"missing-{uuid.uuid4().hex[:8]}",
                "s3.dynamodb.create_table": "false",
            },
            StorageConfigurationError,
        ),
        "dynamodb-refused": (
            table,
            {
                **base,
                "s3.commit_protocol": "dynamodb",
                "s3.dynamodb.endpoint": f"http://127.0.0.1:{_closed_port()}",
                "s3.max_attempts": "1",
            },
            StorageError,
        ),
        "credentials-in-url": (
            f"s3://{AWS_KEY_ID}:{AWS_SECRET}@{BUCKET}/{_name()}",
            base,
            StorageConfigurationError,
        ),
        "signature-in-url": (
            f"s3://{BUCKET}/{_name()}?X-Amz-Security-Token={AWS_TOKEN}",
            base,
            StorageConfigurationError,
        ),
    }


S3_FAILURES = list(_s3_failures("http://127.0.0.1:1"))


@pytest.mark.parametrize("case", S3_FAILURES)
def test_s3_failures_leak_nothing(
    case: str,
    moto_server: harness.ServerProcess,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri, options, expected = _s3_failures(moto_server.endpoint)[case]
    _contains_secret(options, AWS_KEY_ID, AWS_SECRET, AWS_TOKEN)
    error = _failure(uri, options, expected, Witness(), caplog, capsys)
    message = str(error)
    if case in ("unknown-option", "colon-for-equals"):
        assert "s3.secret_ac" in message  # the option is named (its value is not)
    if case == "credentials-in-url":
        assert "s3://***@" in message
    if case == "missing-dynamodb-table":
        assert "s3.dynamodb.create_table" in message


@pytest.fixture(scope="module")
def strict_moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A moto server that checks signatures; yields its endpoint and a valid access key id.

    moto authenticates every request after the first ``INITIAL_NO_AUTH_ACTION_COUNT``; the two
    free ones create an IAM user and its access key.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INITIAL_NO_AUTH_ACTION_COUNT", "2")
        try:
            server = harness.start_moto(Path(tmp_path_factory.getbasetemp()) / "strict-moto")
        except harness.ServerStartError as exc:
            if REQUIRE_SERVERS:
                pytest.fail(str(exc))
            pytest.skip(str(exc))
    try:
        iam = boto3.client(
            "iam",
            endpoint_url=server.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        iam.create_user(UserName="deltalog")
        key_id = iam.create_access_key(UserName="deltalog")["AccessKey"]["AccessKeyId"]
        yield server.endpoint, key_id
    finally:
        server.stop()


@pytest.mark.parametrize("protocol", ["conditional-put", "dynamodb"])
@pytest.mark.parametrize("case", ["unknown-key-id", "bad-signature"])
def test_s3_refused_credentials_leak_nothing(
    case: str,
    protocol: str,
    strict_moto: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    endpoint, real_key_id = strict_moto
    options = _s3_canary_options(endpoint, protocol)
    if case == "bad-signature":
        options["s3.access_key_id"] = real_key_id  # known to the server, wrong secret
        del options["s3.session_token"]
    _contains_secret(options, AWS_SECRET)
    error = _failure(
        f"s3://{BUCKET}/{_name()}",
        options,
        StorageError,
        Witness(),
        caplog,
        capsys,
        cause=StoreAccessDeniedError,
    )
    assert "access denied" in str(error)


# =========================================================================== GCS


class _TokenEndpoint:
    """A local OAuth token endpoint: ``/token`` grants :data:`GCS_ACCESS_TOKEN`, ``/deny``
    refuses the grant."""

    def __init__(self) -> None:
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests += 1
                if self.path == "/token":
                    status = 200
                    body = {"access_token": GCS_ACCESS_TOKEN, "expires_in": 3600}
                    body["token_type"] = "Bearer"
                else:
                    status, body = 400, {"error": "invalid_grant", "error_description": "no"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def token_endpoint() -> Iterator[_TokenEndpoint]:
    endpoint = _TokenEndpoint()
    yield endpoint
    endpoint.close()


@pytest.fixture(scope="module")
def private_key_pem() -> str:
    """A real RSA key (google-auth parses it to sign the token request)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _pem_secrets(pem: str) -> list[str]:
    """The key's base64 lines: any one of them seen anywhere is a leak."""
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


def _service_account(tmp_path: Path, pem: str, token_uri: str) -> str:
    path = tmp_path / "service-account.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "deltalog",
                "private_key_id": "0123456789abcdef",
                "private_key": pem,
                "client_email": "writer@deltalog.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": token_uri,
            }
        )
    )
    return str(path)


def test_gcs_table_lifecycle_with_a_service_account_leaks_nothing(
    gcs_server: harness.ServerProcess,
    token_endpoint: _TokenEndpoint,
    private_key_pem: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key_file = _service_account(tmp_path, private_key_pem, token_endpoint.url("/token"))
    assert private_key_pem.splitlines()[1] in Path(key_file).read_text()
    options = {"gcs.endpoint": gcs_server.endpoint, "gcs.credentials_file": key_file}
    before = token_endpoint.requests
    witness = Witness(_pem_secrets(private_key_pem))
    _lifecycle(f"gs://{BUCKET}/{_name()}", options, witness, caplog, capsys)
    assert token_endpoint.requests > before  # the key was used: a token was fetched


def _gcs_failures(
    endpoint: str, tokens: _TokenEndpoint, pem: str, tmp_path: Path
) -> dict[str, tuple[str, dict[str, str], type[BaseException]]]:
    lines = _pem_secrets(pem)
    files: dict[str, str] = {}
    for name, token_uri in (
        ("good", tokens.url("/token")),
        ("denied", tokens.url("/deny")),
        ("refused", f"http://127.0.0.1:{_closed_port()}/token"),
    ):
        (tmp_path / name).mkdir()
        files[name] = _service_account(tmp_path / name, pem, token_uri)
    bad_pem = tmp_path / "bad-key.json"
    bad_pem.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "p",
                "private_key_id": "k",
                "private_key": f"-----BEGIN PRIVATE KEY-----\n{MARK}{lines[2]}\n"
                "-----END PRIVATE KEY-----\n",
                "client_email": "a@b.c",
                "token_uri": tokens.url("/token"),
            }
        )
    )
    pasted = json.dumps({"type": "service_account", "private_key": f"{MARK}-{lines[3]}"})
    base = {"gcs.endpoint": endpoint, "gcs.max_attempts": "1"}
    table = f"gs://{BUCKET}/{_name()}"
    return {
        "token-denied": (
            table,
            {**base, "gcs.credentials_file": files["denied"]},
            StoreAccessDeniedError,
        ),
        "token-endpoint-refused": (
            table,
            {**base, "gcs.credentials_file": files["refused"]},
            StoreUnavailableError,
        ),
        "key-json-pasted-as-path": (
            table,
            {**base, "gcs.credentials_file": pasted},
            StoreConfigurationError,
        ),
        "not-a-key": (
            table,
            {**base, "gcs.credentials_file": str(bad_pem)},
            StoreConfigurationError,
        ),
        "missing-bucket": (
            f"gs://no-such-bucket-{uuid.uuid4().hex[:8]}/t",
            {**base, "gcs.credentials_file": files["good"]},
            LogFileNotFoundError,
        ),
        "connection-refused": (
            table,
            {
                **base,
                "gcs.credentials_file": files["good"],
                "gcs.endpoint": f"http://127.0.0.1:{_closed_port()}",
            },
            StoreUnavailableError,
        ),
        "unknown-option": (table, {**base, "gcs.private_key": pasted}, StoreConfigurationError),
        "bad-bool": (
            table,
            {**base, "gcs.anonymous": "maybe", "google_service_account": pasted},
            StoreConfigurationError,
        ),
        "credentials-in-url": (
            f"gs://user:{MARK}pass@{BUCKET}/t",
            base,
            StoreConfigurationError,
        ),
    }


GCS_FAILURES = [
    "token-denied",
    "token-endpoint-refused",
    "key-json-pasted-as-path",
    "not-a-key",
    "missing-bucket",
    "connection-refused",
    "unknown-option",
    "bad-bool",
    "credentials-in-url",
]


def _carries(uri: str, options: dict[str, str], secrets: Iterable[str]) -> bool:
    """Whether the URL, the options or a key file they name holds one of ``secrets``."""
    texts = [uri, json.dumps(options)]
    texts += [Path(v).read_text() for v in options.values() if v.endswith(".json")]
    return any(secret in text for text in texts for secret in secrets)


@pytest.mark.parametrize("case", GCS_FAILURES)
def test_gcs_failures_leak_nothing(
    case: str,
    gcs_server: harness.ServerProcess,
    token_endpoint: _TokenEndpoint,
    private_key_pem: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    failures = _gcs_failures(gcs_server.endpoint, token_endpoint, private_key_pem, tmp_path)
    assert sorted(failures) == sorted(GCS_FAILURES)
    uri, options, cause = failures[case]
    lines = _pem_secrets(private_key_pem)
    assert _carries(uri, options, [MARK, *lines])
    expected = (
        StorageConfigurationError if issubclass(cause, StoreConfigurationError) else StorageError
    )
    error = _failure(uri, options, expected, Witness(lines), caplog, capsys, cause=cause)
    if case == "unknown-option":
        assert "gcs.private_key" in str(error)
    if case in ("key-json-pasted-as-path", "not-a-key"):
        assert "gcs.credentials_file" in str(error)


# =========================================================================== Azure


def _azure_sas() -> str:
    """A valid account SAS for Azurite's account (its signature is the secret)."""
    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

    return generate_account_sas(
        EMULATOR_ACCOUNT,
        EMULATOR_KEY,
        ResourceTypes(service=True, container=True, object=True),
        AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True, create=True),
        expiry=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1),
    )


def _sas_signature(sas: str) -> str:
    return urllib.parse.parse_qs(sas)["sig"][0]


#: Azurite's key is public, but it is used as a credential here, so it must not show either.
AZURE_REAL_SECRETS = (EMULATOR_KEY, EMULATOR_KEY[:24])


@pytest.mark.parametrize("credential", ["account-key", "connection-string", "sas"])
def test_azure_table_lifecycle_leaks_nothing(
    credential: str,
    azurite_server: harness.ServerProcess,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blob_endpoint = f"{azurite_server.endpoint}/{EMULATOR_ACCOUNT}"
    secrets: list[str] = list(AZURE_REAL_SECRETS)
    options: dict[str, str]
    if credential == "account-key":
        options = {
            "azure.endpoint": blob_endpoint,
            "azure.account_name": EMULATOR_ACCOUNT,
            "azure.account_key": EMULATOR_KEY,
        }
    elif credential == "connection-string":
        options = {
            "azure.connection_string": (
                f"DefaultEndpointsProtocol=http;AccountName={EMULATOR_ACCOUNT};"
                f"AccountKey={EMULATOR_KEY};BlobEndpoint={blob_endpoint};"
            )
        }
    else:
        sas = _azure_sas()
        signature = _sas_signature(sas)
        secrets += [signature, signature[:16]]  # the SDK re-encodes it in places
        options = {
            "azure.endpoint": blob_endpoint,
            "azure.account_name": EMULATOR_ACCOUNT,
            "azure.sas_token": sas,
        }
    _contains_secret(options, secrets[-1] if credential == "sas" else EMULATOR_KEY)
    _lifecycle(f"az://{BUCKET}/{_name()}", options, Witness(secrets), caplog, capsys)
    # azure-core's HTTP logging policy logs every request at INFO (redacted): judged above.
    assert any(r.name.startswith("azure.") and r.levelno >= logging.INFO for r in caplog.records)


def _azure_failures(endpoint: str) -> dict[str, tuple[str, dict[str, str], type[BaseException]]]:
    blob_endpoint = f"{endpoint}/{EMULATOR_ACCOUNT}"
    keyed = {
        "azure.endpoint": blob_endpoint,
        "azure.account_name": EMULATOR_ACCOUNT,
        "azure.account_key": AZURE_KEY,
    }
    sas = {
        "azure.endpoint": blob_endpoint,
        "azure.account_name": EMULATOR_ACCOUNT,
        "azure.sas_token": AZURE_SAS,
    }
    table = f"az://{BUCKET}/{_name()}"
    refused = f"http://127.0.0.1:{_closed_port()}/{EMULATOR_ACCOUNT}"
    return {
        "wrong-key": (table, keyed, StoreAccessDeniedError),
        "forged-sas": (table, sas, StoreAccessDeniedError),
        "sas-in-endpoint-url": (
            table,
            {**keyed, "azure.endpoint": f"{blob_endpoint}?{AZURE_SAS}"},
            StoreAccessDeniedError,
        ),
        "key-not-base64": (
            table,
            {**keyed, "azure.account_key": f"{MARK}-not-base64!"},
            StoreAccessDeniedError,
        ),
        "connection-string-wrong-key": (
            table,
            {
                "azure.connection_string": (
                    f"DefaultEndpointsProtocol=http;AccountName={EMULATOR_ACCOUNT};"
                    f"AccountKey={AZURE_KEY};BlobEndpoint={blob_endpoint};"
                )
            },
            StoreAccessDeniedError,
        ),
        "malformed-connection-string": (
            table,
            {"azure.connection_string": f"garbage;AccountKey={AZURE_KEY}"},
            StoreConfigurationError,
        ),
        "missing-container": (
            f"az://no-such-container-{uuid.uuid4().hex[:8]}/t",
            {**keyed, "azure.account_key": EMULATOR_KEY},
            LogFileNotFoundError,
        ),
        "connection-refused-key": (
            table,
            {**keyed, "azure.endpoint": refused, "azure.max_attempts": "1"},
            StoreUnavailableError,
        ),
        "connection-refused-sas": (
            table,
            {**sas, "azure.endpoint": refused, "azure.max_attempts": "1"},
            StoreUnavailableError,
        ),
        "unknown-option": (
            table,
            {**keyed, "azure.accountkey": AZURE_KEY},
            StoreConfigurationError,
        ),
        "bad-int": (table, {**keyed, "azure.max_attempts": "-1"}, StoreConfigurationError),
        "credentials-in-url": (
            f"abfss://{BUCKET}:{AZURE_KEY}@{EMULATOR_ACCOUNT}.dfs.core.windows.net/t",
            keyed,
            StoreConfigurationError,
        ),
    }


AZURE_FAILURES = list(_azure_failures("http://127.0.0.1:1"))


@pytest.mark.parametrize("case", AZURE_FAILURES)
def test_azure_failures_leak_nothing(
    case: str,
    azurite_server: harness.ServerProcess,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri, options, cause = _azure_failures(azurite_server.endpoint)[case]
    assert _carries(uri, options, [MARK, EMULATOR_KEY])
    expected = (
        StorageConfigurationError if issubclass(cause, StoreConfigurationError) else StorageError
    )
    error = _failure(
        uri, options, expected, Witness(AZURE_REAL_SECRETS), caplog, capsys, cause=cause
    )
    if case == "unknown-option":
        assert "azure.accountkey" in str(error)


# =========================================================================== CLI


def test_cli_malformed_option_pair_leaks_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    pair = f"s3.secret_access_key:{AWS_SECRET}"  # ':' typed for '='
    assert cli_main(["describe", f"s3://{BUCKET}/t", "-o", pair]) == 2
    captured = capsys.readouterr()
    assert "KEY=VALUE" in captured.err
    Witness().text("cli stderr", captured.err + captured.out)


def test_cli_refused_credentials_leak_nothing(
    strict_moto: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    endpoint, _ = strict_moto
    options = _s3_canary_options(endpoint)
    capture_logs(caplog)
    witness = Witness()
    for command in ("describe", "files", "history", "checkpoint"):
        assert cli_main([command, f"s3://{BUCKET}/t", *_cli_args(options)]) == 2
        captured = capsys.readouterr()
        assert "access denied" in captured.err
        witness.text(f"cli {command}", captured.out + captured.err)
    witness.logs(caplog)


# =========================================================================== the helpers


def test_secret_option_names() -> None:
    for key in (
        "s3.secret_access_key",
        "aws_secret_access_key",
        "s3.session_token",
        "aws_session_token",
        "s3.access_key_id",
        "azure.account_key",
        "azure_storage_access_key",
        "azure.sas_token",
        "azure.connection_string",
        "google_service_account_key",
        "gcs.credentials_file",
    ):
        assert is_secret_option(key), key
    for key in ("s3.endpoint", "s3.max_attempts", "s3.commit_protocol", "gcs.anonymous"):
        assert not is_secret_option(key), key
    assert safe_option_name("s3.nope") == "s3.nope"
    assert MARK not in safe_option_name(f"s3.secret_access_key:{MARK}")
    assert safe_option_name(f"s3.secret_access_key:{MARK}").startswith("s3.secret_access_key")


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        (f"s3://AKIA:{AWS_SECRET}@b/t", "s3://***@b/t"),
        (f"az://c:{MARK}@acct/t", "az://***@acct/t"),
        (f"s3://b/t?X-Amz-Signature={MARK}&x=1", "s3://b/t?X-Amz-Signature=***&x=1"),
        (f"https://a.blob.core.windows.net/?{AZURE_SAS}", None),
    ],
)
def test_urls_with_credentials_are_detected_and_redacted(uri: str, shown: str | None) -> None:
    assert has_credentials(uri)
    redacted = redact_uri(uri)
    Witness().text("redacted", redacted)
    if shown is not None:
        assert redacted == shown


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/table",
        "abfss://container@account.dfs.core.windows.net/table",
        "s3://bucket/odd:name@x/table",
        "/tmp/a:b@c",
        "s3://bucket/t?versionId=3",
    ],
)
def test_urls_without_credentials_are_kept(uri: str) -> None:
    assert not has_credentials(uri)
    assert redact_uri(uri) == uri


def test_credentials_in_the_url_are_refused_before_any_request() -> None:
    uri = f"s3://{AWS_KEY_ID}:{AWS_SECRET}@{BUCKET}/t"
    with pytest.raises(StoreConfigurationError) as info:
        open_store(uri, {"s3.commit_protocol": "conditional-put"})
    assert "storage options" in str(info.value)
    Witness().exception("open_store", info.value)
    assert not isinstance(info.value, UnsafeStoreConfigurationError)


def test_base64_canary_is_valid() -> None:
    """The Azure canary key must decode, or the SDK fails before signing anything."""
    assert base64.b64decode(AZURE_KEY, validate=True)
