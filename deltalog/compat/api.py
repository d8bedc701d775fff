"""``deltalog.compat.compare``: ask every engine about tables and diff what they say."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from deltalog.compat.diff import compare_observations
from deltalog.compat.engines import Engine, EngineRun, run_engine
from deltalog.compat.model import EngineStatus, Outcome, TableResult
from deltalog.compat.registry import builtin_engines
from deltalog.compat.report import CompatReport

Versions = str | Iterable[int] | None


def _engines(engines: Iterable[str | Engine] | None, require: Iterable[str]) -> list[Engine]:
    known = builtin_engines()
    wanted: list[str | Engine] = list(engines) if engines is not None else list(known)
    for name in require:
        if name not in [w if isinstance(w, str) else w.name for w in wanted]:
            wanted.append(name)
    out: list[Engine] = []
    for item in wanted:
        if isinstance(item, Engine):
            out.append(item)
        elif item in known:
            out.append(known[item])
        else:
            from deltalog.errors import InvalidInputError

            raise InvalidInputError(f"unknown engine {item!r}: the engines are {', '.join(known)}")
    return out


def _latest(
    uri: str, storage_options: Mapping[str, str] | None
) -> tuple[int | None, set[str], str | None]:
    """The latest version and table features by deltalog.

    The latest version and table features by deltalog, or why the path is no table
    (nothing if deltalog merely cannot open it: the other engines may).
    """
    from deltalog.errors import DeltaLogError, TableNotFoundError
    from deltalog.table import DeltaTable

    try:
        table = DeltaTable(uri, storage_options=dict(storage_options or {}))
        p = table.protocol()
        features = set(p.reader_features or []) | set(p.writer_features or [])
        return table.version(), features, None
    except TableNotFoundError as exc:
        return None, set(), f"not a Delta table: {exc}"
    except DeltaLogError:
        return None, set(), None


def _versions(versions: Versions, latest: int | None) -> list[int | None]:
    if versions is None:
        return [None]
    if isinstance(versions, str):
        if versions != "all":
            from deltalog.errors import InvalidInputError

            raise InvalidInputError(f"versions must be 'all' or version numbers: {versions!r}")
        return [None] if latest is None else [*range(latest), None]
    older = sorted({v for v in versions if latest is None or v < latest})
    return [*older, None]


def compare(
    uri: str | Sequence[str],
    engines: Iterable[str | Engine] | None = None,
    require: Iterable[str] = (),
    versions: Versions = None,
    write_probe: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> CompatReport:
    """Ask every engine about one table (or several) and say where they disagree.

    Each engine runs once, in its own process, over all the tables; an engine that is not
    installed is skipped with a line saying how to get it (a failure when it is in
    ``require``); one that crashes is named in the report, as is a table version an engine
    refuses (a refusal listed in :data:`deltalog.compat.limits.KNOWN` is known, not a
    disagreement).

    Args:
        uri: A table URI or path, or a list of them.
        engines: Engine names (``deltalog``, ``delta-rs``, ``delta-spark``, ``kernel``) or
            :class:`~deltalog.compat.engines.Engine` objects; default: every built-in one.
        require: Engines that must run: a missing one fails the report.
        versions: Also compare these older versions (``"all"``: every version).
        write_probe: On a copy of each table, let each engine append in turn and every
            engine read the copy back (see :mod:`deltalog.compat.write_probe`).
        storage_options: Passed to every engine.

    Returns:
        The report; ``report.agree`` is the verdict.

    Raises:
        InvalidInputError: An unknown engine name or ``versions`` value.
    """
    uris = [uri] if isinstance(uri, str) else list(uri)
    chosen = _engines(engines, require)
    required = set(require)
    results: list[TableResult] = []
    requests: list[dict[str, Any]] = []
    features: dict[str, set[str]] = {}
    for u in uris:
        latest, features[u], problem = _latest(u, storage_options)
        if problem is not None:
            results.append(TableResult(u, None, problem=problem))
            continue
        wanted = _versions(versions, latest)
        requests.append({"uri": u, "versions": wanted})
        results.extend(TableResult(u, v) for v in wanted)
    statuses: list[EngineStatus] = []
    available = []
    for engine in chosen:
        why = engine.unavailable()
        if why is not None:
            statuses.append(EngineStatus(engine.name, "skipped", why, engine.name in required))
        else:
            available.append(engine)
    # The engines run side by side: each is its own process, mostly waiting on a JVM or I/O.
    with ThreadPoolExecutor(max_workers=max(1, len(available))) as pool:
        runs = list(
            pool.map(
                lambda e: run_engine(e, requests, storage_options) if requests else EngineRun(e),
                available,
            )
        )
    for run in runs:
        engine = run.engine
        state, detail = ("crashed", run.crash) if run.crash else ("ran", engine.describe())
        statuses.append(EngineStatus(engine.name, state, detail, engine.name in required))
    order = [e.name for e in chosen]
    statuses.sort(key=lambda s: order.index(s.name))
    for result in results:
        if result.problem is not None:
            continue
        raw: dict[str, dict[str, Any]] = {}
        refusals: dict[str, str] = {}
        for run in runs:
            if run.crash is not None:
                continue
            entry = next(
                (
                    r
                    for r in run.results
                    if r.get("table") == result.table and r.get("version") == result.version
                ),
                None,
            )
            if entry is None:
                refusals[run.engine.name] = "no result for this table version"
            elif "observation" in entry:
                raw[run.engine.name] = entry["observation"]
            else:
                err = entry.get("error") or {}
                refusals[run.engine.name] = f"{err.get('type', 'Error')}: {err.get('message', '')}"
        compare_observations(result, raw, refusals, features.get(result.table, ()))
        for run in runs:
            if run.crash is not None:
                result.outcomes[run.engine.name] = Outcome("crashed", run.crash)
    report = CompatReport(statuses, results)
    if write_probe:
        from deltalog.compat.write_probe import run_write_probe

        def read_back(copy: str, names: list[str]) -> tuple[bool, list[str]]:
            engines_by_name = {e.name: e for e in chosen}
            again = compare(copy, [engines_by_name[n] for n in names], (), None, False, options)
            lines = [
                f"{d.field} differs: {d.groups}"
                for t in again.tables
                for d in t.differences
                if d.known is None
            ]
            lines += [
                f"{e}: {o.state}: {o.detail}"
                for t in again.tables
                for e, o in t.outcomes.items()
                if o.state != "ok"
            ]
            return again.agree, lines

        options = storage_options
        report.write_probe = [
            run_write_probe(r["uri"], runs, read_back, storage_options) for r in requests
        ]
    return report
