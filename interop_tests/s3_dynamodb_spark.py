"""delta-spark with ``S3DynamoDBLogStore`` on the moto server, in a driver process of its own.

``io.delta:delta-storage-s3-dynamodb`` is not served by this workplace's Maven Central, so the
jar comes from ``<repo>/../shared/jars/`` (built from delta-io/delta's sources, one per
delta-spark line; its ``README.md`` says how): ``delta-storage-s3-dynamodb-<delta-spark
version>.jar``. A missing jar skips the tests, and fails them in CI (``CI=true``) or under
``DELTALOG_REQUIRE_DELTA_SPARK=1`` / ``DELTALOG_REQUIRE_SERVERS=1`` (``scripts/test.sh``).

The store's DynamoDB client (AWS SDK v1) has no endpoint option: it resolves ``us-east-1``'s
DynamoDB endpoint from SDK v1's region metadata, which a file named by the JVM property
``com.amazonaws.regions.RegionUtils.fileOverride`` replaces, and speaks HTTPS; so moto also
listens with TLS (``moto_tls_server``) and ``com.amazonaws.sdk.disableCertChecking`` accepts its
self-signed certificate. S3A goes to moto's plain HTTP port.

:class:`SparkDriver` runs ``drivers/spark_s3_dynamodb.py`` (one local[2] session for a whole
test) and talks to it in JSON lines over its stdin and stdout.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pyspark
import pytest
from sparkutil import delta_package, delta_spark_version, spark_line

ROOT = Path(__file__).resolve().parent.parent
SHARED_JARS = ROOT.parent / "shared" / "jars"
DRIVER = Path(__file__).resolve().parent / "drivers" / "spark_s3_dynamodb.py"
#: The SDK v1 DynamoDB client the module was built against (its README): hadoop-aws >= 3.4
#: brings SDK v2 only, so it is added on the Spark 4 line.
SDK_V1_DYNAMODB = "com.amazonaws:aws-java-sdk-dynamodb:1.12.262"
#: Lines the driver writes for us start with this (Spark and Ivy write to stdout too).
PREFIX = "@@ "
START_TIMEOUT = 900.0
STEP_TIMEOUT = 600.0

REGIONS_XML = """<?xml version="1.0" encoding="UTF-8"?>
<XmlRegionMetadata><Regions><Region>
  <Name>us-east-1</Name><Domain>amazonaws.com</Domain>
  <Endpoint><ServiceName>dynamodb</ServiceName><Http>false</Http><Https>true</Https>
    <Hostname>127.0.0.1:{port}</Hostname></Endpoint>
