"""The probe process of the Python engines: ``python -m deltalog.compat.probe_main REQ OUT``.

``REQ`` is a JSON request (``engine``: ``deltalog`` or ``delta-rs``; ``tables``: a list of
``{"uri", "versions"}`` where a version ``null`` is the latest; ``storage_options``); the
results go to the file ``OUT`` (not stdout, which the engines may write to): ``{"results":
[...]}``, one ``{"table", "version", "observation"}`` or ``{"table", "version", "error":
{"type", "message"}}`` per table version. An engine's exception for one version is that
version's refusal; a crash of the process is seen by the caller (:mod:`deltalog.compat.engines`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

Observer = Callable[[str, "int | None", "Mapping[str, str] | None"], dict[str, Any]]


def error_of(exc: BaseException) -> dict[str, str]:
    """An exception as a refusal: its type's name and the first lines of its message."""
    text = re.split(r"\s0: (?:<unknown>|\w)", str(exc))[0]  # no Rust backtrace
    message = " ".join(text.split())[:600] or type(exc).__name__
    return {"type": type(exc).__name__, "message": message}


def _observer(engine: str) -> Observer:
    from deltalog.compat import observe

    if engine == "deltalog":
        return observe.observe_deltalog
    if engine == "delta-rs":
        return observe.observe_delta_rs
    raise SystemExit(f"unknown engine {engine!r}")


def run(request: Mapping[str, Any]) -> dict[str, Any]:
    """Observe every table version of ``request``; never raises for one version's failure."""
    observe = _observer(str(request["engine"]))
    options = request.get("storage_options") or None
    results: list[dict[str, Any]] = []
    for table in request["tables"]:
        if table.get("append"):
            results.append(_append(str(request["engine"]), table["uri"], options))
            continue
        for version in table.get("versions") or [None]:
            entry: dict[str, Any] = {"table": table["uri"], "version": version}
            try:
                entry["observation"] = observe(table["uri"], version, options)
            except Exception as exc:
                entry["error"] = error_of(exc)
            results.append(entry)
    return {"results": results}


def _append(engine: str, uri: str, options: Mapping[str, str] | None) -> dict[str, Any]:
    """Append the table's first live row through ``engine`` (the write probe's step)."""
    entry: dict[str, Any] = {"table": uri, "append": True}
    try:
        from deltalog.table import DeltaTable

        row = DeltaTable(uri, storage_options=dict(options or {})).to_pyarrow_table().slice(0, 1)
        if engine == "deltalog":
            from deltalog.writer.api import write_table

            entry["version"] = write_table(uri, row, mode="append", storage_options=options).version
        elif engine == "delta-rs":
            from deltalake import DeltaTable as RsTable
            from deltalake import write_deltalake

            write_deltalake(uri, row, mode="append", storage_options=dict(options or {}) or None)
            entry["version"] = RsTable(uri, storage_options=dict(options or {}) or None).version()
        else:
            raise ValueError(f"no append for {engine}")
    except Exception as exc:
        entry["error"] = error_of(exc)
    return entry


def main(argv: list[str]) -> int:
    """Read the request file, write the results file."""
    request = orjson.loads(Path(argv[0]).read_bytes())
    Path(argv[1]).write_bytes(orjson.dumps(run(request), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
