"""Delta Kernel (Java) as an engine: its jars, the compiled driver, and the command.

``java/CompatKernelProbe.java`` (package data) reads every table version of a request in one
JVM. Its classpath - ``io.delta:delta-kernel-api``/``-defaults`` :data:`KERNEL_VERSION` and
their dependencies, Hadoop's client among them - is resolved by Maven from ``java/pom.xml``
into ``~/.cache/deltalog-kernel/<version>`` once (a marker file records a complete copy; the
interop tests share the cache), or taken from ``DELTALOG_KERNEL_JARS`` (a directory of jars).
The driver is compiled with ``javac`` once per source and jar set, into
``~/.cache/deltalog-kernel/classes-<hash>``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from deltalog.compat.engines import Engine

KERNEL_VERSION = "4.4.0"
HADOOP_VERSION = "3.4.2"  # the hadoop-client-runtime delta-kernel-defaults 4.4.0 depends on
JARS_ENV = "DELTALOG_KERNEL_JARS"
SOURCE_DIR = Path(__file__).resolve().parent / "java"
POM = SOURCE_DIR / "pom.xml"
SOURCE = SOURCE_DIR / "CompatKernelProbe.java"
#: JVM options for short runs: one thread of compilation, no tiered C2, serial GC.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss4m")
HOW_TO_GET = (
    "install a JDK (java and javac) and Maven (mvn), or set DELTALOG_KERNEL_JARS to a "
    "directory holding Delta Kernel's jars"
)


class KernelError(RuntimeError):
    """The jars cannot be resolved or the driver does not compile."""


def _cache() -> Path:
    return Path.home() / ".cache" / "deltalog-kernel"


def _stamp() -> str:
    return hashlib.sha256(
        POM.read_bytes() + f"{KERNEL_VERSION} {HADOOP_VERSION}".encode()
    ).hexdigest()


def _cached_jars() -> list[Path] | None:
    given = os.environ.get(JARS_ENV, "").strip()
    if given:
        return sorted(Path(given).glob("*.jar"))
    cache = _cache() / KERNEL_VERSION
    marker = cache / ".complete"
    if marker.is_file() and marker.read_text() == _stamp():
        return sorted(cache.glob("*.jar"))
    return None


def resolve_jars() -> list[Path]:
    """Kernel's runtime classpath (see the module docstring).

    Raises:
        KernelError: No jars and no way to get them.
    """
    jars = _cached_jars()
    if jars is not None:
        if not jars:
            raise KernelError(f"{JARS_ENV} names a directory without jars")
        return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KernelError(f"mvn is not on PATH: {HOW_TO_GET}")
    cache = _cache() / KERNEL_VERSION
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
            f"-Dkernel.version={KERNEL_VERSION}",
            f"-Dhadoop.version={HADOOP_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise KernelError(f"mvn could not resolve the jars: {(done.stdout + done.stderr)[-1500:]}")
    (cache / ".complete").write_text(_stamp())
    return sorted(cache.glob("*.jar"))


def compile_driver(jars: list[Path]) -> str:
    """Compile the driver (once per source and jars); the classpath to run it with.

    Raises:
        KernelError: ``javac`` is missing or fails.
    """
    classpath = os.pathsep.join(str(j) for j in jars)
    key = hashlib.sha256(SOURCE.read_bytes() + classpath.encode()).hexdigest()[:16]
    classes = _cache() / f"classes-{key}"
    if not (classes / "CompatKernelProbe.class").is_file():
        javac = shutil.which("javac")
        if javac is None:
            raise KernelError(f"javac is not on PATH: {HOW_TO_GET}")
        work = classes.with_name(classes.name + f".tmp{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        done = subprocess.run(
            [
                javac,
                "-nowarn",
                "-encoding",
                "UTF-8",
                "-d",
                str(work),
                "-cp",
                classpath,
                str(SOURCE),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise KernelError(f"javac failed: {(done.stdout + done.stderr)[-1500:]}")
        shutil.rmtree(classes, ignore_errors=True)
        work.rename(classes)
    return os.pathsep.join([str(classes), classpath])


class KernelEngine(Engine):
    """Delta Kernel (Java), through ``CompatKernelProbe`` in one JVM per run."""

    name = "kernel"
    how_to_get = HOW_TO_GET

    def unavailable(self) -> str | None:
        """Why Kernel cannot run here: no Java, or no jars and no Maven to get them."""
        for tool in ("java", "javac"):
            if shutil.which(tool) is None:
                return f"{tool} is not on PATH: {HOW_TO_GET}"
        if _cached_jars() is None and shutil.which("mvn") is None:
            return f"Delta Kernel's jars are not cached and mvn is not on PATH: {HOW_TO_GET}"
        return None

    def describe(self) -> str:
        """``kernel (Delta Kernel 4.4.0)``."""
        return f"kernel (Delta Kernel {KERNEL_VERSION})"

    def command(self, request: Path, output: Path) -> list[str]:
        """``java -cp ... CompatKernelProbe REQUEST OUTPUT`` (resolving and compiling first).

        Raises:
            KernelError: The jars or the driver cannot be had.
        """
        java = shutil.which("java") or "java"
        classpath = compile_driver(resolve_jars())
        return [
            java,
            *JVM_OPTIONS,
            "-cp",
            classpath,
            "CompatKernelProbe",
            str(request),
            str(output),
        ]
