"""What deltalog asks of a Spark session, for classic sessions and Spark Connect clients alike.

A Spark Connect client (``SparkSession.builder.remote("sc://...")``, the classes in
``pyspark.sql.connect``) has no ``SparkContext``: no RDDs, broadcasts, ``addPyFile`` or JVM
handle. deltalog.spark needs only DataFrames, ``mapInArrow``, ``collect`` and ``spark.conf``,
which both kinds of session have; the few facts it reads from the context come from here, with
the Connect answer read from the session's configuration instead.
"""

from __future__ import annotations

import re
from typing import Any

#: ``local``, ``local[4]``, ``local[*]``, ``local[4,2]`` (cores, then retries).
_LOCAL = re.compile(r"local(?:\[(\d+|\*)(?:,\d+)?\])?$")


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect client session (``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def master(spark: Any) -> str:
    """The session's master URL (``local[2]``, ``spark://...``); empty when it cannot be read."""
    try:
        if not is_connect(spark):
            return str(spark.sparkContext.master)
        return str(spark.conf.get("spark.master", "") or "")
    except Exception:  # a server refusing the conf, a stopped session: nothing to say then
        return ""


def default_parallelism(spark: Any) -> int:
    """How many tasks a job over ``spark`` runs at once by default (at least 1).

    Classic sessions ask the ``SparkContext``. Over Spark Connect it is
    ``spark.default.parallelism`` when set, else the cores of a ``local[N]`` master, else
    ``spark.sql.shuffle.partitions`` (the session's own choice of task count).
    """
    if not is_connect(spark):
        return max(1, int(spark.sparkContext.defaultParallelism))
    conf = spark.conf
    configured = conf.get("spark.default.parallelism", None)
    if configured:
        return max(1, int(configured))
    local = _LOCAL.match(master(spark))
    if local and local.group(1) and local.group(1) != "*":
        return max(1, int(local.group(1)))
    return max(1, int(conf.get("spark.sql.shuffle.partitions", "200") or "200"))
