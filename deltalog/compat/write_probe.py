"""The write probe: each engine appends to a copy, then all read it back.

``--write-probe``: on a copy of a table, each engine appends in turn and after every append
all engines read the copy back and must agree.

The copy is a local directory (a table elsewhere is copied through deltalog's storage is not
supported: the probe says so). Each append writes one row - the first live row as deltalog
reads it - so it fits any schema; an engine that cannot write the table (a known limitation or
not) is named in the steps.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from deltalog.compat.engines import EngineRun, run_engine

#: Reads a table with the given engines: whether they agree, and lines on what differs.
ReadBack = Callable[[str, list[str]], tuple[bool, list[str]]]


def _local(uri: str) -> Path | None:
    if uri.startswith("file://"):
        uri = uri[len("file://") :]
    return Path(uri) if "://" not in uri else None


def run_write_probe(
    uri: str,
    runs: Sequence[EngineRun],
    read_back: ReadBack,
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run the probe on a copy of ``uri`` with the engines that ran; its steps and verdict."""
    source = _local(uri)
    if source is None or not source.is_dir():
        return {"table": uri, "agree": False, "steps": ["only local tables can be copied"]}
    ran = [r.engine for r in runs if r.crash is None]
    steps: list[str] = []
    agree = True
    with tempfile.TemporaryDirectory(prefix="deltalog-write-probe-") as work:
        copy = Path(work) / "table"
        shutil.copytree(source, copy)
        for writer in ran:
            if not writer.can_append:
                steps.append(f"{writer.name}: its probe does not append (it reads back only)")
                continue
            done = run_engine(writer, [{"uri": str(copy), "append": True}], storage_options)
            entry = done.results[0] if done.results else {}
            if done.crash or "error" in entry:
                why = done.crash or f"{entry['error']['type']}: {entry['error']['message']}"
                steps.append(f"{writer.name} append: refused: {why}")
                agree = False
                continue
            agreed, lines = read_back(str(copy), [e.name for e in ran])
            verdict = "all engines agree" if agreed else "engines DISAGREE"
            steps.append(f"{writer.name} appended version {entry.get('version')}: {verdict}")
            steps += [f"  {line}" for line in lines]
            agree = agree and agreed
    return {"table": uri, "agree": agree, "steps": steps}
