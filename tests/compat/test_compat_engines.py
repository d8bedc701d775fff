"""How the JVM engines are found and set up, without starting a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltalog.compat import kernel, spark_engine
from deltalog.compat.engines import CommandEngine, run_engine
from deltalog.compat.registry import NAMES, builtin_engines


def test_delta_spark_jars_follow_the_pyspark_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise spark_engine.PackageNotFoundError(name)

    monkeypatch.setattr(spark_engine, "dist_version", missing)
    assert spark_engine.delta_coordinates("4.2.0") == "io.delta:delta-spark_2.13:4.4.0"
    assert spark_engine.delta_coordinates("3.5.3") == "io.delta:delta-spark_2.12:3.3.2"
    monkeypatch.setattr(spark_engine, "dist_version", lambda name: "3.3.1")
    assert spark_engine.delta_coordinates("3.5.3") == "io.delta:delta-spark_2.12:3.3.1"


def test_a_maven_mirror_becomes_spark_jars_repositories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / ".m2" / "settings.xml"
    settings.parent.mkdir()
    settings.write_text(
        "<settings><mirrors><mirror><id>corp</id><mirrorOf>*</mirrorOf>"
        "<url>https://maven.example/repo</url></mirror></mirrors></settings>"
    )
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    monkeypatch.delenv(spark_engine.JARS_ENV, raising=False)
    conf = spark_engine.spark_jar_conf()
    assert conf["spark.jars.repositories"] == "https://maven.example/repo"
    assert conf["spark.jars.packages"].startswith("io.delta:delta-spark_2.1")
    monkeypatch.setenv(spark_engine.JARS_ENV, "/x/a.jar,/x/b.jar")
    assert spark_engine.spark_jar_conf() == {"spark.jars": "/x/a.jar,/x/b.jar"}
    assert "names jar files that do not exist" in (spark_engine.SparkEngine().unavailable() or "")


def test_missing_java_tools_say_how_to_get_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel.shutil, "which", lambda tool: None)
    why = kernel.KernelEngine().unavailable()
    assert why is not None and why.startswith("java is not on PATH: install a JDK")
    monkeypatch.setattr(spark_engine.importlib.util, "find_spec", lambda name: None)
    assert "pip install pyspark delta-spark" in (spark_engine.SparkEngine().unavailable() or "")


def test_an_engine_that_cannot_be_set_up_is_a_named_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_jars() -> list[Path]:
        raise kernel.KernelError("mvn could not resolve the jars: offline")

    monkeypatch.setattr(kernel, "resolve_jars", no_jars)
    run = run_engine(kernel.KernelEngine(), [{"uri": "/t", "versions": [None]}])
    assert run.crash == "could not be set up: KernelError: mvn could not resolve the jars: offline"


def test_an_engine_that_cannot_start_or_writes_nothing_is_a_crash(tmp_path: Path) -> None:
    missing = run_engine(CommandEngine("x", [str(tmp_path / "nope")]), [])
    assert missing.crash is not None and missing.crash.startswith("could not start")
    silent = run_engine(CommandEngine("y", ["true"]), [])
    assert silent.crash is not None and silent.crash.startswith("no readable results")


def test_the_kernel_driver_ships_with_the_package() -> None:
    assert kernel.SOURCE.is_file() and kernel.POM.is_file()
    assert list(builtin_engines()) == list(NAMES)


def test_an_engine_can_observe_in_this_process(tmp_path: Path) -> None:
    # The seam SessionSparkEngine uses: run_here answers instead of a command's process.
    import pyarrow as pa

    import deltalog
    from deltalog.compat import compare
    from deltalog.compat.engines import Engine
    from deltalog.compat.observe import observe_deltalog
    from deltalog.compat.spark_session_engine import SessionSparkEngine

    class Here(Engine):
        name = "here"

        def __init__(self) -> None:
            self.asked: list[str] = []

        def run_here(self, tables, storage_options):  # type: ignore[no-untyped-def]
            self.asked.extend(t["uri"] for t in tables)
            return [
                {
                    "table": t["uri"],
                    "version": None,
                    "observation": observe_deltalog(t["uri"], None, {}),
                }
                for t in tables
            ]

    uri = str(tmp_path / "t")
    deltalog.write_table(uri, pa.table({"x": [1, 2]}))
    engine = Here()
    report = compare(uri, engines=["deltalog", engine])
    assert report.agree, report.render()
    assert engine.asked == [uri]
    boom = SessionSparkEngine(spark=None)  # no session: observe_all fails per table
    assert run_engine(boom, [{"uri": uri, "versions": [None]}]).results[0]["error"]


def test_the_session_engine_makes_its_session_active_in_its_own_thread() -> None:
    # compare() runs each engine in a worker thread; delta-spark looks up the active session
    # there (v2 checkpoints failed with DELTA_SPARK_SESSION_NOT_SET before).
    from deltalog.compat.spark_session_engine import SessionSparkEngine

    made_active: list[object] = []

    class JavaSessionClass:
        @staticmethod
        def setActiveSession(session: object) -> None:
            made_active.append(session)

    class FakeSession:
        _jvm = object()
        _jsparkSession = "the JVM session"

        @staticmethod
        def _get_j_spark_session_class(jvm: object) -> type[JavaSessionClass]:
            return JavaSessionClass

    assert SessionSparkEngine(FakeSession()).run_here([], {}) == []
    assert made_active == ["the JVM session"]
