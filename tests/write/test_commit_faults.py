"""Acceptance: commits whose requests are applied by the server but whose replies are lost.

Each object store (S3 with conditional PUT, S3 + DynamoDB, GCS, Azure) is reached through
``servers.fault_proxy``, which fails a fraction of the requests that change the log (uploads
and deletes under ``_delta_log/``, DynamoDB ``PutItem``) **after** the server applied them: the
connection is dropped, or a 503/500 replaces the real answer. One writer appends one file per
write, each write idempotent through ``txn(app_id, i)`` and tagged with ``userMetadata`` (unique
per attempt, standing for its ``txnId``). A write that raises is re-run (same app id and
version) until it succeeds, before the next write starts.

Then, reading the log raw (``json``, not deltalog) straight from the server:

1. **raised but landed**: a write that raised, whose attempt's commit is in the log anyway: the
   caller was told it failed when it did not;
2. **duplicated**: files added more than once after the re-runs, and rows seen twice;
3. **acknowledged but missing**: a write that returned a version, whose file is not at that
   version or not live at the end.

All three must be 0. Runs twice per store: the stores' default retries, and two attempts per
request (``*.max_attempts=2``), 30% of the selected requests failed either way.
"""

from __future__ import annotations

import io
import json
import re
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scripted_http import Recorded
from servers.fault_proxy import FaultProxy, proxied_location, random_faults

from deltalog import DeltaLogError, DeltaTable
from deltalog.logstores import LogStore, open_store

WRITES = 15
FRACTION = 0.3
MAX_RERUNS = 20
APP_ID = "fault-acceptance"
SCHEMA = pa.schema([("x", pa.int64())])
ATTEMPTS_OPTION = {
    "s3": "s3.max_attempts",
    "s3_dynamodb": "s3.max_attempts",
    "gcs": "gcs.max_attempts",
    "azure": "azure.max_attempts",
}
_COMMIT = re.compile(r"^(\d{20})\.json$")


def changes_the_log(request: Recorded) -> bool:
    """An upload or delete under ``_delta_log/`` (any store), or a DynamoDB ``PutItem``."""
    if request.method not in ("PUT", "POST", "DELETE", "PATCH"):
        return False
    if (request.header("x-amz-target") or "").endswith(".PutItem"):
        return True
    # GCS names the object of an upload in the multipart body, not in the URL.
    return "_delta_log/" in urllib.parse.unquote(request.target) or (
        request.method == "POST" and b"_delta_log/" in request.body[:4096]
    )


def _parquet(i: int) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": pa.array([i], pa.int64())}), buf)
    return buf.getvalue()


def _rel(i: int) -> str:
    return f"part-{i:04d}.parquet"


@dataclass
class Run:
    """What the writer saw."""

    acknowledged: dict[str, tuple[int, int]] = field(default_factory=dict)  # token: (i, version)
    raised: dict[str, tuple[int, str]] = field(default_factory=dict)  # token: (i, error)
    reruns: int = 0


def _write(table: DeltaTable, i: int, token: str) -> int:
    """One idempotent append of ``_rel(i)``; the version that holds it."""
    tx = table.transaction("WRITE", user_metadata=token)
    tx.set_transaction(APP_ID, i)
    tx.add([_rel(i)])
    return tx.commit()


def _attempt(table: DeltaTable, run: Run, i: int, attempt: int) -> bool:
    token = f"w{i}-a{attempt}"
    try:
        run.acknowledged[token] = (i, _write(table, i, token))
    except DeltaLogError as exc:
        run.raised[token] = (i, f"{type(exc).__name__}: {exc}"[:300])
        return False
    return True


def _raw_log(store: LogStore, root: str) -> dict[int, list[dict[str, Any]]]:
    """Every commit's actions by version, parsed with ``json``."""
    out: dict[int, list[dict[str, Any]]] = {}
    for status in store.list_from(store.join(root, "_delta_log", "0")):
        m = _COMMIT.match(status.name)
        if m:
            text = store.read(status.path).decode()
            out[int(m.group(1))] = [json.loads(line) for line in text.splitlines() if line]
    return out


