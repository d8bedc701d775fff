"""Session fixtures for the object-store test servers, and fresh table locations on them.

Shared by ``tests/conftest.py`` and ``interop_tests/conftest.py`` (each imports the fixtures);
test modules import the helpers from here (``from servers.fixtures import cloud_location``).
A server that cannot start skips its tests with the reason, unless
``DELTALOG_REQUIRE_SERVERS=1`` (set by ``scripts/test.sh``), which makes it a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from servers import harness

REQUIRE_SERVERS = os.environ.get("DELTALOG_REQUIRE_SERVERS") == "1"
BUCKET = "deltalog-tests"
DYNAMO_TABLE = "delta_log_tests"


class CloudTable(NamedTuple):
    """A fresh table location on an object store: hand both to ``DeltaTable``."""

    backend: str
    uri: str
    options: dict[str, str]


# --------------------------------------------------------------------------- servers


def _start(starter: Callable[[Path], harness.ServerProcess], factory: Any) -> Any:
    try:
        return starter(Path(factory.getbasetemp()) / "server-logs")
    except harness.ServerStartError as exc:
        if REQUIRE_SERVERS:
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def _create_bucket(endpoint: str) -> None:
    import boto3

    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=BUCKET)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ServerProcess]:
    """moto (S3 + DynamoDB) with the test bucket created."""
    server = _start(harness.start_moto, tmp_path_factory)
    _create_bucket(server.endpoint)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def moto_tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ServerProcess]:
    """Another moto, also serving its one backend over HTTPS (``tls_port``), bucket created.

    For delta-spark's ``S3DynamoDBLogStore``, whose DynamoDB client speaks only HTTPS.
    """
    server = _start(lambda logs: harness.start_moto(logs, tls=True), tmp_path_factory)
    _create_bucket(server.endpoint)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ServerProcess]:
    """Our GCS test server with the test bucket created."""
    server = _start(harness.start_gcs, tmp_path_factory)
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(
        project="test",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": server.endpoint},
    )
    client.create_bucket(BUCKET)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ServerProcess]:
    """Azurite's Blob service with the test container created."""
    server = _start(harness.start_azurite, tmp_path_factory)
    from azure.storage.blob import BlobServiceClient

    from deltalog.logstores.azure import EMULATOR_KEY

    BlobServiceClient(
        f"{server.endpoint}/{harness.AZURITE_ACCOUNT}",
        credential={"account_name": harness.AZURITE_ACCOUNT, "account_key": EMULATOR_KEY},
    ).create_container(BUCKET)
    yield server
    server.stop()


# --------------------------------------------------------------------------- cloud locations


def s3_options(endpoint: str, protocol: str = "conditional-put") -> dict[str, str]:
    """Storage options for the moto server."""
    options = {
        "s3.endpoint": endpoint,
        "s3.region": "us-east-1",
        "s3.commit_protocol": protocol,
        **harness.AWS_KEYS,
    }
    if protocol == "dynamodb":
        options["s3.dynamodb.table_name"] = DYNAMO_TABLE
        options["s3.dynamodb.create_table"] = "true"
    return options


def gcs_options(endpoint: str) -> dict[str, str]:
    """Storage options for our GCS server."""
    return {"gcs.endpoint": endpoint, "gcs.anonymous": "true"}


def azure_options(endpoint: str) -> dict[str, str]:
    """Storage options for Azurite."""
    from deltalog.logstores.azure import EMULATOR_KEY

    return {
        "azure.endpoint": f"{endpoint}/{harness.AZURITE_ACCOUNT}",
        "azure.account_name": harness.AZURITE_ACCOUNT,
        "azure.account_key": EMULATOR_KEY,
    }


def cloud_location(request: pytest.FixtureRequest, backend: str) -> CloudTable:
    """A fresh, empty table location on ``backend`` (starting its server if needed)."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    if backend in ("s3", "s3_dynamodb"):
        server = request.getfixturevalue("moto_server")
        protocol = "dynamodb" if backend == "s3_dynamodb" else "conditional-put"
        return CloudTable(backend, f"s3://{BUCKET}/{name}", s3_options(server.endpoint, protocol))
    if backend == "gcs":
        server = request.getfixturevalue("gcs_server")
        return CloudTable(backend, f"gs://{BUCKET}/{name}", gcs_options(server.endpoint))
    if backend == "azure":
        server = request.getfixturevalue("azurite_server")
        return CloudTable(backend, f"az://{BUCKET}/{name}", azure_options(server.endpoint))
    raise ValueError(backend)


CLOUD_BACKENDS = ("s3", "s3_dynamodb", "gcs", "azure")


@pytest.fixture(params=CLOUD_BACKENDS)
def cloud_table(request: pytest.FixtureRequest) -> CloudTable:
    """A fresh table location on each object store."""
    return cloud_location(request, request.param)
