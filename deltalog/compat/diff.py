"""The diff: per table version, which engines saw what, and where they part.

Observations are normalised first (:func:`normalise`: file paths relative and decoded,
partition values as normalised protocol strings, files sorted) so that only real differences
remain. Values of a field are grouped by equality; more than one group is a
:class:`~deltalog.compat.model.Difference`. A field an engine does not report (absent key) is
left out for that engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from deltalog.compat.canon import partition_values
from deltalog.compat.limits import KNOWN, Limitation, explain, explain_difference
from deltalog.compat.model import FIELDS, Difference, Outcome, TableResult
from deltalog.compat.observe import relative_path

_SHOWN = 3


def normalise(observation: Mapping[str, Any], table: str) -> dict[str, Any]:
    """``observation`` in comparable form (see the module docstring)."""
    out = dict(observation)
    schema = out.get("schema")
    out.pop("pathEncoding", None)  # written by older probes
    if isinstance(out.get("files"), list):
        files = [
            {
                "path": relative_path(str(f["path"]), table),
                "size": int(f["size"]),
                "partitionValues": partition_values(
                    f.get("partitionValues") or {}, schema if isinstance(schema, dict) else None
                ),
            }
            for f in out["files"]
        ]
        out["files"] = sorted(files, key=lambda f: f["path"])
    if isinstance(out.get("configuration"), dict):
        out["configuration"] = {
            str(k): None if v is None else str(v) for k, v in sorted(out["configuration"].items())
        }
    return out


def _key(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)


def _short(value: Any, limit: int = 160) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _names(items: Iterable[str]) -> str:
    items = sorted(items)
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else "")


def _describe_files(value: Any, reference: Any) -> str:
    mine = {f["path"]: f for f in value}
    theirs = {f["path"]: f for f in reference}
    parts = [f"{len(mine)} files, {sum(f['size'] for f in value):,} bytes"]
    if missing := set(theirs) - set(mine):
        parts.append(f"lacks {_names(missing)}")
    if extra := set(mine) - set(theirs):
        parts.append(f"has {_names(extra)}")
    sizes = [p for p in set(mine) & set(theirs) if mine[p]["size"] != theirs[p]["size"]]
    if sizes:
        parts.append(f"other sizes for {_names(sizes)}")
    values = [
        p
        for p in set(mine) & set(theirs)
        if mine[p]["partitionValues"] != theirs[p]["partitionValues"]
    ]
    if values:
        p = sorted(values)[0]
        parts.append(f"partition values of {p}: {_short(mine[p]['partitionValues'], 80)}")
    return "; ".join(parts)


def _describe_columns(value: Any, reference: Any) -> str:
    differing = sorted(
        name for name in set(value) | set(reference) if value.get(name) != reference.get(name)
    )
    if not differing:
        return _short(value)
    return "; ".join(f"{n}: {_short(value.get(n), 70)}" for n in differing[:_SHOWN])


def describe(field: str, value: Any, reference: Any) -> str:
    """What one group saw of ``field``, told against the reference group's value."""
    if field == "files" and isinstance(value, list) and isinstance(reference, list):
        return _describe_files(value, reference)
    if field == "columns" and isinstance(value, dict) and isinstance(reference, dict):
        return _describe_columns(value, reference)
    if field == "history" and isinstance(value, list) and isinstance(reference, list):
        mine = {_key(e): e for e in value}
        theirs = {_key(e) for e in reference}
        odd = [e for k, e in mine.items() if k not in theirs]
        return f"{len(value)} commits" + (f"; {_short(odd[:_SHOWN], 200)}" if odd else "")
    return _short(value)


def _features(observations: Mapping[str, Mapping[str, Any]]) -> set[str]:
    out: set[str] = set()
    for obs in observations.values():
        protocol = obs.get("protocol") or {}
        out |= set(protocol.get("readerFeatures") or []) | set(protocol.get("writerFeatures") or [])
    return out


def compare_observations(
    result: TableResult,
    raw: Mapping[str, Mapping[str, Any]],
    refusals: Mapping[str, str],
    extra_features: Iterable[str] = (),
    known: Iterable[Limitation] = KNOWN,
) -> TableResult:
    """Fill ``result``'s outcomes and differences.

    Fill ``result``'s outcomes and differences from the engines' observations and
    refusals (engine -> message).
    """
    known = tuple(known)
    observations = {e: normalise(o, result.table) for e, o in raw.items()}
    result.observations = observations
    features = _features(observations) | set(extra_features)
    for engine in observations:
        result.outcomes[engine] = Outcome("ok")
    for engine, message in refusals.items():
        limitation = explain(engine, features, message, known)
        if limitation is not None:
            result.outcomes[engine] = Outcome("known", f"{limitation.reason} ({message})")
        else:
            result.outcomes[engine] = Outcome("refused", message)
    for field in FIELDS:
        seen = {e: o[field] for e, o in observations.items() if field in o}
        groups: dict[bytes, list[str]] = {}
        for engine, value in seen.items():
            groups.setdefault(_key(value), []).append(engine)
        if len(groups) < 2:
            continue
        ordered = sorted(groups.values(), key=lambda names: (-len(names), names))
        reference = seen[ordered[0][0]]
        described = [(names, describe(field, seen[names[0]], reference)) for names in ordered]
        why = None
        if len(ordered) == 2:  # one engine apart from the rest: is that a listed limitation?
            for alone, rest in ((ordered[0], ordered[1]), (ordered[1], ordered[0])):
                if len(alone) != 1:
                    continue
                limitation = explain_difference(
                    alone[0], features, field, seen[alone[0]], seen[rest[0]], known, raw
                )
                if limitation is not None:
                    why = limitation.reason
        result.differences.append(Difference(field, described, why))
    return result