@pytest.fixture(params=list(ATTEMPTS_OPTION))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["default-retries", "two-attempts"])
def max_attempts(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "default-retries" else "2"


@pytest.fixture
def faulty(
    request: pytest.FixtureRequest, backend: str
) -> Iterator[tuple[dict[str, str], dict[str, str], str, FaultProxy]]:
    """(direct options, options through the proxy, table URI, proxy), on a fresh location."""
    with proxied_location(request, backend) as (direct, location, proxy):
        yield direct.options, location.options, location.uri, proxy


@pytest.mark.timeout(300)
def test_lost_replies_never_lose_duplicate_or_misreport_a_commit(
    faulty: tuple[dict[str, str], dict[str, str], str, FaultProxy],
    backend: str,
    max_attempts: str | None,
) -> None:
    direct, options, uri, proxy = faulty
    if max_attempts is not None:
        options = {**options, ATTEMPTS_OPTION[backend]: max_attempts}
    started = time.perf_counter()
    DeltaTable.create(uri, SCHEMA, storage_options=options)
    store, root = open_store(uri, options)
    for i in range(WRITES):  # data files first: only the log's requests are failed
        store.write(store.join(root, _rel(i)), _parquet(i), overwrite=True)
    table = DeltaTable(uri, storage_options=options, background_checkpoints=False)

    seed = sum(map(ord, f"{backend}/{max_attempts}"))
    proxy.rule = random_faults(FRACTION, changes_the_log, seed=seed)
    run = Run()
    for i in range(WRITES):
        if _attempt(table, run, i, 0):
            continue
        # Re-run a raised write before the next one, as a streaming sink does: a txn version
        # is a high-water mark, so once i + 1 is committed a re-run of i is (rightly) a no-op.
        for attempt in range(1, MAX_RERUNS + 1):
            run.reruns += 1
            if _attempt(table, run, i, attempt):
                break
        else:
            pytest.fail(f"write {i} still fails after {MAX_RERUNS} re-runs: {run.raised}")
    proxy.rule = None
    failed = {i for i, _ in run.raised.values()}
    injected = dict(proxy.injected)

    # The log, read raw from the server (not through the proxy).
    raw_store, raw_root = open_store(uri, direct)
    log = _raw_log(raw_store, raw_root)
    assert sorted(log) == list(range(len(log))), "commit versions are not contiguous"
    tokens = {}
    added: Counter[str] = Counter()
    for version, actions in log.items():
        for action in actions:
            if "commitInfo" in action and "userMetadata" in action["commitInfo"]:
                tokens[action["commitInfo"]["userMetadata"]] = version
            if "add" in action:
                added[action["add"]["path"]] += 1
    final = DeltaTable(uri, storage_options=direct)
    live = set(final.files().column("path").to_pylist())
    rows = Counter(final.to_pyarrow_table().column("x").to_pylist())

    # (1) A write that raised although its commit landed.
    raised_but_landed = {t: log_v for t in run.raised if (log_v := tokens.get(t)) is not None}
    # (2) Files added twice, rows seen twice.
    duplicated_files = {p: n for p, n in added.items() if n > 1}
    duplicated_rows = {x: n for x, n in rows.items() if n > 1}
    # (3) An acknowledged write whose file is not at its version, or not live.
    missing = {
        token: (i, version)
        for token, (i, version) in run.acknowledged.items()
        if _rel(i) not in live
        or not any(a.get("add", {}).get("path") == _rel(i) for a in log.get(version, []))
    }
    print(
        f"\n[{backend}, max_attempts={max_attempts or 'default'}] {WRITES} writes, "
        f"{len(run.raised)} raised ({len(failed)} writes), {run.reruns} re-runs, faults "
        f"{injected}, {proxy.forwarded} requests; raised but landed: {len(raised_but_landed)}, "
        f"duplicated files: {len(duplicated_files)}, duplicated rows: {len(duplicated_rows)}, "
        f"acknowledged but missing: {len(missing)}; {time.perf_counter() - started:.1f}s"
    )
    assert sum(injected.values()) > 0, "no fault was injected"
    assert set(live) == {_rel(i) for i in range(WRITES)}
    assert sorted(rows) == list(range(WRITES))
    assert not missing, f"acknowledged writes missing from the log: {missing}"
    assert not duplicated_files and not duplicated_rows, (
        f"duplicated: files {duplicated_files}, rows {duplicated_rows}"
    )
    assert not raised_but_landed, (
        f"{len(raised_but_landed)} writes raised although their commit landed (token: "
        f"version): {raised_but_landed}; errors: "
        f"{[run.raised[t][1] for t in raised_but_landed][:3]}"
    )