</Region></Regions></XmlRegionMetadata>
"""


def _required() -> bool:
    return (
        os.environ.get("CI", "").lower() == "true"
        or os.environ.get("DELTALOG_REQUIRE_DELTA_SPARK") == "1"
        or os.environ.get("DELTALOG_REQUIRE_SERVERS") == "1"
    )


def dynamodb_jar() -> Path:
    """The shared ``delta-storage-s3-dynamodb`` jar for the installed delta-spark.

    Skips the test when it is missing, or fails it where the jar is required (CI).
    """
    jar = SHARED_JARS / f"delta-storage-s3-dynamodb-{delta_spark_version()}.jar"
    if not jar.is_file():
        reason = (
            f"{jar} is missing: delta-storage-s3-dynamodb is not on this Maven Central; the "
            "repository expects it in ../shared/jars/ beside the clone"
        )
        if _required():
            pytest.fail(reason)
        pytest.skip(reason)
    return jar


def hadoop_version() -> str:
    """The Hadoop client version PySpark ships (hadoop-aws must match it)."""
    jars = Path(pyspark.__file__).parent / "jars"
    (api,) = jars.glob("hadoop-client-api-*.jar")
    return api.name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def packages() -> str:
    """``spark.jars.packages``: delta-spark, hadoop-aws and, on SDK v2 lines, SDK v1 DynamoDB."""
    found = [delta_package(), f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"]
    major, minor = (int(p) for p in hadoop_version().split(".")[:2])
    if (major, minor) >= (3, 4):  # hadoop-aws 3.3.x brings aws-java-sdk-bundle (SDK v1) itself
        found.append(SDK_V1_DYNAMODB)
    return ",".join(found)


def spark_conf(endpoint: str, tls_port: int, ddb_table: str, work: Path) -> dict[str, str]:
    """The Spark settings of a local session whose ``s3a://`` log store is S3DynamoDBLogStore."""
    regions = work / "regions.xml"
    regions.write_text(REGIONS_XML.format(port=tls_port))
    store = "spark.io.delta.storage.S3DynamoDBLogStore"
    credentials = "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
    java = (
        f"-Dcom.amazonaws.regions.RegionUtils.fileOverride={regions} "
        "-Dcom.amazonaws.sdk.disableCertChecking=true"
    )
    conf = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": java,
        "spark.jars": str(dynamodb_jar()),
        "spark.jars.packages": packages(),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore",
        f"{store}.ddb.tableName": ddb_table,
        f"{store}.ddb.region": "us-east-1",
        f"{store}.credentials.provider": credentials,
    }
    s3a = {
        "endpoint": endpoint,
        "endpoint.region": "us-east-1",
        "path.style.access": "true",
        "connection.ssl.enabled": "false",
        "access.key": "testing",
        "secret.key": "testing",
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "change.detection.mode": "none",
    }
    conf.update({f"spark.hadoop.fs.s3a.{k}": v for k, v in s3a.items()})
    return conf


class SparkDriver:
    """The driver process: :meth:`call` sends a command and returns its answer.

    Events the driver sends unasked (``{"event": ...}``) go to ``on_event``, from the reader
    thread, in order.
    """

    def __init__(self, conf: dict[str, str], work: Path, on_event: Any = None) -> None:
        conf_file = work / "spark-conf.json"
        conf_file.write_text(json.dumps(conf))
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "PYSPARK_PYTHON": sys.executable,
        }
        self.stderr_path = work / "spark-driver.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            [sys.executable, str(DRIVER), str(conf_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._on_event = on_event
        self._lock = threading.Lock()
        assert self.process.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.process.stdout,), name="spark-driver", daemon=True
        )
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            if not line.startswith(PREFIX):
                continue
            message = json.loads(line[len(PREFIX) :])
            if "event" in message:
                if self._on_event is not None:
                    self._on_event(message)
            else:
                self._answers.put(message)
        self._answers.put(None)  # the driver is gone
        if self._on_event is not None:
            self._on_event({"event": "exit"})

    def tail(self) -> str:
        """The end of the driver's stderr, for failure messages."""
        return self.stderr_path.read_text(errors="replace")[-6000:]

    def send(self, command: dict[str, Any]) -> None:
        """Send a command without waiting for an answer."""
        assert self.process.stdin is not None
        with self._lock:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()

    def answer(self, timeout: float = STEP_TIMEOUT) -> dict[str, Any]:
        """The next answer; fails the test with the driver's stderr if it died or errs."""
        try:
            message = self._answers.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"delta-spark driver did not answer in {timeout} s:\n{self.tail()}")
        if message is None:
            pytest.fail(f"delta-spark driver exited:\n{self.tail()}")
        if "error" in message:
            pytest.fail(f"delta-spark driver failed: {message['error']}\n{self.tail()}")
        return message

    def call(self, command: dict[str, Any], timeout: float = STEP_TIMEOUT) -> dict[str, Any]:
        """Send a command and wait for its answer."""
        self.send(command)
        return self.answer(timeout)

    def close(self) -> None:
        """Stop the session and the process."""
        if self.process.poll() is None:
            try:
                self.send({"op": "stop"})
                self.process.wait(timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=30)
        self._stderr.close()


def line_label() -> str:
    """``PySpark x + delta-spark y`` for messages."""
    return f"PySpark {spark_line()[0]} + delta-spark {delta_spark_version()}"
