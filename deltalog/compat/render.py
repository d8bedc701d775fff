"""Text and JSON renderings of a :class:`~deltalog.compat.report.CompatReport`."""

from __future__ import annotations

from typing import Any

from deltalog.compat.model import EngineStatus, TableResult, exit_code, overall_agree


def _table_json(t: TableResult, observations: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "table": t.table,
        "version": t.version,
        "agree": t.agree,
        "problem": t.problem,
        "outcomes": {e: {"state": o.state, "detail": o.detail} for e, o in t.outcomes.items()},
        "differences": [
            {
                "field": d.field,
                "known": d.known,
                "groups": [{"engines": names, "saw": text} for names, text in d.groups],
            }
            for d in t.differences
        ],
    }
    if observations:
        doc["observations"] = t.observations
    return doc


def to_json(
    engines: list[EngineStatus],
    tables: list[TableResult],
    probes: list[dict[str, Any]],
    observations: bool = False,
) -> dict[str, Any]:
    """A report as a JSON-ready dict; ``observations`` adds every engine's full view."""
    return {
        "agree": overall_agree(engines, tables, probes),
        "exit_code": exit_code(engines, tables, probes),
        "engines": [
            {"name": e.name, "state": e.state, "detail": e.detail, "required": e.required}
            for e in engines
        ],
        "tables": [_table_json(t, observations) for t in tables],
        "write_probe": probes,
    }


def _verdict(t: TableResult) -> str:
    if t.problem:
        return "PROBLEM"
    if not t.agree:
        return "DISAGREE"
    if t.outcomes and all(o.state == "refused" for o in t.outcomes.values()):
        return "AGREE (every engine refuses it)"
    known = any(o.state == "known" for o in t.outcomes.values()) or t.differences
    return "AGREE (known limitations)" if known else "AGREE"


def render_text(
    engines: list[EngineStatus], tables: list[TableResult], probes: list[dict[str, Any]]
) -> str:
    """Aligned text: the engines, then each table version's verdict and what differs."""
    lines = ["engines:"]
    width = max((len(e.name) for e in engines), default=0)
    for e in engines:
        mark = {"ran": "ran    ", "skipped": "SKIPPED", "crashed": "CRASHED"}.get(e.state, e.state)
        req = " (required)" if e.required and e.state != "ran" else ""
        lines.append(f"  {e.name:<{width}}  {mark}{req}  {e.detail}")
    lines.append("")
    for t in tables:
        lines.append(f"{t.label}: {_verdict(t)}")
        if t.problem:
            lines.append(f"  {t.problem}")
        for engine, o in t.outcomes.items():
            if o.state != "ok":
                lines.append(f"  {engine}: {o.state}: {o.detail}")
        for d in t.differences:
            tag = f" (known: {d.known})" if d.known else ""
            lines.append(f"  {d.field} differs{tag}:")
            for names, text in d.groups:
                lines.append(f"    {', '.join(names)}: {text}")
    for p in probes:
        lines.append(f"write probe {p.get('table')}: {'AGREE' if p.get('agree') else 'DISAGREE'}")
        lines.extend(f"  {step}" for step in p.get("steps", []))
    agreeing = sum(t.agree for t in tables)
    lines.append("")
    lines.append(
        f"{agreeing} of {len(tables)} table versions agree; "
        + ("all engines agree" if overall_agree(engines, tables, probes) else "engines DISAGREE")
    )
    return "\n".join(lines)
