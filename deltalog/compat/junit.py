"""JUnit XML of a compat report, for CI.

JUnit XML of a compat report, for CI: one test suite, a test case per engine (skipped,
failed when it crashed or was required and missing) and per table version (failed when it
does not agree, with what differs).
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from deltalog.compat.model import EngineStatus, TableResult


def to_junit_xml(
    engines: list[EngineStatus], tables: list[TableResult], probes: list[dict[str, Any]]
) -> str:
    """A report as a JUnit XML document."""
    suite = ET.Element("testsuite", name="deltalog compat")
    failures = skipped = 0
    for e in engines:
        case = ET.SubElement(suite, "testcase", classname="engines", name=e.name)
        if e.failed:
            failures += 1
            ET.SubElement(case, "failure", message=f"{e.name} {e.state}").text = e.detail
        elif e.state == "skipped":
            skipped += 1
            ET.SubElement(case, "skipped", message=e.detail)
    for t in tables:
        case = ET.SubElement(suite, "testcase", classname="tables", name=t.label)
        lines = [t.problem] if t.problem else []
        lines += [f"{eng}: {o.state}: {o.detail}" for eng, o in t.outcomes.items() if o.detail]
        for d in t.differences:
            known = f" (known: {d.known})" if d.known else ""
            lines.append(f"{d.field} differs{known}")
            lines += [f"  {', '.join(names)}: {text}" for names, text in d.groups]
        if not t.agree:
            failures += 1
            ET.SubElement(case, "failure", message="engines disagree").text = "\n".join(lines)
        elif lines:
            ET.SubElement(case, "system-out").text = "\n".join(lines)
    for p in probes:
        case = ET.SubElement(suite, "testcase", classname="write-probe", name=str(p.get("table")))
        if not p.get("agree"):
            failures += 1
            text = "\n".join(str(s) for s in p.get("steps", []))
            ET.SubElement(case, "failure", message="write probe disagrees").text = text
    total = len(engines) + len(tables) + len(probes)
    suite.set("tests", str(total))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
