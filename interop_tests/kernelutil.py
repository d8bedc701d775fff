"""Delta Kernel (Java) as a third engine: its jars, the compiled probe, and deltalog's view.

``kernel/KernelProbe.java`` reads a table through Kernel's default engine and prints, per
snapshot asked for, the version, protocol, schema, partition columns, live files and per-column
checksums of the rows it read (deletion vectors applied); it can also append. The jars
(``io.delta:delta-kernel-api``/``-defaults`` :data:`KERNEL_VERSION` and their dependencies,
Hadoop's shaded client among them) are resolved by Maven from ``kernel/pom.xml`` into
``~/.cache/deltalog-kernel/<version>`` once (a marker file records a complete copy), and the
probe is compiled with ``javac`` once per test session. ``DELTALOG_KERNEL_JARS`` (a directory
of jars) overrides the download. ``kernel/KernelFiles.java`` lists live files on Kernel
:data:`OLD_KERNEL_VERSION`, one of the releases that need sidecar names to start with a
version (fixture ``old_kernel``).

Like delta-spark's jars (:mod:`sparkutil`), missing Java, Maven or jars skip the tests, unless
``DELTALOG_REQUIRE_SERVERS=1`` or ``DELTALOG_REQUIRE_DELTA_SPARK=1`` (both set by
``scripts/test.sh``, so in CI) make them fail.

:func:`deltalog_view` computes the same document from deltalog, so a test compares the two.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import MAX_PREC, Context, Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest

from deltalog import DeltaTable

KERNEL_VERSION = "4.4.0"
HADOOP_VERSION = "3.4.2"  # the hadoop-client-runtime delta-kernel-defaults 4.4.0 depends on
#: A release that parses a version out of V2-checkpoint sidecar names (delta-io/delta#4807),
#: and the Hadoop client it depends on.
OLD_KERNEL_VERSION, OLD_HADOOP_VERSION = "4.0.0", "3.4.0"
JARS_ENV = "DELTALOG_KERNEL_JARS"
SOURCE_DIR = Path(__file__).resolve().parent / "kernel"
POM = SOURCE_DIR / "pom.xml"
SOURCE = SOURCE_DIR / "KernelProbe.java"
#: Lists live files with the API Kernel 3.2-4.4 share (for :data:`OLD_KERNEL_VERSION`).
FILES_SOURCE = SOURCE_DIR / "KernelFiles.java"
#: JVM options for short runs: one thread of compilation, no tiered C2, serial GC.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss4m")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _required() -> bool:
    return "1" in (
        os.environ.get("DELTALOG_REQUIRE_SERVERS"),
        os.environ.get("DELTALOG_REQUIRE_DELTA_SPARK"),
    )


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"Delta Kernel unavailable: {reason} (jar tests must run in CI)")
    pytest.skip(f"Delta Kernel unavailable: {reason}")


def _resolve_jars(version: str = KERNEL_VERSION, hadoop: str = HADOOP_VERSION) -> list[Path]:
    """Kernel's runtime classpath, from ``DELTALOG_KERNEL_JARS`` or Maven (cached)."""
    given = os.environ.get(JARS_ENV, "").strip()
    if given and version == KERNEL_VERSION:
        jars = sorted(Path(given).glob("*.jar"))
        if not jars:
            _unavailable(f"{JARS_ENV}={given} holds no jar")
        return jars
    cache = Path.home() / ".cache" / "deltalog-kernel" / version
    marker = cache / ".complete"
    stamp = hashlib.sha256(POM.read_bytes() + f"{version} {hadoop}".encode()).hexdigest()
    if marker.is_file() and marker.read_text() == stamp:
        return sorted(cache.glob("*.jar"))
    mvn = shutil.which("mvn")
    if mvn is None:
        _unavailable("mvn is not on PATH")
    assert mvn is not None
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    done = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={cache}",
            "-DincludeScope=runtime",
            f"-Dkernel.version={version}",
            f"-Dhadoop.version={hadoop}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        _unavailable(f"mvn could not resolve the jars: {(done.stdout + done.stderr)[-2000:]}")
    marker.write_text(stamp)
    return sorted(cache.glob("*.jar"))


@dataclass(frozen=True)
class KernelProbe:
    """The compiled probe and its classpath; runs one JVM per call."""

    java: str
    classpath: str

    def run(self, *args: str, timeout: float = 300) -> Any:
        """Run ``KernelProbe <args>``; its JSON output.

        Raises:
            AssertionError: The JVM failed (its stderr's tail is in the message).
        """
        done = subprocess.run(
            [self.java, *JVM_OPTIONS, "-cp", self.classpath, "KernelProbe", *args],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"KernelProbe {' '.join(args)} failed ({done.returncode}):\n"
                + done.stderr.decode(errors="replace")[-4000:]
            )
        return orjson.loads(done.stdout)

    def read(self, root: str | Path, *specs: str) -> list[dict[str, Any]]:
        """Kernel's view of each snapshot: ``latest``, ``v:<version>``, ``ts:<epoch ms>``."""
        out: list[dict[str, Any]] = self.run("read", str(root), *(specs or ("latest",)))
        return out

    def append(self, root: str | Path, batches: Sequence[dict[str, Any]], work: Path) -> int:
        """Append ``batches`` (``{"partition": {...}, "rows": [...]}``) in one Kernel commit."""
        request = work / "kernel-append.json"
        request.write_bytes(orjson.dumps({"batches": list(batches)}))
        version: int = self.run("append", str(root), str(request))["version"]
        return version


