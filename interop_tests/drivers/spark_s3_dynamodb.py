"""A delta-spark driver whose ``s3a://`` log store is ``S3DynamoDBLogStore``, in its own process.

``python spark_s3_dynamodb.py CONF_JSON``: starts one local session with the settings in
``CONF_JSON`` (see ``interop_tests/s3_dynamodb_spark.py``), answers ``{"ready": ...}``, then
runs commands, one JSON object a line on stdin, and answers each with one JSON line on stdout
prefixed ``@@ `` (Spark and Ivy print to stdout too):

``{"op": "read", "uri": U}``
    a fresh snapshot (the DeltaLog cache cleared, so the log is listed, which finishes an
    incomplete latest DynamoDB entry): ``{"version", "files", "rows": [[x, p], ...]}``;
``{"op": "append", "uri": U, "x": X, "p": P}``
    one ``INSERT``: ``{"ok": true}``;
``{"op": "race", "uri": U, "threads": T, "appends": A, "ratio": R}``
    T threads append A rows each (``x = 100000 + 1000 * t + seq``, ``p = "s<t>"``) at once.
    The n-th append to start (n = 0, 1, ...) first waits until the other engine has made
    ``R * (n - 1)`` commit attempts, which the caller reports with ``{"op": "progress", "n":
    N}`` lines meanwhile, so that both engines commit at the same time whatever their speeds.
    Each append sends ``{"event": "landed", "thread", "seq", "x", "p"}`` or ``{"event":
    "failed", ...}`` as it ends; the answer is ``{"landed": K, "failed": F, "seconds": S}``;
``{"op": "stop"}``
    stops the session and exits.

A command that fails is answered ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
import traceback
from typing import Any

from pyspark.sql import SparkSession

GATE_TIMEOUT = 600.0
_out_lock = threading.Lock()


def emit(message: dict[str, Any]) -> None:
    with _out_lock:
        sys.stdout.write("@@ " + json.dumps(message) + "\n")
        sys.stdout.flush()


class Gate:
    """How many commit attempts the other engine has made, as the caller reports them."""

    def __init__(self) -> None:
        self.done = 0
        self.cond = threading.Condition()

    def update(self, n: int) -> None:
        with self.cond:
            self.done = max(self.done, n)
            self.cond.notify_all()

    def wait(self, at_least: int) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.done >= at_least, timeout=GATE_TIMEOUT):
                raise TimeoutError(f"the other engine made {self.done} of {at_least} attempts")


def start(conf: dict[str, str]) -> Any:
    builder = SparkSession.builder.master("local[2]").appName("s3-dynamodb-driver")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read(spark: Any, uri: str) -> dict[str, Any]:
    delta_log = spark._jvm.org.apache.spark.sql.delta.DeltaLog
    delta_log.clearCache()
    snapshot = delta_log.forTable(spark._jsparkSession, uri).unsafeVolatileSnapshot()
    version = int(snapshot.version())
    files = sorted(str(r.getAs("path")) for r in snapshot.allFiles().toDF().collectAsList())
    frame = spark.read.format("delta").option("versionAsOf", version).load(uri)
    rows = sorted([int(r["x"]), str(r["p"])] for r in frame.select("x", "p").collect())
    return {"version": version, "files": files, "rows": rows}


def append(spark: Any, uri: str, x: int, p: str) -> None:
    spark.sql(f"INSERT INTO delta.`{uri}` (x, p) VALUES ({int(x)}, '{p}')")


def race(spark: Any, gate: Gate, command: dict[str, Any]) -> dict[str, Any]:
    uri, threads, appends = command["uri"], command["threads"], command["appends"]
    ratio = command["ratio"]
    tickets = iter(range(threads * appends))
    ticket_lock = threading.Lock()
    counts = {"landed": 0, "failed": 0}

    def work(t: int) -> None:
        for seq in range(appends):
            with ticket_lock:
                n = next(tickets)
            x, p = 100000 + 1000 * t + seq, f"s{t}"
            try:
                gate.wait(ratio * (n - 1))
                append(spark, uri, x, p)
            except Exception as exc:  # reported; the caller counts it as a lost attempt
                with ticket_lock:
                    counts["failed"] += 1
                emit({"event": "failed", "thread": t, "seq": seq, "error": repr(exc)[:2000]})
                continue
            with ticket_lock:
                counts["landed"] += 1
            emit({"event": "landed", "thread": t, "seq": seq, "x": x, "p": p})

    started = time.perf_counter()
    workers = [threading.Thread(target=work, args=(t,), name=f"append-{t}") for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return {**counts, "seconds": time.perf_counter() - started}


def main() -> None:
    with open(sys.argv[1]) as f:
        conf = json.load(f)
    started = time.perf_counter()
    spark = start(conf)
    emit({"ready": True, "seconds": time.perf_counter() - started})
    gate = Gate()
    commands: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def read_stdin() -> None:  # progress reports are handled at once, even during a race
        for line in sys.stdin:
            command = json.loads(line)
            if command["op"] == "progress":
                gate.update(command["n"])
            else:
                commands.put(command)
        commands.put(None)

    threading.Thread(target=read_stdin, name="stdin", daemon=True).start()
    while True:
        command = commands.get()
        if command is None or command["op"] == "stop":
            break
        try:
            if command["op"] == "read":
                answer = read(spark, command["uri"])
            elif command["op"] == "append":
                append(spark, command["uri"], command["x"], command["p"])
                answer = {"ok": True}
            elif command["op"] == "race":
                answer = race(spark, gate, command)
            else:
                answer = {"error": f"unknown command {command['op']!r}"}
        except Exception:
            answer = {"error": traceback.format_exc()[-4000:]}
        emit(answer)
    spark.stop()


if __name__ == "__main__":
    main()
