"""deltalog.spark.session: what a job needs from classic and Spark Connect sessions (no JVM)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")
from deltalog.spark.session import default_parallelism, is_connect, master


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class _Context:
    master = "spark://h:7077"
    defaultParallelism = 6


class _Classic:
    sparkContext = _Context()


def _connect(values: dict[str, str]) -> Any:
    """A stand-in for a Connect session: no sparkContext, its class in pyspark.sql.connect."""
    cls = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})
    session = cls()
    session.conf = _Conf(values)
    return session


def test_classic_sessions_ask_the_context() -> None:
    assert not is_connect(_Classic())
    assert master(_Classic()) == "spark://h:7077"
    assert default_parallelism(_Classic()) == 6


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        ({"spark.default.parallelism": "3", "spark.master": "local[8]"}, 3),
        ({"spark.master": "local[4]"}, 4),
        ({"spark.master": "local[4,2]"}, 4),
        ({"spark.master": "local[*]", "spark.sql.shuffle.partitions": "5"}, 5),
        ({"spark.master": "spark://h:7077"}, 200),
    ],
)
def test_connect_sessions_read_the_conf(conf: dict[str, str], expected: int) -> None:
    session = _connect(conf)
    assert is_connect(session)
    assert master(session) == conf["spark.master"]
    assert default_parallelism(session) == expected


def test_an_unreadable_master_is_empty() -> None:
    class Refusing(_Conf):
        def get(self, key: str, default: Any = None) -> Any:
            raise RuntimeError("refused")

    session = _connect({})
    session.conf = Refusing({})
    assert master(session) == ""