def _compile(source: Path, jars: list[Path], classes: Path) -> str:
    """Compile ``source`` against ``jars`` into ``classes``; the classpath to run it with."""
    javac = shutil.which("javac")
    if javac is None:
        _unavailable("javac is not on PATH")
    assert javac is not None
    classpath = os.pathsep.join(str(j) for j in jars)
    done = subprocess.run(
        [javac, "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", classpath, str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"javac {source.name} failed:\n{done.stdout}{done.stderr}")
    return os.pathsep.join([str(classes), classpath])


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        _unavailable("java is not on PATH")
    assert java is not None
    return java


@pytest.fixture(scope="session")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelProbe]:
    """The Kernel probe, resolved and compiled once per session (see the module docstring)."""
    java = _java()
    classes = tmp_path_factory.mktemp("kernel-probe")
    yield KernelProbe(java, _compile(SOURCE, _resolve_jars(), classes))


@dataclass(frozen=True)
class OldKernelFiles:
    """``KernelFiles`` on :data:`OLD_KERNEL_VERSION`."""

    java: str
    classpath: str

    def files(self, root: str | Path) -> dict[str, Any]:
        """``{"version", "files"}`` of the latest snapshot, or ``{"error"}``."""
        done = subprocess.run(
            [self.java, *JVM_OPTIONS, "-cp", self.classpath, "KernelFiles", str(root)],
            capture_output=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(done.stderr.decode(errors="replace")[-4000:])
        out: dict[str, Any] = orjson.loads(done.stdout)
        return out


@pytest.fixture(scope="session")
def old_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OldKernelFiles]:
    """Kernel :data:`OLD_KERNEL_VERSION` listing files, resolved and compiled once."""
    java = _java()
    jars = _resolve_jars(OLD_KERNEL_VERSION, OLD_HADOOP_VERSION)
    classes = tmp_path_factory.mktemp("kernel-files")
    yield OldKernelFiles(java, _compile(FILES_SOURCE, jars, classes))


def _bits(value: float) -> str:
    return str(struct.unpack(">q", struct.pack(">d", value))[0])


def canon(value: Any, t: pa.DataType) -> str:
    """A value's canonical text, as ``KernelProbe.canon`` writes it."""
    if value is None:
        return "null"
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    if pa.types.is_integer(t):
        return str(int(value))
    if pa.types.is_floating(t):
        return _bits(float(value))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return str(value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return bytes(value).hex()
    if pa.types.is_date32(t):
        assert isinstance(value, date)
        return str((value - date(1970, 1, 1)).days)
    if pa.types.is_timestamp(t):
        assert isinstance(value, datetime)
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return str((aware - _EPOCH) // timedelta(microseconds=1))
    if pa.types.is_decimal(t):
        assert isinstance(value, Decimal)
        return str(int(value.scaleb(t.scale, Context(prec=MAX_PREC))))  # never rounded
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return "{" + ",".join(canon(value.get(f.name), f.type) for f in fields) + "}"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "[" + ",".join(canon(v, t.value_type) for v in value) + "]"
    if pa.types.is_map(t):
        pairs = [f"{canon(k, t.key_type)}:{canon(v, t.item_type)}" for k, v in value]
        return "{" + ",".join(pairs) + "}"
    raise TypeError(f"no canonical text for {t}")


def column_checksums(data: pa.Table) -> dict[str, dict[str, int]]:
    """Per column: non-null count, null count and the sum of the CRC-32s of canonical texts."""
    out = {}
    for name, column in zip(data.column_names, data.columns, strict=True):
        values = column.to_pylist()
        crc = sum(zlib.crc32(canon(v, column.type).encode()) for v in values if v is not None)
        out[name] = {"count": len(values) - column.null_count, "nulls": column.null_count}
        out[name]["crc"] = crc
    return out


def deltalog_view(table: DeltaTable) -> dict[str, Any]:
    """deltalog's view of a snapshot, in the shape of one ``KernelProbe read`` result."""
    protocol = table.protocol()
    metadata = table.metadata()
    files = []
    for f in table.files().to_pylist():
        files.append(
            {
                "path": f["path"],
                "size": f["size"],
                "partitionValues": dict(sorted(dict(f["partition_values"] or []).items())),
                "deletionVector": f["deletion_vector"] is not None,
            }
        )
    data = table.to_pyarrow_table()
    return {
        "version": table.version(),
        "protocol": {
            "minReaderVersion": protocol.min_reader_version,
            "minWriterVersion": protocol.min_writer_version,
            "readerFeatures": sorted(protocol.reader_features or []),
            "writerFeatures": sorted(protocol.writer_features or []),
        },
        "schema": orjson.loads(metadata.schema_string or "{}"),
        "partitionColumns": list(metadata.partition_columns),
        "files": sorted(files, key=lambda f: str(f["path"])),
        "rows": data.num_rows,
        "columns": column_checksums(data),
    }


def kernel_view(result: dict[str, Any]) -> dict[str, Any]:
    """One Kernel result in :func:`deltalog_view`'s shape (files sorted, no spec)."""
    if "error" in result:
        raise AssertionError(f"Kernel refused {result['spec']}: {result['error']}")
    files = [{k: v for k, v in f.items() if k != "location"} for f in result["files"]]
    view = {k: v for k, v in result.items() if k != "spec"}
    view["files"] = sorted(files, key=lambda f: str(f["path"]))
    return view


def assert_same(kernel_result: dict[str, Any], table: DeltaTable) -> None:
    """Kernel and deltalog agree on version, protocol, schema, files and rows."""
    got, want = kernel_view(kernel_result), deltalog_view(table)
    for key in ("version", "protocol", "partitionColumns", "schema", "files", "rows", "columns"):
        assert got[key] == want[key], f"{kernel_result['spec']}: {key} differs"
